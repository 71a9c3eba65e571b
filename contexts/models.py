from __future__ import annotations

from django.db import models
from django.db.models import Q

from contextsvc.core.models import Team, VolumeStatus, default_team_pk


class ContextType(models.TextChoices):
    WORKSPACE = "workspace", "Workspace"
    MEMORY = "memory", "Memory"
    KNOWLEDGE = "knowledge", "Knowledge"
    ARTIFACTS = "artifacts", "Artifacts"


class ContextResource(models.Model):
    """A named PVC-backed context (``/v1/contexts``)."""

    Status = VolumeStatus

    # 50 for the contract's contexts; an allocation's retained artifacts are
    # "<pool>-artifacts" (up to 60).
    name = models.CharField(max_length=63)
    namespace = models.CharField(max_length=63)
    type = models.CharField(max_length=16, choices=ContextType.choices)
    size = models.CharField(max_length=64)
    access_mode = models.CharField(max_length=16)
    storage_class = models.CharField(max_length=253, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROVISIONING)
    message = models.TextField(blank=True)
    requester = models.CharField(max_length=200)
    # The requester's team (an allocation's kept artifacts: the allocation's): only it and
    # admins see and delete the context.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="contexts", default=default_team_pk
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table was created while named contexts were part of allocations; it kept its
        # name when the model moved (migrations/0001_initial.py).
        db_table = "allocations_contextresource"
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=~Q(status="deleted"),
                name="context_active_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

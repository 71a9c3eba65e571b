"""Agent workspaces (seed 001): the shared ReadWriteMany PVC of each agent type and the
A2A contexts whose directories live on it."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from contextsvc.core.models import Team, VolumeStatus, default_team_pk
from contextsvc.kube.objects.names import agent_workspace_pvc_name


class AgentWorkspace(models.Model):
    """The shared ReadWriteMany PVC of one agent type in one namespace (seed 001): every
    replica mounts it at /workspace, with a subdirectory per A2A context id."""

    Status = VolumeStatus

    agent_type = models.CharField(max_length=54)
    namespace = models.CharField(max_length=63)
    storage_class = models.CharField(max_length=253, blank=True)
    initial_size = models.CharField(max_length=64)
    max_size = models.CharField(max_length=64)
    requested_bytes = models.BigIntegerField(help_text="The PVC's current storage request.")
    capacity_bytes = models.BigIntegerField(null=True, blank=True, help_text="As the PVC reports.")
    usage_bytes = models.BigIntegerField(null=True, blank=True, help_text="As the agents report.")
    usage_reported_at = models.DateTimeField(null=True, blank=True)
    expansion_note = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROVISIONING)
    message = models.TextField(blank=True)
    adopted = models.BooleanField(default=False)
    created_by = models.CharField(max_length=200)
    # The team of whoever ensured it first: only it (and admins) reaches the workspace and
    # its contexts; another team's ensure of the same agent type is the 409 of a name taken.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="agent_workspaces", default=default_team_pk
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The tables were created while agent workspaces were part of allocations; they
        # kept their names when the models moved (migrations/0001_initial.py).
        db_table = "allocations_agentworkspace"
        ordering = ["namespace", "agent_type"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "agent_type"],
                condition=~Q(status="deleted"),
                name="workspace_active_agent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.agent_type}"

    @property
    def pvc_name(self) -> str:
        return agent_workspace_pvc_name(self.agent_type)


class WorkspaceContext(models.Model):
    """One A2A context id's directory on an agent workspace: /workspace/<context id>."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        EXPIRING = "expiring", "Being cleaned up"
        EXPIRED = "expired", "Expired"

    workspace = models.ForeignKey(AgentWorkspace, on_delete=models.CASCADE, related_name="contexts")
    context_id = models.CharField(max_length=253)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField()
    last_accessed_at = models.DateTimeField()
    ttl_seconds = models.PositiveIntegerField()
    disk_usage_bytes = models.BigIntegerField(default=0)
    cleanup_job = models.CharField(max_length=63, blank=True)
    cleanup_result = models.TextField(blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "allocations_workspacecontext"
        ordering = ["-last_accessed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "context_id"], name="context_once_per_workspace"
            )
        ]
        indexes = [models.Index(fields=["status", "last_accessed_at"], name="context_expiry")]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.context_id}"

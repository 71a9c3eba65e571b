from __future__ import annotations

from django.db import models
from django.db.models import Q


class Strategy(models.TextChoices):
    DEDICATED = "dedicated", "Dedicated RWO PVC per sandbox"
    SHARED = "shared", "One shared RWX PVC"
    EXISTING = "existing", "Existing PVC"
    WARMPOOL = "warmpool", "Warm-pool claims"


class Phase(models.TextChoices):
    REQUESTED = "requested", "Requested"
    PROVISIONING = "provisioning", "Provisioning"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    RELEASING = "releasing", "Releasing"
    RELEASED = "released", "Released"


# Phases in which an allocation still holds its name and (maybe) cluster objects.
ACTIVE_PHASES = (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY, Phase.FAILED, Phase.RELEASING)
# Phases the v1 API shows; a releasing allocation is already gone for its caller.
VISIBLE_PHASES = (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY, Phase.FAILED)
# Phases in which readiness observations still change the phase.
OBSERVED_PHASES = (Phase.PROVISIONING, Phase.READY)


class Allocation(models.Model):
    """A sandbox pool: desired state from the caller, observed state from the cluster."""

    # Desired state
    name = models.CharField(max_length=50)
    namespace = models.CharField(max_length=63)
    replicas = models.PositiveSmallIntegerField()
    strategy = models.CharField(max_length=16, choices=Strategy.choices)
    workspace_size = models.CharField(max_length=64, blank=True)
    workspace_access_mode = models.CharField(max_length=16, blank=True)
    workspace_storage_class = models.CharField(max_length=253, blank=True)
    claim_name = models.CharField(max_length=253, blank=True)
    read_only = models.BooleanField(null=True, blank=True)
    warm_pool = models.CharField(max_length=253, blank=True)
    profile = models.ForeignKey(
        "profiles.SandboxProfile",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="allocations",
    )
    # The profile's name and blueprint as they were when the allocation was made: a later
    # edit of the profile never changes the Sandboxes of an existing allocation.
    profile_name = models.CharField(max_length=63, blank=True)
    blueprint = models.JSONField(default=dict, blank=True)
    requester = models.CharField(max_length=200, help_text="api:CLIENT or user:NAME")

    # Observed state
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.REQUESTED)
    ready_replicas = models.PositiveSmallIntegerField(default=0)
    reason = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    provisioned_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    release_requested_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    reconcile_attempts = models.PositiveIntegerField(default=0)
    adopted = models.BooleanField(default=False)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            # A name identifies one allocation until its objects are gone.
            models.UniqueConstraint(
                fields=["name"], condition=~Q(phase="released"), name="allocation_active_name"
            ),
            models.CheckConstraint(
                condition=Q(replicas__gte=1) & Q(replicas__lte=100), name="allocation_replicas"
            ),
        ]
        indexes = [
            models.Index(fields=["phase", "-requested_at"], name="allocation_phase"),
            models.Index(fields=["namespace", "name"], name="allocation_ns_name"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def selector(self) -> str:
        from contextsvc.kube.objects import pool_selector

        return pool_selector(self.name)


class AllocationEvent(models.Model):
    """One line of an allocation's timeline (created, applied, replica ready, failed…)."""

    class Kind(models.TextChoices):
        CREATED = "created", "Created"
        ADOPTED = "adopted", "Adopted"
        APPLIED = "applied", "Objects applied"
        RETRY = "retry", "Retrying"
        REPLICAS = "replicas", "Ready replicas changed"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        ROLLED_BACK = "rolled_back", "Rolled back"
        RELEASING = "releasing", "Release requested"
        RELEASED = "released", "Released"

    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.allocation_id} {self.kind}"


class ContextType(models.TextChoices):
    WORKSPACE = "workspace", "Workspace"
    MEMORY = "memory", "Memory"
    KNOWLEDGE = "knowledge", "Knowledge"
    ARTIFACTS = "artifacts", "Artifacts"


class ContextResource(models.Model):
    """A named PVC-backed context (``/v1/contexts``)."""

    class Status(models.TextChoices):
        PROVISIONING = "provisioning", "Provisioning"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        DELETING = "deleting", "Deleting"
        DELETED = "deleted", "Deleted"

    name = models.CharField(max_length=50)
    namespace = models.CharField(max_length=63)
    type = models.CharField(max_length=16, choices=ContextType.choices)
    size = models.CharField(max_length=64)
    access_mode = models.CharField(max_length=16)
    storage_class = models.CharField(max_length=253, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROVISIONING)
    message = models.TextField(blank=True)
    requester = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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


class AgentWorkspace(models.Model):
    """The shared ReadWriteMany PVC of one agent type in one namespace (seed 001): every
    replica mounts it at /workspace, with a subdirectory per A2A context id."""

    class Status(models.TextChoices):
        PROVISIONING = "provisioning", "Provisioning"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        DELETING = "deleting", "Deleting"
        DELETED = "deleted", "Deleted"

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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
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
        from contextsvc.kube.objects import agent_workspace_pvc_name

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
        ordering = ["-last_accessed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "context_id"], name="context_once_per_workspace"
            )
        ]
        indexes = [models.Index(fields=["status", "last_accessed_at"], name="context_expiry")]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.context_id}"

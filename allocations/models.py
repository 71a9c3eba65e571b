from __future__ import annotations

from django.db import models
from django.db.models import Q

from contextsvc.core.models import Team, default_team_pk
from contextsvc.kube.objects.labels import pool_selector


class Strategy(models.TextChoices):
    DEDICATED = "dedicated", "Dedicated RWO PVC per sandbox"
    SHARED = "shared", "One shared RWX PVC"
    EXISTING = "existing", "Existing PVC"
    WARMPOOL = "warmpool", "Warm-pool claims"


class Phase(models.TextChoices):
    REQUESTED = "requested", "Requested"
    PROVISIONING = "provisioning", "Provisioning"
    READY = "ready", "Ready"
    SUSPENDED = "suspended", "Suspended"
    FAILED = "failed", "Failed"
    RELEASING = "releasing", "Releasing"
    RELEASED = "released", "Released"


# Phases in which an allocation still holds its name and (maybe) cluster objects.
ACTIVE_PHASES = (
    Phase.REQUESTED,
    Phase.PROVISIONING,
    Phase.READY,
    Phase.SUSPENDED,
    Phase.FAILED,
    Phase.RELEASING,
)
# Phases the v1 API shows; a releasing allocation is already gone for its caller.
VISIBLE_PHASES = (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY, Phase.SUSPENDED, Phase.FAILED)
# Phases whose objects the reconcile keeps as the row wants them (created, patched, pruned).
RECONCILED_PHASES = (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY, Phase.SUSPENDED)
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
        # A profile cannot be deleted while an allocation that is not released uses it
        # (the database says so, without a check-then-act race); a released allocation
        # lets go of it (services/release.allocation_mark_released) and keeps its name below.
        on_delete=models.PROTECT,
        related_name="allocations",
    )
    # The profile's name and blueprint as they were when the allocation was made: a later
    # edit of the profile never changes the Sandboxes of an existing allocation.
    profile_name = models.CharField(max_length=63, blank=True)
    blueprint = models.JSONField(default=dict, blank=True)
    requester = models.CharField(max_length=200, help_text="api:CLIENT or user:NAME")
    # The requester's team: only it (and admins) sees and changes the pool, and its quotas
    # count the pool's sandboxes and storage.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="allocations", default=default_team_pk
    )
    # What the team's storage quota counts: the bytes the pool's own PVCs request
    # (kube.objects.pvc.requested_storage), kept with the replicas that decide it.
    requested_storage = models.PositiveBigIntegerField(default=0)
    # Lifecycle (v1 additions): released by the service at expires_at; Sandboxes scaled to
    # no Pods while suspended (their PVCs kept).
    expires_at = models.DateTimeField(null=True, blank=True)
    suspended = models.BooleanField(default=False)
    # An artifacts PVC next to the workspace, mounted at /artifacts in every Sandbox; with
    # retain it outlives the release as a named context (type artifacts).
    artifacts_size = models.CharField(max_length=64, blank=True)
    artifacts_access_mode = models.CharField(max_length=16, blank=True)
    artifacts_storage_class = models.CharField(max_length=253, blank=True)
    artifacts_retain = models.BooleanField(default=False)
    # Replicas were removed: the next reconcile deletes what the allocation owns beyond them
    # (only then does it list what it owns: a plain create needs no such listing).
    prune_pending = models.BooleanField(default=False)

    # Observed state
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.REQUESTED)
    ready_replicas = models.PositiveSmallIntegerField(default=0)
    reason = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    provisioned_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    # Readiness phases (issue 21), each the first time the watcher or the resync saw it:
    # accepted (requested_at) → objects created (provisioned_at) → volumes bound → Pods
    # scheduled → ready (ready_at); a warm-pool allocation's claims bound instead of its
    # volumes, with how many took a warm Sandbox and how many cold-started one.
    volumes_bound_at = models.DateTimeField(null=True, blank=True)
    pods_scheduled_at = models.DateTimeField(null=True, blank=True)
    claims_bound_at = models.DateTimeField(null=True, blank=True)
    warm_claims = models.PositiveSmallIntegerField(default=0)
    cold_claims = models.PositiveSmallIntegerField(default=0)
    release_requested_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    reconcile_attempts = models.PositiveIntegerField(default=0)
    adopted = models.BooleanField(default=False)
    # The transaction that last wrote the row (set by a trigger, migration 0005): the
    # cursor of the change stream (selectors.allocation_changes).
    changed_xid = models.BigIntegerField(default=0, editable=False, db_index=True)
    # The objects as the resync last found a ready allocation's (observe.PoolObjects
    # .fingerprint): while they stay the same, the resync has nothing to record.
    resync_fingerprint = models.CharField(max_length=40, blank=True, editable=False)

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
            models.Index(fields=["team", "phase"], name="allocation_team_phase"),
            models.Index(fields=["namespace", "name"], name="allocation_ns_name"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def selector(self) -> str:
        return pool_selector(self.name)

    @property
    def has_artifacts(self) -> bool:
        return bool(self.artifacts_size)


class AllocationEvent(models.Model):
    """One line of an allocation's timeline (created, applied, replica ready, failed…)."""

    class Kind(models.TextChoices):
        CREATED = "created", "Created"
        ADOPTED = "adopted", "Adopted"
        APPLIED = "applied", "Objects applied"
        RETRY = "retry", "Retrying"
        REPLICAS = "replicas", "Ready replicas changed"
        VOLUMES_BOUND = "volumes_bound", "Volumes bound"
        PODS_SCHEDULED = "pods_scheduled", "Pods scheduled"
        CLAIMS_BOUND = "claims_bound", "Claims bound"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        ROLLED_BACK = "rolled_back", "Rolled back"
        RELEASING = "releasing", "Release requested"
        RELEASED = "released", "Released"
        SCALED = "scaled", "Replicas changed"
        SUSPENDED = "suspended", "Suspended"
        RESUMED = "resumed", "Resumed"
        EXPIRY = "expiry", "Expiry set"
        EXPIRED = "expired", "Expired"
        RETAINED = "retained", "Artifacts retained"

    allocation = models.ForeignKey(Allocation, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.allocation_id} {self.kind}"


class PoolPresence(models.Model):
    """A pool name whose labelled objects the watcher holds in its caches while no live
    allocation has that name: leftovers (an older service's, or objects someone made with
    our labels). The name stays taken while they exist, and a POST learns that from this
    table instead of listing every kind (the watcher writes it; see docs/architecture.md)."""

    namespace = models.CharField(max_length=63)
    pool = models.CharField(max_length=63)
    objects_seen = models.JSONField(default=list, help_text="Kind/name of what is left.")
    seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "pool"], name="pool_presence_once")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pool}"


class ForeignObject(models.Model):
    """An object of a kind the service creates (NetworkPolicy, PVC, Sandbox, SandboxClaim)
    in a managed namespace that does not carry the service's label: somebody else's, whose
    name is not ours to take. The watcher writes these from metadata-only watches of what
    is not ours, so that a POST reads its name checks here instead of asking the API server
    (docs/architecture.md)."""

    namespace = models.CharField(max_length=63)
    kind = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "kind", "name"], name="foreign_object_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @staticmethod
    def named(namespace: str, keys: list[tuple[str, str]]) -> Q:
        """The rows of these (kind, name) in ``namespace``: one statement for all of them."""
        match = Q(pk__in=[])
        for kind, name in keys:
            match |= Q(kind=kind, name=name)
        return match & Q(namespace=namespace)


class WarmPoolSeen(models.Model):
    """A SandboxWarmPool in a managed namespace as the watcher last saw it, with what a
    create checks of it and its SandboxTemplate (allocations/services/warmpool.py): a POST
    naming the pool reads this row instead of the two objects."""

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    verdict = models.JSONField(help_text="WarmPoolVerdict as JSON.")
    seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="warm_pool_seen_once")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

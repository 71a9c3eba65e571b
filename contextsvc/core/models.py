from __future__ import annotations

from django.conf import settings
from django.db import models

from contextsvc.core.limits import LIMITS


class ProcessHeartbeat(models.Model):
    """The last time a background process (worker, watcher) proved it was alive.

    Rows are written by the processes themselves; the dashboard and ``/readyz`` read them
    to say which background processes are running, which is otherwise invisible.
    """

    class Kind(models.TextChoices):
        WORKER = "worker", "Celery worker"
        WATCHER = "watcher", "Watcher"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()
    # A watcher's: the namespace group and the shards whose pools its caches hold, filled
    # and current (empty while it stands by or is still listing). A POST trusts the
    # watcher's view of a pool's leftovers only while its shard's heartbeat is fresh.
    group = models.CharField(max_length=255, blank=True, default="")
    shards = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "hostname", "pid"], name="heartbeat_unique")
        ]
        ordering = ["kind", "hostname", "pid"]

    def __str__(self) -> str:
        return f"{self.kind} {self.hostname}:{self.pid}"


class VolumeStatus(models.TextChoices):
    """Where a PVC this service makes stands: a named context's (allocations) and an agent
    type's workspace volume (workspaces) go through the same states."""

    PROVISIONING = "provisioning", "Provisioning"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"
    DELETED = "deleted", "Deleted"


class Scope(models.TextChoices):
    """What an API client may do. Human users get scopes from their role instead."""

    READ = "read", "Read allocations, contexts, profiles and approvals"
    ALLOCATIONS = "allocations", "Create and release sandbox pools and contexts"
    AGENT = "agent", "Submit operations for approval and register workspace contexts"
    APPROVER = "approver", "Decide approval requests"
    ADMIN = "admin", "Manage profiles, API clients and everything else"
    # Prometheus' token: /metrics names every team's objects, and nothing else is read.
    METRICS = "metrics", "Read /metrics (every team's series) and nothing else"


DEFAULT_TEAM = "default"


class Team(models.Model):
    """Who owns allocations, contexts, workspaces and approval requests, and the share of
    the cluster they may hold. A caller sees and changes only its own team's objects
    (admins every team's); an installation with one team never notices (the default team,
    which every API client and person belongs to unless moved).

    A limit of None is no limit. Every limit is checked in the transaction that would go
    past it, with this row locked, so concurrent callers of one team queue on it."""

    name = models.SlugField(max_length=63, unique=True)
    description = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Its limits (max_live_allocations, max_storage_bytes, …): a column each, added below
    # from their declarations (contextsvc/core/limits.py).
    # The managed namespaces the team's pools, contexts and workspaces may be made in
    # (CS_ALLOWED_NAMESPACES still bounds them); empty: any managed namespace.
    namespaces = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


for _limit in LIMITS:
    Team.add_to_class(_limit.field, _limit.column())


def default_team_pk() -> int:
    """The default team's key, for rows made without a team (by a migration's existing rows,
    by code that has no caller). Reads only the key, so that it works against any later
    shape of the table; the row is made by migration core 0009 and again after every flush
    (apps.py)."""
    found = Team.objects.filter(name=DEFAULT_TEAM).values_list("pk", flat=True).first()
    if found is None:
        found = Team.objects.get_or_create(name=DEFAULT_TEAM)[0].pk
    return found


class TeamRequestRate(models.Model):
    """Where a team's request rate stands: the time at which its bucket of requests would be
    empty again (the "theoretical arrival time" of the generic cell rate algorithm). One
    row per team that has been limited; written only by ``ratelimit.take``."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, primary_key=True)
    tat = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.team_id} until {self.tat}"


class TeamMember(models.Model):
    """The team a person belongs to; a person with no row belongs to the default team."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_membership"
    )
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="members")

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class ApiClient(models.Model):
    """A named caller of the REST API (Serverless Harness, Rossoctl, an agent type…)."""

    name = models.SlugField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    scopes = models.JSONField(default=list)
    # For the agent scope: the agent types (profiles) this client may speak for, or "*".
    # An agent names its type in each request; without this, any agent token could pick
    # the most permissive profile's rules.
    agent_types = models.JSONField(default=list, blank=True)
    is_active = models.BooleanField(default=True)
    # A team cannot be deleted while a client belongs to it.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="api_clients", default=default_team_pk
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "API client"

    def __str__(self) -> str:
        return self.name


class ApiToken(models.Model):
    """A bearer token for an API client. Only a SHA-256 of the token is stored: tokens are
    256-bit random strings, so a fast unsalted hash is as strong as a password hash here and
    lets authentication be one indexed lookup."""

    client = models.ForeignKey(ApiClient, on_delete=models.CASCADE, related_name="tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise it.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.client.name} {self.prefix}…"


class AuditEntry(models.Model):
    """Append-only record of a state change, written in the transaction that made it."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=200, help_text="user:NAME, api:CLIENT or system:PART")
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=32)
    # Wide enough for the longest target: namespace (63) / agent type (54) / context id (253).
    target = models.CharField(max_length=512)
    payload = models.JSONField(default=dict, blank=True)
    # The team whose object changed; None for the platform's own (profiles, teams, API
    # clients, people, channels, retention), which only those who reach every team see.
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["target_type", "target"], name="audit_target")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.target}"


class ClusterCapabilities(models.Model):
    """The last detection of what the cluster serves (one row; see core.capabilities)."""

    data = models.JSONField(default=dict)
    detected_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "cluster capabilities"

    def __str__(self) -> str:
        return f"capabilities at {self.detected_at:%Y-%m-%d %H:%M:%S}"


class RetiredTally(models.Model):
    """What removed rows still count for. Before retention deletes old rows, it adds what they
    count for in ``/metrics`` (counters and histograms are computed from rows) to these
    totals, in the same transaction, so that no counter ever goes backwards. One row per
    series and label values (see core.tallies)."""

    series = models.CharField(max_length=96)
    labels = models.JSONField(default=list, help_text="The label values, in the series' order.")
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["series", "labels"], name="retired_tally_once")
        ]

    def __str__(self) -> str:
        return f"{self.series}{self.labels} {self.value}"

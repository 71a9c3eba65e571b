from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from contextsvc.core.models import Team, default_team_pk


class DecisionKind(models.TextChoices):
    """What a reviewer may decide, declared once: the API's enum, the dashboard's buttons
    and the service's dispatch all name these."""

    APPROVE = "approve", "Approve"
    DENY = "deny", "Deny"
    APPROVE_EDITED = "approve_edited", "Approve edited"
    APPROVE_SIMILAR = "approve_similar", "Approve and allow similar"


DECISION_KIND_MESSAGE = "decision must be approve, deny, approve_edited or approve_similar"


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"


# Who the service's own changes to requests are by (expiry, escalation), and why an expired
# request ended: what expiry writes, and what a read shows before it has (selectors).
SYSTEM_ACTOR = "system:approvals"
EXPIRY_REASON = "deadline passed"


class ApprovalRequest(models.Model):
    """One agent operation that no rule decided, waiting for a human."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    context_id = models.CharField(max_length=253)
    agent_type = models.CharField(max_length=63, help_text="The profile whose rules applied.")
    agent_instance = models.CharField(max_length=253, blank=True)
    allocation = models.CharField(max_length=50, blank=True)
    namespace = models.CharField(max_length=63, blank=True)
    operation = models.JSONField(help_text="The operation as the agent sent it.")
    kind = models.CharField(max_length=16)
    normalised = models.TextField(help_text="Sanitised for reviewers (hidden characters escaped).")
    evaluation = models.JSONField(help_text="The rule evaluation, part by part.")
    risk = models.CharField(max_length=8)
    execution = models.JSONField(
        default=dict, blank=True, help_text="How the executor runs it, as the profile said."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    requested_by = models.CharField(max_length=200)
    # The requesting agent's team: only its callers (and admins) see, decide and cancel the
    # request, and its quota counts what is pending.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="approval_requests", default=default_team_pk
    )
    created_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    grant = models.ForeignKey(
        "Grant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What the operation touches in its allocation's topology, for the reviewer (risk.py).
    risk_notes = models.JSONField(default=list, blank=True)
    # Two for a high-risk operation under a profile's two-person rule (its signoffs).
    approvals_required = models.PositiveSmallIntegerField(default=1)
    # A reviewer's edit, approved instead of what was asked: {"operation", "normalised",
    # "evaluation", "risk", "by", "at"}. The asked operation above never changes.
    edit = models.JSONField(null=True, blank=True)
    # Escalation (the profile's escalateAfter): when the escalation group is told, and when
    # it was.
    escalate_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "deadline"], name="approval_status_deadline"),
            models.Index(fields=["status", "escalate_at"], name="approval_status_escalate"),
            models.Index(fields=["agent_type", "-created_at"], name="approval_agent_type"),
            models.Index(fields=["context_id", "-created_at"], name="approval_context"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.kind} {self.status}"

    @property
    def effective_operation(self) -> dict[str, Any]:
        """What may run once approved: the reviewer's edit, or what was asked."""
        return dict(self.edit["operation"]) if self.edit else dict(self.operation)


class ApprovalSignoff(models.Model):
    """One approver's approval of a request that needs two (the two-person rule)."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="signoffs")
    actor = models.CharField(max_length=200)
    at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["request", "actor"], name="signoff_once_per_actor")
        ]

    def __str__(self) -> str:
        return f"{self.request_id} {self.actor}"


class GrantQuerySet(models.QuerySet["Grant"]):
    def active(self, *, now: datetime | None = None) -> GrantQuerySet:
        """Grants that still allow something: not revoked and not past their expiry."""
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now or timezone.now())
        )


class Grant(models.Model):
    """A narrower allow rule from "approve and allow similar", for one context or one agent
    type, optionally until a time. Revocable; never broader than the rule it names."""

    class Scope(models.TextChoices):
        CONTEXT = "context", "This context"
        AGENT_TYPE = "agent_type", "This agent type"

    rule = models.CharField(max_length=4096)
    scope = models.CharField(max_length=16, choices=Scope.choices)
    agent_type = models.CharField(max_length=63)
    context_id = models.CharField(max_length=253, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)
    # The team of the request it was granted on: it allows only that team's agents'
    # operations (another team's agents of the same type are asked as before).
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="grants", default=default_team_pk
    )
    source = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=200, blank=True)
    # Operations this grant allowed (a part of each was allowed by its rule), counted in
    # the transaction that audits the allow.
    hits = models.PositiveBigIntegerField(default=0)
    last_hit_at = models.DateTimeField(null=True, blank=True)

    objects = GrantQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope="agent_type") | ~Q(context_id=""), name="grant_context_scoped"
            )
        ]

    def __str__(self) -> str:
        return f"{self.rule} ({self.scope})"


class RunOutcome(models.TextChoices):
    EXITED = "exited", "Exited"
    TIMED_OUT = "timed_out", "Killed at its time limit"
    MEMORY = "memory", "Killed at its memory limit"
    KILLED = "killed", "Killed by a signal"
    ERROR = "error", "Could not be run"


class OperationRun(models.Model):
    """What an executor ran for an allowed operation, reported back by it: the decision
    and its execution side by side. Each allowed operation runs once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    request = models.OneToOneField(
        ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="run"
    )
    # The audit entry of an immediate rule decision (a request has no row otherwise).
    check_entry = models.OneToOneField(
        "core.AuditEntry", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    context_id = models.CharField(max_length=253)
    agent_type = models.CharField(max_length=63)
    command = models.TextField(help_text="What ran: the string that was judged.")
    outcome = models.CharField(max_length=16, choices=RunOutcome.choices)
    exit_status = models.IntegerField(null=True, blank=True)
    signal = models.IntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    stdout_bytes = models.PositiveBigIntegerField()
    stderr_bytes = models.PositiveBigIntegerField()
    truncated = models.BooleanField()
    # What the sandbox refused, as the program reported it ({"action", "path", "error"}):
    # the best evidence that the rules misread a command (docs/agent-client.md).
    refused_effects = models.JSONField(default=list, blank=True)
    # How it was contained: {"network": pod|none, "memory"/"processes": cgroup|rlimit}.
    sandbox = models.JSONField(default=dict, blank=True)
    reported_by = models.CharField(max_length=200)
    # The reporter's team (the team of the request or check it reports on): only it and
    # admins read the run.
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, related_name="runs", default=default_team_pk
    )
    reported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-reported_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(request__isnull=False, check_entry__isnull=True)
                | Q(request__isnull=True, check_entry__isnull=False),
                name="run_of_one_decision",
            )
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.outcome}"


class RuleDecisionCount(models.Model):
    """How often a rule decided at once, per agent type: the analytics' and /metrics' count
    of immediate decisions (the audit log has each one, but counting it at every scrape
    would read every row ever written)."""

    agent_type = models.CharField(max_length=63)
    decision = models.CharField(max_length=8)  # allow | deny
    rule_sha256 = models.CharField(max_length=64)
    rule = models.TextField(help_text="The deciding rule as written, or empty for none.")
    count = models.PositiveBigIntegerField(default=0)
    last_at = models.DateTimeField()

    class Meta:
        ordering = ["-count"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent_type", "decision", "rule_sha256"], name="rule_decision_count_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_type} {self.decision} {self.rule} {self.count}"


# --- Notifications ----------------------------------------------------------------------------


class NotificationEvent(models.TextChoices):
    CREATED = "approval.created", "A request waits for a decision"
    ESCALATED = "approval.escalated", "A request is escalated"
    DECIDED = "approval.decided", "A request is decided, expired or cancelled"
    TEST = "test", "A test message"


class NotificationChannel(models.Model):
    """An outbound webhook: JSON signed with HMAC-SHA256, or a Slack-compatible incoming
    webhook. Its URL and secret are stored encrypted (contextsvc.infra.secrets) and shown
    once, when made."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", "Webhook (JSON, signed)"
        SLACK = "slack", "Slack-compatible incoming webhook"

    name = models.SlugField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    url_sealed = models.TextField()
    url_display = models.CharField(max_length=300, help_text="Scheme and host only.")
    secret_sealed = models.TextField(blank=True)
    agent_types = models.JSONField(default=list, help_text='Agent types (profiles), or ["*"].')
    events = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Delivery(models.Model):
    """One message to one place (an e-mail to one person, a POST to one channel) about one
    request, with its retries. The body is fixed when it is made, so every attempt sends
    the same message."""

    class Medium(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"
        SLACK = "slack", "Slack"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    request = models.ForeignKey(
        ApprovalRequest,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="deliveries",
    )
    event = models.CharField(max_length=32, choices=NotificationEvent.choices)
    medium = models.CharField(max_length=16, choices=Medium.choices)
    channel = models.ForeignKey(
        NotificationChannel,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
    )
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    target = models.CharField(max_length=200, help_text="The channel's name or the username.")
    address = models.CharField(max_length=320, help_text="The e-mail address, or the URL's host.")
    message = models.JSONField(help_text="What is sent (a webhook's body, an e-mail's parts).")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.target} ({self.status})"


class DeliveryAttempt(models.Model):
    """One try of a delivery: what the other end answered, or why it could not be asked."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", "Delivered"
        RETRY = "retry", "Failed; will retry"
        FAILED = "failed", "Failed; given up"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} {self.outcome}"


class ApprovalLink(models.Model):
    """A signed approve or deny link in one person's e-mail: usable once, until the
    request's deadline, and only by that person signed in (the link alone decides
    nothing)."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        DENY = "deny", "Deny"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="links")
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    decision = models.CharField(max_length=8, choices=Decision.choices)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.decision} {self.request_id} for {self.recipient_id}"

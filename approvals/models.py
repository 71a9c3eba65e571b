from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.db.models import Q
from django.utils import timezone


class Status(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"


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
    created_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    grant = models.ForeignKey(
        "Grant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "deadline"], name="approval_status_deadline"),
            models.Index(fields=["agent_type", "-created_at"], name="approval_agent_type"),
            models.Index(fields=["context_id", "-created_at"], name="approval_context"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.kind} {self.status}"


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
    source = models.ForeignKey(
        ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=200, blank=True)

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
    reported_by = models.CharField(max_length=200)
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

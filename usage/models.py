from __future__ import annotations

from django.db import models

from contextsvc.core.models import Team


class UsageHour(models.Model):
    """One team's use under one profile (agent type) in one UTC hour, computed whole from
    the lifecycles that overlap it (usage/services.py): recomputing an hour gives the same
    row. An hour before ``UsageMeter.closed_until`` is final; the current one is recomputed
    on every run."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="usage")
    # An allocation's profile name ("" for the built-in runtime, a warm pool's claims);
    # for approvals, the agent type whose rules applied.
    profile = models.CharField(max_length=63, blank=True)
    hour = models.DateTimeField()
    # Replica-seconds while the objects existed and were not suspended, and while they
    # were (a suspended sandbox keeps its volumes, not its Pod: counted apart).
    sandbox_seconds = models.FloatField(default=0.0)
    suspended_seconds = models.FloatField(default=0.0)
    storage_gib_hours = models.FloatField(default=0.0)
    approvals_decided = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["hour", "team", "profile"]
        constraints = [
            models.UniqueConstraint(fields=["team", "profile", "hour"], name="usage_hour_once")
        ]
        indexes = [models.Index(fields=["hour"], name="usage_hour")]

    def __str__(self) -> str:
        return f"{self.team_id} {self.profile or '-'} {self.hour:%Y-%m-%d %H}:00"


class UsageMeter(models.Model):
    """Where the meter stands (one row): every hour before ``closed_until`` is final."""

    closed_until = models.DateTimeField()

    def __str__(self) -> str:
        return f"closed until {self.closed_until:%Y-%m-%d %H}:00"

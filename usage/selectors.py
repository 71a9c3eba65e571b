"""Reads of usage: the Usage page, its CSV and ``/metrics``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Sum

from contextsvc.core.teams import Reach
from usage.models import UsageHour

MEASURES = ("sandbox_seconds", "suspended_seconds", "storage_gib_hours", "approvals_decided")


class UsageRow(NamedTuple):
    team: str
    profile: str
    sandbox_seconds: float
    suspended_seconds: float
    storage_gib_hours: float
    approvals_decided: int


def usage_totals(*, reach: Reach, since: datetime | None = None) -> list[UsageRow]:
    """Every team's and profile's use (since ``since``), those ``reach`` allows, by team and
    profile."""
    found = reach.narrow(UsageHour.objects.all())
    if since is not None:
        found = found.filter(hour__gte=since)
    rows = (
        found.values("team__name", "profile")
        .annotate(
            sandbox_seconds=Sum("sandbox_seconds"),
            suspended_seconds=Sum("suspended_seconds"),
            storage_gib_hours=Sum("storage_gib_hours"),
            approvals_decided=Sum("approvals_decided"),
        )
        .order_by("team__name", "profile")
    )
    return [
        UsageRow(
            row["team__name"],
            row["profile"],
            row["sandbox_seconds"] or 0.0,
            row["suspended_seconds"] or 0.0,
            row["storage_gib_hours"] or 0.0,
            row["approvals_decided"] or 0,
        )
        for row in rows
    ]


def usage_hours(*, reach: Reach, since: datetime) -> list[dict[str, Any]]:
    """Hour by hour since ``since``, every team's use (for the page's plot and the CSV)."""
    found = reach.narrow(UsageHour.objects.filter(hour__gte=since))
    return list(
        found.values("hour", "team__name", "profile", *MEASURES).order_by(
            "hour", "team__name", "profile"
        )
    )

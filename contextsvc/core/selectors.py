from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.utils import timezone

from contextsvc.core.models import AuditEntry, ProcessHeartbeat
from contextsvc.core.teams import Reach, sees_every_team

HEARTBEAT_FRESH = timedelta(minutes=2)
# Every operation a rule allows is audited; on the overview they would bury the rest.
ROUTINE_ACTIONS = ("approval.allow",)


def heartbeat_list_recent(*, within: timedelta = HEARTBEAT_FRESH) -> QuerySet[ProcessHeartbeat]:
    """Background processes that reported in recently enough to count as running."""
    return ProcessHeartbeat.objects.filter(last_seen__gte=timezone.now() - within)


def audit_entries(*, reach: Reach) -> QuerySet[AuditEntry]:
    """The audit log as a caller may read it, newest first: a caller of one team of several
    reads its team's entries only; the platform's (no team) are for who reaches every team."""
    entries = AuditEntry.objects.order_by("-at", "-id")
    return entries if sees_every_team(reach) else reach.narrow(entries)


def audit_recent(*, limit: int, reach: Reach) -> QuerySet[AuditEntry]:
    """The newest entries worth a glance: what people, clients and the service changed."""
    return audit_entries(reach=reach).exclude(action__in=ROUTINE_ACTIONS)[:limit]


def audit_of_actions(
    *, actions: tuple[str, ...], since: datetime, limit: int = 5000
) -> QuerySet[AuditEntry]:
    """The entries of these actions since ``since``, oldest first (at most ``limit``)."""
    return AuditEntry.objects.filter(action__in=actions, at__gte=since).order_by("at", "id")[:limit]


def duration_histogram(
    queryset: QuerySet[Any], start: str, end: str, buckets: Sequence[float]
) -> tuple[list[int], int, float]:
    """Over the rows of ``queryset`` whose ``end`` is set: how many took at most each
    bucket's seconds (cumulative), how many there are, and the sum of their seconds — one
    query, whatever the number of rows (the metrics' histograms and the dashboard's plots)."""
    duration = ExpressionWrapper(F(end) - F(start), output_field=DurationField())
    found = queryset.filter(**{f"{end}__isnull": False}).annotate(duration=duration)
    aggregates = {
        f"le_{i}": Count("pk", filter=Q(duration__lte=timedelta(seconds=bucket)))
        for i, bucket in enumerate(buckets)
    }
    result = found.aggregate(total=Count("pk"), seconds=Sum("duration"), **aggregates)
    counts = [int(result[f"le_{i}"]) for i in range(len(buckets))]
    seconds = result["seconds"]
    return counts, int(result["total"]), seconds.total_seconds() if seconds else 0.0

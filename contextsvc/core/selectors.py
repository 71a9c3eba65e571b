from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from contextsvc.core.models import AuditEntry, ProcessHeartbeat

HEARTBEAT_FRESH = timedelta(minutes=2)
# Every operation a rule allows is audited; on the overview they would bury the rest.
ROUTINE_ACTIONS = ("approval.allow",)


def heartbeat_list_recent(*, within: timedelta = HEARTBEAT_FRESH) -> QuerySet[ProcessHeartbeat]:
    """Background processes that reported in recently enough to count as running."""
    return ProcessHeartbeat.objects.filter(last_seen__gte=timezone.now() - within)


def audit_recent(*, limit: int) -> QuerySet[AuditEntry]:
    """The newest entries worth a glance: what people, clients and the service changed."""
    return AuditEntry.objects.exclude(action__in=ROUTINE_ACTIONS).order_by("-at", "-id")[:limit]


def audit_of_actions(
    *, actions: tuple[str, ...], since: datetime, limit: int = 5000
) -> QuerySet[AuditEntry]:
    """The entries of these actions since ``since``, oldest first (at most ``limit``)."""
    return AuditEntry.objects.filter(action__in=actions, at__gte=since).order_by("at", "id")[:limit]

from __future__ import annotations

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from contextsvc.core.models import ProcessHeartbeat

HEARTBEAT_FRESH = timedelta(minutes=2)


def heartbeat_list_recent(*, within: timedelta = HEARTBEAT_FRESH) -> QuerySet[ProcessHeartbeat]:
    """Background processes that reported in recently enough to count as running."""
    return ProcessHeartbeat.objects.filter(last_seen__gte=timezone.now() - within)

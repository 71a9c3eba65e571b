from __future__ import annotations

import os
import socket
from datetime import timedelta

from django.utils import timezone

from contextsvc.core.models import ProcessHeartbeat

HEARTBEAT_RETENTION = timedelta(days=1)


def heartbeat_record(
    *, kind: str, hostname: str | None = None, pid: int | None = None
) -> ProcessHeartbeat:
    """Upsert this process's heartbeat and forget processes silent for a day."""
    now = timezone.now()
    heartbeat, _ = ProcessHeartbeat.objects.update_or_create(
        kind=kind,
        hostname=hostname or socket.gethostname(),
        pid=pid if pid is not None else os.getpid(),
        defaults={"last_seen": now},
        create_defaults={"last_seen": now, "started_at": now},
    )
    ProcessHeartbeat.objects.filter(last_seen__lt=now - HEARTBEAT_RETENTION).delete()
    return heartbeat

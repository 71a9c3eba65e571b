from __future__ import annotations

import os

from billiard import current_process
from celery import shared_task

from contextsvc.core import capabilities, queue
from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.services import heartbeat_record


def worker_pid() -> int:
    """The worker process this task runs in: in a prefork pool's child, its parent (the
    worker the dashboard lists, once, whichever child ran the task)."""
    in_pool_child = current_process().name != "MainProcess"
    return os.getppid() if in_pool_child else os.getpid()


@shared_task(name=queue.RECORD_HEARTBEAT, ignore_result=True)
def record_heartbeat() -> int:
    """Scheduled by beat: whichever worker picks it up records that it is alive."""
    return heartbeat_record(kind=ProcessHeartbeat.Kind.WORKER, pid=worker_pid()).pk


@shared_task(name=queue.REFRESH_CAPABILITIES, ignore_result=True)
def refresh_capabilities() -> dict[str, object]:
    """Scheduled by beat: re-detect what the cluster serves (read paths also refresh a
    stale record on demand)."""
    return capabilities.refresh().as_dict()

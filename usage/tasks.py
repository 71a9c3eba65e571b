"""Beat's meter: each run only calls the service (usage/services.py)."""

from __future__ import annotations

from celery import shared_task

from contextsvc.infra import locks
from usage.queue import METER
from usage.services import usage_meter

METER_LOCK = (locks.SINGLETON, locks.singleton_key("usage-meter"))


@shared_task(name=METER, ignore_result=True)
def meter() -> str:
    """Beat: the current hour's usage recomputed, the hours that ended closed."""
    with locks.try_advisory_lock(*METER_LOCK) as acquired:
        if not acquired:
            return "another meter is running"
        return f"{usage_meter()} hour(s) written"

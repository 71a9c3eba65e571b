from __future__ import annotations

from celery import shared_task

from approvals import services


@shared_task(name="approvals.tasks.expire_due", ignore_result=True)
def expire_due() -> int:
    """Scheduled by beat: requests past their deadline expire (which means deny)."""
    return services.expire_due()

"""Celery tasks for approvals: each only calls its service (approvals/services/expiry.py,
approvals/services/escalation.py, approvals/notifications.py)."""

from __future__ import annotations

from celery import Task, shared_task

from approvals import notifications
from approvals.queue import DELIVER, DELIVERIES_DUE, ESCALATE_DUE, EXPIRE_DUE, RETENTION
from approvals.services import escalation, expiry
from approvals.services.retention import approvals_retention
from contextsvc.infra import queue


@shared_task(name=EXPIRE_DUE, ignore_result=True)
def expire_due() -> int:
    """Scheduled by beat: requests past their deadline expire (which means deny)."""
    return expiry.expire_due()


@shared_task(name=ESCALATE_DUE, ignore_result=True)
def escalate_due() -> int:
    """Scheduled by beat: requests past their profile's escalateAfter are escalated."""
    return escalation.escalate_due()


# The service counts the attempts and stops; Celery only carries the waits between them.
@shared_task(bind=True, name=DELIVER, max_retries=None, ignore_result=True)
def deliver(self: Task, delivery_id: str) -> str:
    return queue.run(self, notifications.delivery_attempt, delivery_id)


@shared_task(name=DELIVERIES_DUE, ignore_result=True)
def deliveries_due() -> int:
    """Scheduled by beat: deliveries whose next try is due (a task lost with its worker)."""
    return notifications.deliveries_sweep()


@shared_task(name=RETENTION, ignore_result=True)
def retention() -> int:
    """Scheduled by beat: finished requests past CS_RETENTION_APPROVALS_DAYS removed."""
    return approvals_retention()

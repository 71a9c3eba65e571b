"""Celery tasks for named contexts. Each hands its id to a service, under the context's
advisory lock where two workers could meet; the services re-read the row and return early
when the work is done."""

from __future__ import annotations

from celery import Task, shared_task

from contexts import queue as named
from contexts import services
from contextsvc.infra import locks, queue


@shared_task(bind=True, name=named.RECONCILE_CONTEXT, max_retries=None)
def reconcile_context(self: Task, context_id: int) -> str:
    return queue.run(
        self,
        services.context_reconcile,
        context_id,
        self.request.retries,
        lock=(locks.CONTEXT, context_id),
    )


@shared_task(bind=True, name=named.DELETE_CONTEXT, max_retries=None)
def delete_context(self: Task, context_id: int) -> str:
    return queue.run(self, services.context_delete_objects, context_id, self.request.retries)

"""The named contexts' tasks by name, queued after commit (contextsvc/infra/queue.py)."""

from __future__ import annotations

from contextsvc.infra.queue import after_commit

RECONCILE_CONTEXT = "contexts.tasks.reconcile_context"
DELETE_CONTEXT = "contexts.tasks.delete_context"


def reconcile_context(context_id: int) -> None:
    after_commit(RECONCILE_CONTEXT, context_id)


def delete_context(context_id: int) -> None:
    after_commit(DELETE_CONTEXT, context_id)

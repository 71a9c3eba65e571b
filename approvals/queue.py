"""The approvals' tasks by name, queued after commit (contextsvc/core/queue.py)."""

from __future__ import annotations

from uuid import UUID

from contextsvc.core.queue import after_commit, send

DELIVER = "approvals.tasks.deliver"


def deliver(delivery_id: UUID) -> None:
    after_commit(DELIVER, str(delivery_id))


def deliver_now(delivery_id: UUID) -> bool:
    """For the sweep, which runs outside any transaction."""
    return send(DELIVER, str(delivery_id))

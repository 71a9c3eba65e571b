"""The approvals' tasks by name, queued after commit (contextsvc/infra/queue.py)."""

from __future__ import annotations

from uuid import UUID

from contextsvc.infra.queue import after_commit, send

DELIVER = "approvals.tasks.deliver"
# Beat's (config/settings/base.py).
EXPIRE_DUE = "approvals.tasks.expire_due"
ESCALATE_DUE = "approvals.tasks.escalate_due"
DELIVERIES_DUE = "approvals.tasks.deliveries_due"
RETENTION = "approvals.tasks.retention"


def deliver(delivery_id: UUID) -> None:
    after_commit(DELIVER, str(delivery_id))


def deliver_now(delivery_id: UUID) -> bool:
    """For the sweep, which runs outside any transaction."""
    return send(DELIVER, str(delivery_id))

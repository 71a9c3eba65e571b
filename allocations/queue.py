"""The allocations' tasks by name, queued after commit (contextsvc/infra/queue.py)."""

from __future__ import annotations

from contextsvc.infra.queue import after_commit

RECONCILE = "allocations.tasks.reconcile_allocation"
OBSERVE = "allocations.tasks.observe_allocation"
RELEASE = "allocations.tasks.release_allocation"
ROLLBACK = "allocations.tasks.rollback_allocation"
RESYNC = "allocations.tasks.resync"
EXPIRE = "allocations.tasks.expire"
WARM_POOLS = "allocations.tasks.warm_pools"
RETENTION = "allocations.tasks.retention"


def reconcile(allocation_id: int, *, countdown: float = 0) -> None:
    after_commit(RECONCILE, allocation_id, countdown=countdown)


def observe(allocation_id: int) -> None:
    after_commit(OBSERVE, allocation_id)


def release(allocation_id: int) -> None:
    after_commit(RELEASE, allocation_id)


def rollback(allocation_id: int) -> None:
    after_commit(ROLLBACK, allocation_id)

"""Celery tasks for allocations. Each hands its id to a service, under
the object's advisory lock, so two workers on the same allocation take turns instead of
fighting; the services re-read the row and return early when the work is done."""

from __future__ import annotations

from celery import Task, shared_task

from allocations import queue as named
from allocations import resync as resync_service
from allocations.services.create import warm_pools_scale
from allocations.services.lifecycle import allocations_expire_due
from allocations.services.observed import allocation_observe_now
from allocations.services.reconcile import allocation_reconcile
from allocations.services.release import allocation_release_objects, allocation_rollback_objects
from allocations.services.retention import allocations_retention
from contextsvc.infra import locks, queue
from profiles.tasks import WARM_POOLS_LOCK


@shared_task(bind=True, name=named.RECONCILE, max_retries=None)
def reconcile_allocation(self: Task, allocation_id: int) -> str:
    return queue.run(
        self,
        allocation_reconcile,
        allocation_id,
        self.request.retries,
        lock=(locks.ALLOCATION, allocation_id),
    )


@shared_task(bind=True, name=named.OBSERVE, max_retries=3)
def observe_allocation(self: Task, allocation_id: int) -> str:
    recorded = queue.run(
        self,
        allocation_observe_now,
        allocation_id,
        lock=(locks.ALLOCATION, allocation_id),
    )
    return str(recorded or "nothing to do")


@shared_task(bind=True, name=named.RELEASE, max_retries=None)
def release_allocation(self: Task, allocation_id: int) -> str:
    return queue.run(
        self,
        allocation_release_objects,
        allocation_id,
        self.request.retries,
        lock=(locks.ALLOCATION, allocation_id),
    )


@shared_task(bind=True, name=named.ROLLBACK, max_retries=None)
def rollback_allocation(self: Task, allocation_id: int) -> str:
    return queue.run(
        self,
        allocation_rollback_objects,
        allocation_id,
        self.request.retries,
        lock=(locks.ALLOCATION, allocation_id),
    )


@shared_task(name=named.RESYNC)
def resync() -> str:
    """Beat's safety net: recompute every allocation from list calls."""
    with locks.try_advisory_lock(locks.SINGLETON, locks.singleton_key("resync")) as acquired:
        if not acquired:
            return "another resync is running"
        return resync_service.resync_all().summary()


@shared_task(name=named.EXPIRE)
def expire() -> str:
    """Beat: release the allocations whose expiry has passed."""
    released = allocations_expire_due()
    return f"released {len(released)}"


@shared_task(name=named.WARM_POOLS)
def warm_pools() -> str:
    """Beat: the profiles' warm pools made, kept in step and sized from recent demand."""
    with locks.try_advisory_lock(*WARM_POOLS_LOCK) as acquired:
        if not acquired:
            return "another warm-pool run is active"
        return str(warm_pools_scale())


@shared_task(name=named.RETENTION)
def retention() -> str:
    """Beat: released allocations past CS_RETENTION_RELEASED_DAYS removed, in batches."""
    return f"removed {allocations_retention()}"

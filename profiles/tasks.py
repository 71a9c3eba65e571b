"""Celery tasks for profiles: each hands its argument to a service."""

from __future__ import annotations

from celery import Task, shared_task

from contextsvc.infra import locks, queue
from profiles import warmpools
from profiles.queue import SYNC_WARM_POOL

# One run at a time over every profile's warm pool: a profile's own sync and the periodic
# one (allocations.tasks.warm_pools) would otherwise race to create and delete.
WARM_POOLS_LOCK = (locks.SINGLETON, locks.singleton_key("warm-pools"))


def _sync(profile_name: str) -> str:
    return f"warm pool of {profile_name}: {warmpools.warm_pools_sync(profile_name=profile_name)}"


@shared_task(bind=True, name=SYNC_WARM_POOL, max_retries=10)
def sync_warm_pool(self: Task, profile_name: str) -> str:
    # Level-based: a retry, or the next periodic run, repeats it safely.
    return queue.run(self, _sync, profile_name, lock=WARM_POOLS_LOCK)

"""The profiles' tasks by name, queued after commit (contextsvc/infra/queue.py)."""

from __future__ import annotations

from contextsvc.infra.queue import after_commit

SYNC_WARM_POOL = "profiles.tasks.sync_warm_pool"


def sync_warm_pool(profile_name: str) -> None:
    after_commit(SYNC_WARM_POOL, profile_name)

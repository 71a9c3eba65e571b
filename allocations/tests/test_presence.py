"""Whether a watcher vouches for a pool's leftovers (selectors.watcher_vouches): only a
fresh heartbeat of a watcher of this namespace group holding the pool's shard does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from allocations.observe import HEARTBEAT_SECONDS, shard_of
from allocations.selectors import watcher_vouches
from contextsvc.core.models import ProcessHeartbeat

pytestmark = pytest.mark.django_db


def heartbeat(*, group: str, shards: list[int], age: float = 0.0, pid: int = 1) -> None:
    at = timezone.now() - timedelta(seconds=age)
    ProcessHeartbeat.objects.create(kind=ProcessHeartbeat.Kind.WATCHER, hostname="h", pid=pid,
                                    started_at=at, last_seen=at, group=group, shards=shards)  # fmt: skip


@pytest.fixture
def two_shards(settings: Any) -> tuple[str, str]:
    settings.CS_ALLOWED_NAMESPACES = ["team1", "team2"]
    settings.CS_WATCHER_SHARDS = 2
    # Two pools, one on each shard.
    names = [f"pool-{i}" for i in range(20)]
    first = next(n for n in names if shard_of(("team1", n), 2) == 0)
    second = next(n for n in names if shard_of(("team1", n), 2) == 1)
    return first, second


def test_only_the_pools_shard_its_group_and_a_fresh_heartbeat_vouch(two_shards: Any) -> None:
    on_zero, on_one = two_shards

    assert (watcher_vouches(namespace="team1", name=on_zero),
            watcher_vouches(namespace="team1", name=on_one)) == (False, False)  # fmt: skip

    heartbeat(group="team1,team2", shards=[0])
    assert (watcher_vouches(namespace="team1", name=on_zero),
            watcher_vouches(namespace="team1", name=on_one)) == (True, False)  # fmt: skip
    # Not a namespace this service manages: nobody watches it.
    assert watcher_vouches(namespace="elsewhere", name=on_zero) is False

    # Another group's watcher, a standby (no shards), a stale one: none vouches for shard 1.
    heartbeat(group="team3", shards=[1], pid=2)
    heartbeat(group="team1,team2", shards=[], pid=3)
    heartbeat(group="team1,team2", shards=[1], age=2 * HEARTBEAT_SECONDS + 1, pid=4)
    assert watcher_vouches(namespace="team1", name=on_one) is False

    heartbeat(group="team1,team2", shards=[1], age=HEARTBEAT_SECONDS, pid=5)
    assert watcher_vouches(namespace="team1", name=on_one) is True

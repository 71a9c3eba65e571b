"""A team's share of the cluster (docs/operations.md, "Teams and quotas"): how many live
allocations, running sandboxes and bytes of requested storage it may hold (the storage of
its named contexts and agent workspaces included: ``teams.storage_in_use``).

Called inside the transaction that makes the change, which locks the team's row first
(``team_lock``): two callers of one team count one after the other, each seeing what the
other committed, so no burst passes a limit. Warm-pool claims count as sandboxes of the
team that claims them."""

from __future__ import annotations

from allocations import selectors
from contextsvc.core.limits import LIVE_ALLOCATIONS, LIVE_SANDBOXES
from contextsvc.core.models import Team
from contextsvc.core.teams import quota_check, storage_check


def quotas_check(team: Team, *, allocations: int = 0, sandboxes: int = 0, storage: int = 0) -> None:
    """Refuse a change that adds ``allocations``, ``sandboxes`` and ``storage`` (bytes) to
    what the team holds, when it would pass one of its limits (the first, in this order)."""
    if LIVE_ALLOCATIONS.of(team) is not None or LIVE_SANDBOXES.of(team) is not None:
        live, running = selectors.team_pools(team_id=team.pk)
        quota_check(team, LIVE_ALLOCATIONS, in_use=live, more=allocations)
        quota_check(team, LIVE_SANDBOXES, in_use=running, more=sandboxes)
    storage_check(team, more=storage)  # counted only when the team has a storage limit

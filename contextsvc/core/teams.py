"""Teams: whose an object is, what a caller may reach, and the share a team may hold.

Every allocation, named context, agent workspace and approval request records the team of
whoever made it. A caller reaches only its own team's objects; one with the ``admin`` scope
(an admin client or person) reaches every team's. Another team's object is answered as if
it did not exist (404), so a caller learns nothing of other teams' names beyond the
contract's 409 for a name already taken, which never says whose.

Quotas are the team row's limits. A service checks one inside the transaction that would go
past it, after ``team_lock``: concurrent callers of one team queue on the row, so no burst
gets past a limit by counting before another's insert commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from contextsvc.core.auth import ApiPrincipal, principal_scopes
from contextsvc.core.limits import STORAGE, Limit
from contextsvc.core.models import Scope, Team, TeamMember, default_team_pk
from contextsvc.infra.errors import Forbidden

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Reach:
    """The teams whose objects a caller may see and change: one (``team_id``) or every
    team's (``team_id`` None: admins, and the service itself)."""

    team_id: int | None

    def narrow(self, objects: QuerySet[M]) -> QuerySet[M]:
        """``objects`` (of a model with a ``team`` key) cut to what this caller reaches."""
        return objects if self.team_id is None else objects.filter(team_id=self.team_id)

    def allows(self, team_id: int | None) -> bool:
        return self.team_id is None or (team_id is not None and self.team_id == team_id)


EVERY_TEAM = Reach(None)


def sees_every_team(reach: Reach) -> bool:
    """Whether a caller sees every row, the platform's included (an audit entry without a
    team, a live event of any team's row): it reaches every team, or there is only one."""
    return reach.team_id is None or Team.objects.count() == 1


MEMBERSHIP_CACHE = "_cs_team_id"


def team_id_of(principal: Any) -> int:
    """The team a caller belongs to (and whose objects it makes): an API client's own, a
    person's membership, the default team for a person with none."""
    if isinstance(principal, ApiPrincipal):
        return principal.team_id
    cached = getattr(principal, MEMBERSHIP_CACHE, None)
    if cached is not None:
        return int(cached)
    found = TeamMember.objects.filter(user_id=principal.pk).values_list("team_id", flat=True)
    team_id = found.first() or default_team_pk()
    setattr(principal, MEMBERSHIP_CACHE, team_id)
    return team_id


def reach_of(principal: Any) -> Reach:
    if Scope.ADMIN in principal_scopes(principal):
        return EVERY_TEAM
    return Reach(team_id_of(principal))


# --- Quotas -----------------------------------------------------------------------------------


class QuotaExceeded(Forbidden):
    code = "quota_exceeded"


# The bytes of storage a team's objects request, one counter per app that makes PVCs for
# a team (sandbox pools, named contexts, agent workspaces), each added in its AppConfig's
# ready(): the storage quota is their sum, and this layer knows none of those models.
StorageCounter = Callable[[int], int]
_storage_counters: dict[str, StorageCounter] = {}


def storage_counter(app: str, count: StorageCounter) -> None:
    _storage_counters[app] = count


def storage_in_use(team_id: int) -> int:
    """Every byte of storage the team's live objects request, over every kind."""
    return sum(count(team_id) for count in _storage_counters.values())


def storage_check(team: Team, *, more: int) -> None:
    """Refuse (403) ``more`` bytes of storage past the team's limit (``team`` is locked)."""
    if STORAGE.of(team) is not None and more > 0:
        quota_check(team, STORAGE, in_use=storage_in_use(team.pk), more=more)


def check_team_namespace(team_id: int | None, namespace: str) -> None:
    """Refuse (403) a namespace the team may not make objects in; a team with no list may
    use every namespace the service manages."""
    team = (
        Team.objects.filter(pk=team_id).only("name", "namespaces").first()
        if team_id is not None
        else None
    )
    if team is None or not team.namespaces or namespace in team.namespaces:
        return
    raise Forbidden(
        f'team "{team.name}" may not use namespace "{namespace}" '
        f"(its namespaces: {', '.join(team.namespaces)})"
    )


def team_lock(team_id: int | None) -> Team:
    """The team's row, locked until the transaction ends: call it first in a transaction
    that checks a quota, so that whatever it counts stays true until it commits."""
    if team_id is None:
        raise ValueError("an object without a team has no quota to check")
    # NO KEY UPDATE: it still queues the team's quota checks one after the other, but not
    # the key-share lock every insert of a row naming the team takes at commit (an audit
    # entry's deferred foreign key). FOR UPDATE made a scale waiting for an allocation's
    # row and a release holding it, auditing, wait for each other: a deadlock.
    return Team.objects.select_for_update(no_key=True).get(pk=team_id)


def quota_check(team: Team, quota: Limit, *, in_use: int, more: int) -> None:
    """Refuse (403) when ``more`` on top of ``in_use`` would pass the team's limit; a
    change that adds nothing (``more`` ≤ 0) is never refused, even over a lowered limit."""
    limit = quota.of(team)
    if limit is None or more <= 0 or in_use + more <= limit:
        return
    error = QuotaExceeded(
        f'team "{team.name}" is limited to {quota.show(limit)} {quota.label}; '
        f"{quota.show(in_use)} in use, this request needs {quota.show(more)} more"
    )
    error.details = {"quota": quota.field, "limit": limit, "inUse": in_use, "requested": more}
    raise error

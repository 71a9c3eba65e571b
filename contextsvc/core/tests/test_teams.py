"""The kernel of teams: who reaches what, and how a quota refuses."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from contextsvc.core import services
from contextsvc.core.auth import ApiPrincipal
from contextsvc.core.limits import LIVE_SANDBOXES as SANDBOXES
from contextsvc.core.limits import STORAGE
from contextsvc.core.models import DEFAULT_TEAM, Team, default_team_pk
from contextsvc.core.teams import EVERY_TEAM, QuotaExceeded, Reach, quota_check, reach_of

pytestmark = pytest.mark.django_db


def test_a_token_reaches_its_team_and_an_admin_every_team() -> None:
    research = Team.objects.create(name="research")
    member = ApiPrincipal(client_id=1, name="sh", team_id=research.pk, scopes=frozenset({"read"}))
    admin = ApiPrincipal(client_id=2, name="ops", team_id=research.pk, scopes=frozenset({"admin"}))
    assert reach_of(member) == Reach(research.pk)
    assert reach_of(admin) == EVERY_TEAM
    assert (Reach(research.pk).allows(research.pk), Reach(research.pk).allows(research.pk + 1)) == (
        True,
        False,
    )
    # A row with no team is reached by nobody but every-team callers (fails closed).
    assert (Reach(research.pk).allows(None), EVERY_TEAM.allows(None)) == (False, True)


def test_a_person_without_a_membership_is_in_the_default_team() -> None:
    person = User.objects.create_user("bob")
    assert reach_of(person) == Reach(default_team_pk())
    assert Team.objects.get(pk=default_team_pk()).name == DEFAULT_TEAM
    research = services.team_create(name="research", actor="system:test")
    services.person_set_team(user=person, team=research, actor="system:test")
    assert reach_of(person) == Reach(research.pk)


def test_a_quota_refuses_only_what_would_pass_it() -> None:
    team = Team(name="small", max_live_sandboxes=5, max_storage_bytes=3 * 1024**3)
    quota_check(team, SANDBOXES, in_use=4, more=1)  # exactly at the limit
    quota_check(team, SANDBOXES, in_use=9, more=0)  # over a lowered limit, adding nothing
    quota_check(team, SANDBOXES, in_use=9, more=-2)  # giving back
    quota_check(Team(name="free"), SANDBOXES, in_use=10**6, more=10**6)  # no limit
    with pytest.raises(QuotaExceeded) as refused:
        quota_check(team, STORAGE, in_use=2 * 1024**3, more=2 * 1024**3)
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        403,
        "quota_exceeded",
        'team "small" is limited to 3Gi of requested storage; 2Gi in use, '
        "this request needs 2Gi more",
    )
    assert refused.value.details == {
        "quota": "max_storage_bytes",
        "limit": 3 * 1024**3,
        "inUse": 2 * 1024**3,
        "requested": 2 * 1024**3,
    }

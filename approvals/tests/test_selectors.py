"""Reads in approvals/selectors.py: which grants are active and apply, what an agent may
see, the reviewers' queue, and the request as agents and reviewers see it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import selectors, shapes
from approvals.models import Grant, Status
from approvals.tests.factories import ApprovalRequestFactory, GrantFactory
from contextsvc.core.models import Team, default_team_pk
from contextsvc.core.teams import EVERY_TEAM, Reach
from contextsvc.infra.errors import InvalidRequest, NotFound
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db


def test_active_grants_are_neither_revoked_nor_expired_and_apply_by_scope() -> None:
    now = timezone.now()
    everywhere = GrantFactory.create(rule="shell(pip install:*)")
    here = GrantFactory.create(
        rule="shell(npm ci:*)", scope=Grant.Scope.CONTEXT, context_id="ctx-1"
    )
    until_later = GrantFactory.create(rule="shell(make:*)", expires_at=now + timedelta(hours=1))
    GrantFactory.create(rule="shell(npm install:*)", scope=Grant.Scope.CONTEXT, context_id="ctx-2")
    GrantFactory.create(rule="shell(cargo:*)", agent_type="other-agent")
    GrantFactory.create(rule="shell(go:*)", revoked_at=now, revoked_by="user:alice")
    GrantFactory.create(rule="shell(mvn:*)", expires_at=now - timedelta(seconds=1))

    # Another team's grant of the same agent type allows nothing of this team's agents.
    billing = Team.objects.create(name="billing")
    theirs = GrantFactory.create(rule="shell(rake:*)", team=billing)

    ours = Reach(default_team_pk())
    applying = selectors.grant_list_active_for(
        agent_type="data-agent", context_id="ctx-1", team_id=default_team_pk()
    )
    active = selectors.grant_list(reach=ours, active=True)

    assert {grant.rule for grant in applying} == {everywhere.rule, here.rule, until_later.rule}
    assert [grant.rule for grant in active] == [
        "shell(cargo:*)",
        "shell(npm install:*)",
        "shell(make:*)",
        "shell(npm ci:*)",
        "shell(pip install:*)",
    ]
    assert selectors.grant_list(reach=ours).count() == 7
    assert list(selectors.grant_list(reach=Reach(billing.pk))) == [theirs]
    assert selectors.grant_list(reach=EVERY_TEAM).count() == 8
    assert list(
        selectors.grant_list_active_for(
            agent_type="data-agent", context_id="ctx-1", team_id=billing.pk
        )
    ) == [theirs]


def test_an_agent_gets_only_its_own_requests() -> None:
    mine = ApprovalRequestFactory.create(requested_by="api:agent-1")
    theirs = ApprovalRequestFactory.create(requested_by="api:agent-2")

    with pytest.raises(NotFound) as excinfo:
        selectors.approval_get(request_id=theirs.pk, reach=EVERY_TEAM, requested_by="api:agent-1")

    assert excinfo.value.message == f'approval request "{theirs.pk}" not found'
    assert (
        selectors.approval_get(request_id=theirs.pk, reach=EVERY_TEAM, requested_by=None) == theirs
    )
    assert list(selectors.approval_list(reach=EVERY_TEAM, requested_by="api:agent-1")) == [mine]
    assert set(selectors.approval_list(reach=EVERY_TEAM, requested_by=None)) == {mine, theirs}


def test_approval_list_filters_and_refuses_an_unknown_status() -> None:
    first = ApprovalRequestFactory.create(context_id="c1", allocation="pool-a")
    ApprovalRequestFactory.create(context_id="c2", status=Status.DENIED)

    assert list(selectors.approval_list(reach=EVERY_TEAM, context_id="c1")) == [first]
    assert list(
        selectors.approval_list(reach=EVERY_TEAM, allocation="pool-a", status="pending")
    ) == [first]
    assert list(selectors.approval_list(reach=EVERY_TEAM, agent_type="other-agent")) == []
    with pytest.raises(InvalidRequest) as excinfo:
        selectors.approval_list(reach=EVERY_TEAM, status="nope")
    assert excinfo.value.message == (
        "status must be one of pending, approved, denied, expired, cancelled"
    )


def test_the_queue_is_what_waits_nearest_deadline_first() -> None:
    now = timezone.now()
    later = ApprovalRequestFactory.create(deadline=now + timedelta(minutes=9))
    sooner = ApprovalRequestFactory.create(deadline=now + timedelta(minutes=1))
    ApprovalRequestFactory.create(status=Status.APPROVED, deadline=now + timedelta(seconds=30))

    assert list(selectors.approval_list_pending(reach=EVERY_TEAM)) == [sooner, later]


@pytest.mark.parametrize(
    ("status", "decision"),
    [
        (Status.PENDING, None),
        (Status.APPROVED, "allow"),
        (Status.DENIED, "deny"),
        (Status.EXPIRED, "deny"),
        (Status.CANCELLED, "deny"),
    ],
)
def test_a_request_tells_the_agent_what_to_do(status: str, decision: str | None) -> None:
    request = ApprovalRequestFactory.create(status=status)

    shown = shapes.approval_json(request)

    assert (shown["id"], shown["status"], shown["decision"]) == (str(request.pk), status, decision)


def test_a_request_past_its_deadline_reads_as_expired_and_the_read_writes_nothing() -> None:
    deadline = timezone.now() - timedelta(seconds=1)
    request = ApprovalRequestFactory.create(deadline=deadline)

    with kept():
        shown = shapes.approval_json(
            selectors.approval_get(request_id=request.pk, reach=EVERY_TEAM)
        )

    assert (
        shown["status"],
        shown["decision"],
        shown["decidedAt"],
        shown["decidedBy"],
        shown["reason"],
    ) == ("expired", "deny", deadline.isoformat(), "system:approvals", "deadline passed")
    # Until beat's task (or a late decision) expires it, the row is as the agent asked it.
    request.refresh_from_db()
    assert (request.status, request.decided_at, request.decided_by) == (Status.PENDING, None, "")

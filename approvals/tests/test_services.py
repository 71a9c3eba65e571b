"""Decisions, grants and expiry in approvals/services/: one decision per request whoever
races for it, the decision dispatch the API and the dashboard share, and what a grant
may allow."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from approvals.models import ApprovalRequest, Grant, Status
from approvals.services.check import CheckResult, approval_check
from approvals.services.decisions import approval_approve_similar, approval_decide
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.models import AuditEntry
from contextsvc.infra.errors import Conflict, InvalidRequest
from tests.support.unchanged import kept

pytestmark = pytest.mark.usefixtures("data_agent")


def check(command: str, context: str = "ctx-1") -> CheckResult:
    return approval_check(
        operation={"kind": "shell", "command": command},
        context_id=context,
        agent_type="data-agent",
        actor="api:agent-1",
    )


def pending(command: str, context: str = "ctx-1") -> ApprovalRequest:
    result = check(command, context)
    assert result.decision == "ask"
    assert result.request is not None
    return result.request


@pytest.mark.django_db(transaction=True)
def test_concurrent_deciders_produce_exactly_one_decision() -> None:
    request_id = pending("pip install pandas").pk
    deciders = 6
    barrier = threading.Barrier(deciders)
    results: list[tuple[str, str]] = []

    def decide(index: int) -> None:
        barrier.wait()
        decision = "approve" if index % 2 else "deny"
        try:
            approval_decide(request_id=request_id, actor=f"api:approver-{index}", decision=decision)
            results.append(("decided", decision))
        except Conflict as exc:
            results.append((exc.message, decision))
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(deciders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    winners = [decision for outcome, decision in results if outcome == "decided"]
    assert len(winners) == 1
    final = ApprovalRequest.objects.get()
    assert final.status == {"approve": Status.APPROVED, "deny": Status.DENIED}[winners[0]]
    # The others are told how it was decided.
    assert sorted(outcome for outcome, _ in results) == [
        f"approval request {request_id} is already {final.status}"
    ] * 5 + ["decided"]
    assert AuditEntry.objects.filter(action__in=["approval.approve", "approval.deny"]).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("decision", "extra", "status", "action"),
    [
        ("approve", {}, Status.APPROVED, "approval.approve"),
        ("deny", {}, Status.DENIED, "approval.deny"),
        ("approve_similar", {"scope": "context"}, Status.APPROVED, "approval.approve"),
    ],
)
def test_approval_decide_makes_each_decision(
    decision: str, extra: dict[str, Any], status: str, action: str
) -> None:
    request = ApprovalRequestFactory.create()

    decided = approval_decide(
        request_id=request.pk, actor="user:alice", decision=decision, reason="checked", **extra
    )

    assert (decided.pk, decided.status, decided.decided_by, decided.reason) == (
        request.pk,
        status,
        "user:alice",
        "checked",
    )
    assert list(
        AuditEntry.objects.filter(target=str(request.pk)).values_list("action", "actor")
    ) == [(action, "user:alice")]
    grants = list(Grant.objects.values_list("rule", "scope", "context_id", "source"))
    if decision == "approve_similar":
        assert decided.grant is not None
        assert grants == [("shell(pip install pandas:*)", "context", "ctx-1", request.pk)]
    else:
        assert decided.grant is None
        assert grants == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("decision", "extra", "message"),
    [
        ("maybe", {}, "decision must be approve, deny, approve_edited or approve_similar"),
        ("approve_similar", {}, "scope is required"),
        ("approve_similar", {"scope": "everyone"}, "scope must be context or agent_type"),
    ],
)
def test_approval_decide_refuses_what_it_cannot_do_and_changes_nothing(
    decision: str, extra: dict[str, Any], message: str
) -> None:
    request = ApprovalRequestFactory.create()

    with kept(), pytest.raises(InvalidRequest) as excinfo:
        approval_decide(request_id=request.pk, actor="user:alice", decision=decision, **extra)

    assert excinfo.value.message == message


@pytest.mark.django_db
def test_agent_type_grants_cover_every_context_until_they_expire() -> None:
    approval_approve_similar(
        request_id=pending("pip install pandas").pk,
        actor="user:alice",
        scope="agent_type",
        rule="shell(pip install:*)",
    )

    assert check("pip install numpy", context="elsewhere").decision == "allow"
    Grant.objects.update(expires_at="2000-01-01T00:00:00Z")
    assert check("pip install numpy", context="elsewhere").decision == "ask"


@pytest.mark.django_db
def test_a_reviewer_rule_must_match_the_operation() -> None:
    request = pending("pip install pandas")

    with kept(), pytest.raises(InvalidRequest) as excinfo:
        approval_approve_similar(
            request_id=request.pk, actor="user:alice", scope="context", rule="shell(npm:*)"
        )

    assert (
        excinfo.value.message == "rule 'shell(npm:*)' does not match the operation it would approve"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rule", "kind"),
    [
        ("shell(*)", "shell"),
        ("shell", "shell"),
        ("file(write:**)", "file"),
        ("file(read:/**)", "file"),
        ("network(outbound:*)", "network"),
    ],
)
def test_a_grant_must_name_what_it_allows(rule: str, kind: str) -> None:
    request = pending("pip install pandas")

    with kept(), pytest.raises(InvalidRequest) as excinfo:
        approval_approve_similar(
            request_id=request.pk, actor="user:alice", scope="context", rule=rule
        )

    assert excinfo.value.message == (
        f"rule {rule!r} would allow every {kind} operation; a grant must name what it allows"
    )


@pytest.mark.django_db
def test_a_decision_after_the_deadline_expires_the_request_instead() -> None:
    request = ApprovalRequestFactory.create(deadline="2000-01-01T00:00:00Z")

    with pytest.raises(Conflict) as excinfo:
        approval_decide(request_id=request.pk, actor="user:alice", decision="approve")

    assert excinfo.value.message == f"approval request {request.pk} is already expired"
    request.refresh_from_db()
    assert (request.status, request.decided_by, request.reason) == (
        Status.EXPIRED,
        "system:approvals",
        "deadline passed",
    )
    assert list(
        AuditEntry.objects.filter(target=str(request.pk)).values_list("action", flat=True)
    ) == ["approval.expire"]

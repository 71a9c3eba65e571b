"""The two-person rule (a profile's ``approvals.twoPersonRule``): a high-risk operation
needs two distinct approvers, neither of them the one who asked; partial approval is
visible, and nothing lets one person through alone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from approvals.models import ApprovalRequest, Status
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db(transaction=True)]

RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}}
HIGH = "cp data.csv /tmp/data.csv"  # a write outside the context's directory


@pytest.fixture(autouse=True)
def careful_agent() -> None:
    SandboxProfileFactory.create(
        name="careful-agent", rules=RULES, approval_policy={"twoPersonRule": True}
    )


def ask(agent: ApiClient, command: str) -> dict[str, Any]:
    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "careful-agent",
            "operation": {"kind": "shell", "command": command},
        },
    )
    assert response.status_code == 202, response.json()
    return dict(response.json())


def decide(reviewer: ApiClient, request_id: str, body: dict[str, Any]) -> Any:
    return reviewer.post(f"/v1/approvals/{request_id}/decision", body)


def test_a_high_risk_operation_needs_two_distinct_approvers(
    agent: ApiClient, approver: ApiClient
) -> None:
    bob = ApiClient(issue_token("bob", ["approver"]))
    asked = ask(agent, HIGH)
    assert (asked["risk"], asked["approvalsRequired"], asked["approvals"]) == ("high", 2, [])

    first = decide(approver, asked["id"], {"decision": "approve"})

    assert first.status_code == 200
    body = first.json()
    assert (body["status"], body["decision"], body["decidedBy"]) == ("pending", None, None)
    assert [signoff["by"] for signoff in body["approvals"]] == ["api:alice"]
    assert agent.get(f"/v1/approvals/{asked['id']}").json()["status"] == "pending"
    assert AuditEntry.objects.get(action="approval.signoff").payload == {
        "approvals": 1,
        "required": 2,
        "operation": HIGH,
        "via": "api",
    }

    # The same approver again is not a second person: refused, nothing written.
    before = rows()
    again = decide(approver, asked["id"], {"decision": "approve"})
    assert (again.status_code, again.json()) == (
        409,
        {
            "error": "conflict",
            "message": f"api:alice has already approved approval request {asked['id']}: it "
            "needs another approver",
        },
    )
    assert rows() == before

    second = decide(bob, asked["id"], {"decision": "approve", "reason": "checked"})

    assert second.status_code == 200
    body = second.json()
    assert (body["status"], body["decision"], body["decidedBy"], body["reason"]) == (
        "approved",
        "allow",
        "api:bob",
        "checked",
    )
    assert [signoff["by"] for signoff in body["approvals"]] == ["api:alice", "api:bob"]
    assert AuditEntry.objects.get(action="approval.approve").payload == {
        "status": "approved",
        "reason": "checked",
        "operation": HIGH,
        "approvers": ["api:alice", "api:bob"],
        "via": "api",
    }


def test_one_approval_is_enough_below_high_risk(agent: ApiClient, approver: ApiClient) -> None:
    asked = ask(agent, "make build")
    assert (asked["risk"], asked["approvalsRequired"]) == ("medium", 1)

    decided = decide(approver, asked["id"], {"decision": "approve"}).json()

    assert (decided["status"], [a["by"] for a in decided["approvals"]]) == (
        "approved",
        ["api:alice"],
    )


def test_the_requester_never_approves_its_own_request() -> None:
    both = ApiClient(issue_token("agent-and-approver", ["agent", "approver"]))
    asked = ask(both, "pip install pandas")
    before = rows()

    for body in (
        {"decision": "approve"},
        {"decision": "approve_similar", "scope": "context"},
        {"decision": "approve_edited", "operation": {"kind": "shell", "command": "ls"}},
    ):
        refused = decide(both, asked["id"], body)
        assert (refused.status_code, refused.json()) == (
            403,
            {
                "error": "forbidden",
                "message": "api:agent-and-approver asked for this operation and cannot approve it",
            },
        )
    assert rows() == before
    # Withdrawing or denying its own request stays possible.
    assert decide(both, asked["id"], {"decision": "deny"}).json()["status"] == "denied"


def test_a_person_who_asked_through_the_api_cannot_approve_it_in_the_dashboard() -> None:
    ensure_role_groups()
    ada = user_set_role(
        user=User.objects.create_user("ada", password="x" * 16), role="admin", actor="user:test"
    )
    browser = Client()
    browser.force_login(ada)
    asked = browser.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "careful-agent",
            "operation": {"kind": "shell", "command": HIGH},
        },
        content_type="application/json",
    ).json()
    assert asked["requestedBy"] == "user:ada"
    before = rows()

    refused = browser.post(
        f"/approvals/{asked['id']}/decide/",
        {"decision": "approve"},
        headers={"Accept": "application/json"},
    )

    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "forbidden",
            "message": "user:ada asked for this operation and cannot approve it",
        },
    )
    assert rows() == before


def test_one_denial_ends_a_half_approved_request(agent: ApiClient, approver: ApiClient) -> None:
    bob = ApiClient(issue_token("bob", ["approver"]))
    asked = ask(agent, HIGH)
    decide(approver, asked["id"], {"decision": "approve"})

    denied = decide(bob, asked["id"], {"decision": "deny", "reason": "not to /tmp"}).json()

    assert (denied["status"], denied["decision"], denied["decidedBy"]) == (
        "denied",
        "deny",
        "api:bob",
    )
    assert [a["by"] for a in denied["approvals"]] == ["api:alice"]
    assert ApprovalRequest.objects.get().status == Status.DENIED


def test_a_two_person_operation_is_never_allowed_as_similar(
    agent: ApiClient, approver: ApiClient
) -> None:
    asked = ask(agent, HIGH)
    before = rows()

    refused = decide(approver, asked["id"], {"decision": "approve_similar", "scope": "context"})

    assert (refused.status_code, refused.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "an operation that needs two approvers is approved once, never allowed "
            "as similar",
        },
    )
    assert rows() == before

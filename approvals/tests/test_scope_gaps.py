"""Scope gaps a review traced in code (issue 31, finding 4), each refused with nothing
changed: a token that reads every request cancels only its own; an agent's token reads
only its own agent types' workspaces and contexts; a person and an API client they created
are one approver; a WebSocket stops hearing the queue once its person may not."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from allocations.models import Phase, Strategy
from allocations.tests.factories import AllocationFactory
from approvals.models import ApprovalRequest, Status
from contextsvc.core import services as core_services
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db(transaction=True)]

RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}}
HIGH = "cp data.csv /tmp/data.csv"


@pytest.fixture(autouse=True)
def profiles() -> None:
    SandboxProfileFactory.create(name="data-agent", rules=RULES)
    SandboxProfileFactory.create(
        name="careful-agent", rules=RULES, approval_policy={"twoPersonRule": True}
    )


def ask(agent: ApiClient, agent_type: str = "data-agent", command: str = "cat notes.txt") -> Any:
    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": agent_type,
            "operation": {"kind": "shell", "command": command},
        },
    )
    assert response.status_code == 202, response.json()
    return response.json()


def test_a_token_that_reads_every_request_cancels_only_its_own(agent: ApiClient) -> None:
    other = ApiClient(issue_token("reader-agent", ["agent", "read"]))
    theirs = ask(agent)
    before = rows()

    refused = other.post(f"/v1/approvals/{theirs['id']}/cancel")

    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "forbidden",
            "message": "api:reader-agent may cancel only the requests it asked: withdrawing "
            "another's needs the approver scope",
        },
    )
    assert rows() == before
    assert ApprovalRequest.objects.get(pk=theirs["id"]).status == Status.PENDING
    # Its own it cancels; an approver cancels anyone's.
    mine = ask(other)
    assert other.post(f"/v1/approvals/{mine['id']}/cancel").json()["status"] == "cancelled"
    approver = ApiClient(issue_token("alice", ["approver"]))
    assert approver.post(f"/v1/approvals/{theirs['id']}/cancel").json()["status"] == "cancelled"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/agent-workspaces/ns-a/other-agent/contexts",
        "/v1/agent-workspaces/ns-a/other-agent",
    ],
)
def test_an_agents_token_reads_only_its_own_agent_types_workspaces(path: str) -> None:
    agent = ApiClient(issue_token("weather-bot", ["agent"], agent_types=["weather-service"]))

    refused = agent.get(path)

    # Before the workspace is even looked up: whether it exists is not the agent's business.
    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "forbidden",
            "message": 'API client "weather-bot" may not act for agent type "other-agent"',
        },
    )
    # A reader of every workspace is not limited (404: there is none).
    reader = ApiClient(issue_token("dashboard", ["read"]))
    assert reader.get(path).status_code == 404


def _approver(username: str) -> User:
    ensure_role_groups()
    made = User.objects.create_user(username, password="x" * 16)
    return user_set_role(user=made, role="approver", actor="user:test")


def _client_of(person: User, name: str, scopes: list[str]) -> ApiClient:
    client = core_services.api_client_create(
        name=name, scopes=scopes, agent_types=["*"], actor="user:test", created_by=person
    )
    _, raw = core_services.api_token_issue(client=client, actor="user:test")
    return ApiClient(raw)


def test_a_person_and_an_api_client_they_created_are_one_approver(agent: ApiClient) -> None:
    alice = _approver("alice")
    browser = Client()
    browser.force_login(alice)
    bot = _client_of(alice, "alice-bot", ["approver"])
    asked = ask(agent, "careful-agent", HIGH)
    first = browser.post(
        f"/approvals/{asked['id']}/decide/",
        {"decision": "approve", "version": asked["version"]},
        headers={"Accept": "application/json"},
    ).json()
    assert [signoff["by"] for signoff in first["approvals"]] == ["user:alice"]
    before = rows()

    second = bot.post(f"/v1/approvals/{asked['id']}/decision", {"decision": "approve"})

    assert (second.status_code, second.json()["message"]) == (
        409,
        f"api:alice-bot is user:alice, who has already approved approval request "
        f"{asked['id']} as user:alice: it needs another approver",
    )
    assert rows() == before
    assert ApprovalRequest.objects.get(pk=asked["id"]).status == Status.PENDING


def test_a_person_does_not_approve_what_a_client_they_created_asked() -> None:
    bob = _approver("bob")
    browser = Client()
    browser.force_login(bob)
    bots_agent = _client_of(bob, "bob-agent", ["agent"])
    asked = ask(bots_agent)
    before = rows()

    refused = browser.post(
        f"/approvals/{asked['id']}/decide/",
        {"decision": "approve"},
        headers={"Accept": "application/json"},
    )

    assert (refused.status_code, refused.json()["message"]) == (
        403,
        "user:bob is user:bob, who asked for this operation (as api:bob-agent), and cannot "
        "approve it",
    )
    assert rows() == before


def test_an_agent_cannot_borrow_another_agent_types_topology_for_its_risk_notes(
    agent: ApiClient,
) -> None:
    # A dedicated pool of data-agent: a write there is its sandbox's own volume. An agent
    # of careful-agent naming it is not in it.
    AllocationFactory.create(
        name="pool-d", replicas=2, strategy=Strategy.DEDICATED, phase=Phase.READY,
        profile_name="data-agent",
    )  # fmt: skip
    own = agent.post(
        "/v1/approvals",
        {"contextId": "ctx-1", "agentType": "data-agent", "allocation": "pool-d",
         "operation": {"kind": "shell", "command": "echo hi > /workspace/out.txt"}},
    ).json()  # fmt: skip
    borrowed = agent.post(
        "/v1/approvals",
        {"contextId": "ctx-1", "agentType": "careful-agent", "allocation": "pool-d",
         "operation": {"kind": "shell", "command": "echo hi > /workspace/out.txt"}},
    ).json()  # fmt: skip

    assert own["riskNotes"][-1] == (
        "writes to this sandbox's own ReadWriteOnce workspace (pool pool-d has one per "
        "sandbox, 2 sandboxes)"
    )
    assert [note for note in borrowed["riskNotes"] if "pool-d" in note] == [
        'names allocation "pool-d", which runs agent type "data-agent", not this one: its '
        "topology is not this request's"
    ]

"""Approval requests belong to the requesting agent's team: another team's reviewers and
agents find no such request, for every verb; a team's limit of pending requests holds under
8 concurrent agents, and rules still decide at once when it is reached."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from approvals.models import ApprovalRequest, Status
from approvals.tests.test_api import ask
from contextsvc.core import services
from contextsvc.core.models import AuditEntry, Team
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("data_agent")]


def team(name: str, **limits: int) -> Team:
    made = services.team_create(name=name, actor="system:test")
    return services.team_set_quotas(team=made, actor="system:test", **limits) if limits else made


def test_another_teams_request_is_absent_for_every_verb() -> None:
    research, billing = team("research"), team("billing")
    agent = ApiClient(issue_token("research-agent", ["agent"], team=research))
    reviewer = ApiClient(issue_token("research-reviewer", ["approver"], team=research))
    other_agent = ApiClient(issue_token("billing-agent", ["agent"], team=billing))
    other_reviewer = ApiClient(issue_token("billing-reviewer", ["approver"], team=billing))
    admin = ApiClient(issue_token("platform", ["admin"]))
    asked = ask(agent, "pip install pandas")
    assert asked.status_code == 202
    request_id = asked.json()["id"]
    absent = {"error": "not_found", "message": f'approval request "{request_id}" not found'}

    with kept():
        for answer in (
            other_reviewer.get(f"/v1/approvals/{request_id}"),
            other_reviewer.post(
                f"/v1/approvals/{request_id}/decision", {"decision": "approve", "reason": "ok"}
            ),
            other_reviewer.post(f"/v1/approvals/{request_id}/cancel"),
            other_reviewer.get(f"/v1/approvals/{request_id}/similar"),
            other_agent.get(f"/v1/approvals/{request_id}"),
            other_agent.post(f"/v1/approvals/{request_id}/cancel"),
        ):
            assert (answer.status_code, answer.json()) == (404, absent)
        assert other_reviewer.get("/v1/approvals").json() == {"items": [], "count": 0}

    # Its own team's reviewer and an admin see it as the agent does.
    assert reviewer.get(f"/v1/approvals/{request_id}").json() == asked.json()
    assert admin.get("/v1/approvals").json()["count"] == 1
    decided = reviewer.post(
        f"/v1/approvals/{request_id}/decision", {"decision": "approve", "reason": "fine"}
    )
    assert (decided.status_code, decided.json()["status"]) == (200, "approved")
    assert ApprovalRequest.objects.get().team_id == research.pk


def test_a_burst_past_the_pending_quota_is_refused_at_exactly_the_limit() -> None:
    small = team("small", max_pending_approvals=2)
    token = issue_token("small-agent", ["agent"], team=small)
    barrier = threading.Barrier(8)
    answers: list[tuple[int, Any]] = []
    lock = threading.Lock()

    def asks(index: int) -> None:
        agent = ApiClient(token)
        barrier.wait()
        response = ask(agent, f"pip install package-{index}")
        with lock:
            answers.append((response.status_code, response.json()))

    callers = [threading.Thread(target=asks, args=(i,)) for i in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    assert sorted(status for status, _ in answers) == [202, 202, *[403] * 6]
    refusal = {
        "error": "quota_exceeded",
        "message": 'team "small" is limited to 2 pending approval requests; 2 in use, '
        "this request needs 1 more",
        "quota": "max_pending_approvals",
        "limit": 2,
        "inUse": 2,
        "requested": 1,
    }
    assert [body for status, body in answers if status == 403] == [refusal] * 6
    assert ApprovalRequest.objects.filter(team=small, status=Status.PENDING).count() == 2
    assert AuditEntry.objects.filter(action="approval.request").count() == 2
    # At the limit, a rule still decides at once (only what waits for a human is counted).
    agent = ApiClient(token)
    assert ask(agent, "ls -la").json()["decision"] == "allow"
    # Every entry of these is the team's: the queued requests and the rule's decision.
    assert list(
        AuditEntry.objects.filter(action__in=["approval.request", "approval.allow"])
        .order_by("id")
        .values_list("action", "team_id")
    ) == [("approval.request", small.pk)] * 2 + [("approval.allow", small.pk)]


def test_a_grant_allows_only_its_teams_agents_and_runs_are_read_by_their_team() -> None:
    research, billing = team("research"), team("billing")
    agent = ApiClient(issue_token("research-agent", ["agent"], team=research))
    reviewer = ApiClient(issue_token("research-reviewer", ["approver", "read"], team=research))
    other_agent = ApiClient(issue_token("billing-agent", ["agent"], team=billing))
    other_reviewer = ApiClient(issue_token("billing-reviewer", ["approver", "read"], team=billing))
    request_id = ask(agent, "pip install pandas").json()["id"]
    decided = reviewer.post(
        f"/v1/approvals/{request_id}/decision",
        {"decision": "approve_similar", "scope": "agent_type"},
    )
    grant = decided.json()["grant"]
    # The agent type's grant allows research's agents, and asks billing's as before.
    assert ask(agent, "pip install pandas --quiet").json()["decision"] == "allow"
    assert ask(other_agent, "pip install pandas --quiet").status_code == 202
    report = {
        "requestId": request_id,
        "contextId": "ctx-1",
        "command": "pip install pandas",
        "outcome": "exited",
        "exitStatus": 0,
        "durationMs": 5,
        "stdoutBytes": 0,
        "stderrBytes": 0,
        "truncated": False,
    }
    ran = agent.post("/v1/runs", report)
    assert ran.status_code == 201
    run_id = ran.json()["id"]

    with kept():
        assert other_reviewer.get("/v1/grants").json() == {"items": []}
        revoked = other_reviewer.delete(f"/v1/grants/{grant['id']}")
        assert (revoked.status_code, revoked.json()["message"]) == (
            404,
            f"grant {grant['id']} not found",
        )
        other_run = other_reviewer.get(f"/v1/runs/{run_id}")
        assert (other_run.status_code, other_run.json()["message"]) == (
            404,
            f"run {run_id} not found",
        )

    assert [item["id"] for item in reviewer.get("/v1/grants").json()["items"]] == [grant["id"]]
    assert reviewer.get(f"/v1/runs/{run_id}").json()["command"] == "pip install pandas"
    assert reviewer.delete(f"/v1/grants/{grant['id']}").status_code == 204

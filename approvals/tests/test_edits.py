"""Edit before approve: a reviewer approves their own version of an operation; the edit
is judged by the rules again (a deny rule or sources.json still wins), the agent is told
to run the edit, the request and the audit log keep both, and a run report is held to
the edit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from approvals.models import ApprovalRequest, OperationRun, Status
from approvals.selectors import operation_digest
from contextsvc.core.models import AuditEntry
from cs_agent import ApprovalClient
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("data_agent")]
SOURCES = json.loads(
    (
        Path(__file__).resolve().parents[2] / "rules" / "tests" / "fixtures" / "sources.json"
    ).read_text()
)


def ask(agent: ApiClient, operation: dict[str, Any], agent_type: str = "data-agent") -> str:
    response = agent.post(
        "/v1/approvals", {"contextId": "ctx-1", "agentType": agent_type, "operation": operation}
    )
    assert response.status_code == 202, response.json()
    return str(response.json()["id"])


def edit(reviewer: ApiClient, request_id: str, operation: Any, **extra: Any) -> Any:
    return reviewer.post(
        f"/v1/approvals/{request_id}/decision",
        {"decision": "approve_edited", "operation": operation, **extra},
    )


def shell(command: str) -> dict[str, str]:
    return {"kind": "shell", "command": command}


def test_the_agent_is_told_to_run_the_edit_and_both_are_kept(
    agent: ApiClient, approver: ApiClient
) -> None:
    request_id = ask(agent, shell("pip install pandas"))

    response = edit(approver, request_id, shell("pip install pandas==2.2.2"), reason="pin it")

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["decision"], body["decidedBy"], body["reason"]) == (
        "approved",
        "allow_edited",
        "api:alice",
        "pin it",
    )
    # What was asked stays as asked; the edit says what to run instead.
    assert (body["operation"], body["normalised"]) == (
        shell("pip install pandas"),
        "pip install pandas",
    )
    assert {key: body["edit"][key] for key in ("operation", "normalised", "risk", "by")} == {
        "operation": shell("pip install pandas==2.2.2"),
        "normalised": "pip install pandas==2.2.2",
        "risk": "high",
        "by": "api:alice",
    }
    assert body["edit"]["evaluation"]["decision"] == "ask"
    assert agent.get(f"/v1/approvals/{request_id}").json() == body
    assert [
        (entry.action, entry.payload)
        for entry in AuditEntry.objects.filter(target=request_id).order_by("id")
        if entry.action in ("approval.edit", "approval.approve")
    ] == [
        (
            "approval.edit",
            {
                "operation": "pip install pandas",
                "edited": "pip install pandas==2.2.2",
                "edited_operation": shell("pip install pandas==2.2.2"),
                "risk": "high",
            },
        ),
        (
            "approval.approve",
            {
                "status": "approved",
                "reason": "pin it",
                "operation": "pip install pandas",
                "approvers": ["api:alice"],
                "via": "api",
                "edited": "pip install pandas==2.2.2",
            },
        ),
    ]

    # The agent's client runs the edit, never what it asked.
    verdict = ApprovalClient.verdict_of(body)
    assert (verdict.allowed, verdict.edited, verdict.operation, verdict.asked) == (
        True,
        True,
        shell("pip install pandas==2.2.2"),
        shell("pip install pandas"),
    )

    # A run report is held to the edit: the command asked for is not what was approved.
    report = {
        "requestId": request_id,
        "contextId": "ctx-1",
        "outcome": "exited",
        "exitStatus": 0,
        "durationMs": 5,
        "stdoutBytes": 0,
        "stderrBytes": 0,
        "truncated": False,
    }
    mismatch = agent.post("/v1/runs", {**report, "command": "pip install pandas"})
    assert (mismatch.status_code, mismatch.json()["message"]) == (
        409,
        "the command reported is not the command that was judged",
    )
    ran = agent.post("/v1/runs", {**report, "command": "pip install pandas==2.2.2"})
    assert ran.status_code == 201
    assert ran.json()["command"] == "pip install pandas==2.2.2"
    assert ApprovalRequest.objects.get().effective_operation == shell("pip install pandas==2.2.2")
    assert operation_digest(ApprovalRequest.objects.get().effective_operation) == operation_digest(
        shell("pip install pandas==2.2.2")
    )


def test_an_edit_can_never_allow_what_the_rules_deny(agent: ApiClient, approver: ApiClient) -> None:
    SandboxProfileFactory.create(name="sourced-agent", sources=SOURCES)
    by_rule = ask(agent, shell("pip install pandas"))
    by_sources = ask(agent, shell("pip install pandas"), agent_type="sourced-agent")
    before = rows()

    denied_by_rule = edit(approver, by_rule, shell("curl https://pypi.org/simple/"))
    denied_by_sources = edit(approver, by_sources, shell("pip install pyautogui"))

    assert (denied_by_rule.status_code, denied_by_rule.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "the edited operation is denied by shell(curl:*): an edit cannot allow "
            "what the rules deny",
        },
    )
    assert (denied_by_sources.status_code, denied_by_sources.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "the edited operation is denied by "
            "package_managers.pip.blocked_packages[1]: an edit cannot allow what the rules deny",
        },
    )
    assert rows() == before


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"kind": "file", "action": "read", "path": "a"}, "an edit keeps the operation's kind (shell)"),
        (shell("pip install pandas"), "the edit is the operation as asked: approve it instead"),
        ({"kind": "shell"}, "operation.command: is required"),
        ("ls", "operation must be an object: the operation to approve instead"),
    ],
)  # fmt: skip
def test_edits_that_change_the_kind_or_nothing_are_refused(
    agent: ApiClient, approver: ApiClient, operation: Any, message: str
) -> None:
    request_id = ask(agent, shell("pip install pandas"))
    before = rows()

    refused = edit(approver, request_id, operation)

    assert (refused.status_code, refused.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )
    assert rows() == before


def test_a_file_edit_keeps_its_action_and_other_decisions_take_no_operation(
    agent: ApiClient, approver: ApiClient
) -> None:
    request_id = ask(agent, {"kind": "file", "action": "write", "path": "out/a.csv"})
    before = rows()

    wrong_action = edit(approver, request_id, {"kind": "file", "action": "delete", "path": "x"})
    stray = approver.post(
        f"/v1/approvals/{request_id}/decision",
        {"decision": "approve", "operation": {"kind": "file", "action": "write", "path": "x"}},
    )
    missing = approver.post(f"/v1/approvals/{request_id}/decision", {"decision": "approve_edited"})

    assert [r.json()["message"] for r in (wrong_action, stray, missing)] == [
        "an edit keeps a file operation's action (write)",
        "operation goes only with approve_edited",
        "operation is required with approve_edited",
    ]
    assert rows() == before
    approved = edit(approver, request_id, {"kind": "file", "action": "write", "path": "out/b.csv"})
    assert approved.json()["edit"]["normalised"] == "write /workspace/ctx-1/out/b.csv"


def test_under_the_two_person_rule_an_edit_is_the_first_approval_and_never_lowers_it(
    agent: ApiClient, approver: ApiClient
) -> None:
    SandboxProfileFactory.create(
        name="careful-agent",
        rules={"permissions": {"deny": ["shell(curl:*)"]}},
        approval_policy={"twoPersonRule": True},
    )
    bob = ApiClient(issue_token("bob", ["approver"]))
    high = ask(agent, shell("cp a.csv /tmp/a.csv"), agent_type="careful-agent")
    medium = ask(agent, shell("make build"), agent_type="careful-agent")

    # Rewritten to stay inside the context: still two approvers, as the asked one needed.
    first = edit(approver, high, shell("cp a.csv b.csv")).json()
    assert (first["status"], first["approvalsRequired"], first["edit"]["risk"]) == (
        "pending",
        2,
        "medium",
    )
    before = rows()
    again = edit(bob, high, shell("cp a.csv c.csv"), version=first["version"])
    assert (again.status_code, again.json()["message"]) == (
        409,
        f"approval request {high} already has 1 of 2 approvals: approve it as it stands, or "
        "deny it",
    )
    assert rows() == before
    # The second approver approves the edited text, naming the version that shows it.
    second = bob.post(
        f"/v1/approvals/{high}/decision", {"decision": "approve", "version": first["version"]}
    ).json()
    assert (second["status"], second["decision"], [a["by"] for a in second["approvals"]]) == (
        "approved",
        "allow_edited",
        ["api:alice", "api:bob"],
    )

    # An edit that makes a one-person operation high-risk makes it a two-person one.
    raised = edit(approver, medium, shell("make build > /tmp/build.log")).json()
    assert (raised["status"], raised["approvalsRequired"], raised["edit"]["risk"]) == (
        "pending",
        2,
        "high",
    )
    assert ApprovalRequest.objects.get(pk=medium).status == Status.PENDING


def test_an_approved_edit_runs_held_to_the_effects_of_the_edit(
    agent: ApiClient, approver: ApiClient
) -> None:
    request_id = ask(agent, shell("head notes.txt"))

    body = edit(approver, request_id, shell("head -n 3 other.txt")).json()
    polled = agent.get(f"/v1/approvals/{request_id}").json()

    effects = {
        "read": ["/workspace/ctx-1/other.txt"],
        "write": [],
        "delete": [],
        "network": [],
        "programs": ["head"],
        "hidden": [],
    }
    assert body["execution"]["effects"] == effects
    assert polled["execution"]["effects"] == effects
    # The request keeps what the asked command was judged to do.
    assert ApprovalRequest.objects.get(pk=request_id).execution["effects"]["read"] == [
        "/workspace/ctx-1/notes.txt"
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"refusedEffects": "read"}, "refusedEffects must be an array"),
        (
            {"refusedEffects": [{"action": "read", "path": "/x"}]},
            "refusedEffects[0] must be an object with action, path, error and optionally "
            "reportedBy",
        ),
        (
            {"refusedEffects": [{"action": "read", "path": "/x", "error": "e", "by": "me"}]},
            "refusedEffects[0] must be an object with action, path, error and optionally "
            "reportedBy",
        ),
        (
            {
                "refusedEffects": [
                    {"action": "network", "path": "h:443", "error": "e", "reportedBy": "kernel"}
                ]
            },
            "refusedEffects[0].reportedBy must be one of executor, program",
        ),
        (
            {"refusedEffects": [{"action": "exec", "path": "/x", "error": "e"}]},
            "refusedEffects[0].action must be one of read, write, delete, network",
        ),
        (
            {"refusedEffects": [{"action": "read", "path": 3, "error": "e"}]},
            "refusedEffects[0].path must be a string of at most 4096",
        ),
        (
            {"refusedEffects": [{"action": "read", "path": "/x", "error": "e"}] * 21},
            "refusedEffects holds at most 20 items",
        ),
        ({"sandbox": {"network": "host"}}, "sandbox.network must be one of proxy, none, pod"),
        ({"sandbox": {"gpu": "yes"}}, "sandbox.gpu is not a field of a run's sandbox"),
    ],
)
def test_a_run_report_with_bad_sandbox_fields_is_refused_and_changes_nothing(
    agent: ApiClient, extra: dict[str, Any], message: str
) -> None:
    report = _ls_report(agent)
    before = rows()

    refused = agent.post("/v1/runs", {**report, **extra})

    assert (refused.status_code, refused.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )
    assert rows() == before


def test_who_reported_a_refusal_is_kept_and_a_program_reported_it_when_unsaid(
    agent: ApiClient,
) -> None:
    said = [
        {"action": "network", "path": "evil.example:443", "error": "e", "reportedBy": "executor"},
        {"action": "read", "path": "/x", "error": "e", "reportedBy": "program"},
        {"action": "read", "path": "/y", "error": "e", "reportedBy": None},
        {"action": "write", "path": "/z", "error": "e"},
    ]

    answer = agent.post(
        "/v1/runs",
        {**_ls_report(agent), "refusedEffects": said, "sandbox": {"network": "proxy"}},
    )

    assert answer.status_code == 201, answer.json()
    run = OperationRun.objects.get()
    assert [effect["reportedBy"] for effect in run.refused_effects] == [
        "executor",
        "program",
        "program",
        "program",
    ]
    assert run.sandbox == {"network": "proxy"}


def _ls_report(agent: ApiClient) -> dict[str, Any]:
    """A run report of an immediately allowed ``ls``."""
    allowed = agent.post(
        "/v1/approvals", {"contextId": "ctx-1", "agentType": "data-agent", "operation": shell("ls")}
    ).json()
    return {
        "checkId": allowed["checkId"],
        "contextId": "ctx-1",
        "command": "ls",
        "outcome": "exited",
        "exitStatus": 0,
        "durationMs": 5,
        "stdoutBytes": 0,
        "stderrBytes": 0,
        "truncated": False,
    }

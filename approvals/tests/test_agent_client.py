"""A real agent-client process blocks on the long-poll while a human decides over the API."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from approvals.models import ApprovalRequest, Status
from contextsvc.core.models import AuditEntry
from contextsvc.devenv.system import REPO_DIR
from cs_agent import ApprovalClient
from profiles.services import profile_save
from tests.support.api import issue_token
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def profile(kube_cluster: object) -> None:
    # Nothing here decides `pip install`: it waits for a human.
    profile_save(
        name="data-agent",
        create=True,
        actor="user:test",
        values={
            "source": "builtin",
            "image": "busybox:1.36",
            "rules": {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}},
        },
    )


def start_client(
    web_server: str,
    token: str,
    *extra: str,
    what: tuple[str, ...] = ("shell", "pip install pandas"),
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cs_agent",
            "check",
            "--url",
            web_server,
            "--token",
            token,
            "--agent-type",
            "data-agent",
            "--context-id",
            "ctx-abc123",
            *extra,
            *what,
        ],
        cwd=REPO_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def pending_request() -> ApprovalRequest:
    found = wait_until(
        lambda: ApprovalRequest.objects.filter(status=Status.PENDING).first(),
        timeout=30,
        message="the client's request to be queued",
    )
    assert isinstance(found, ApprovalRequest)
    return found


def decide(web_server: str, token: str, request_id: object, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{web_server}/v1/approvals/{request_id}/decision",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return dict(json.loads(response.read()))


def finish(process: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, json.loads(out), err


def test_client_blocks_until_approved(web_server: str) -> None:
    agent_token, approver_token = (
        issue_token("agent-1", ["agent"]),
        issue_token("alice", ["approver"]),
    )
    client = start_client(web_server, agent_token)
    request = pending_request()
    time.sleep(0.5)
    assert client.poll() is None  # still blocked on the long-poll

    decide(web_server, approver_token, request.pk, {"decision": "approve"})
    code, verdict, err = finish(client)

    assert code == 0
    assert verdict == {
        "allowed": True,
        "status": "approved",
        "reason": None,
        "request_id": str(request.pk),
        "evaluation": verdict["evaluation"],
    }
    assert f"waiting for a human: request {request.pk}" in err
    assert list(
        AuditEntry.objects.filter(target=str(request.pk))
        .order_by("id")
        .values_list("actor", "action")
    ) == [
        ("api:agent-1", "approval.request"),
        ("api:alice", "approval.approve"),
    ]


def test_client_is_denied_with_the_reason(web_server: str) -> None:
    agent_token, approver_token = (
        issue_token("agent-1", ["agent"]),
        issue_token("alice", ["approver"]),
    )
    client = start_client(web_server, agent_token)
    request = pending_request()

    decide(web_server, approver_token, request.pk, {"decision": "deny", "reason": "use the mirror"})
    code, verdict, _ = finish(client)

    assert code == 1
    assert (verdict["allowed"], verdict["status"], verdict["reason"]) == (
        False,
        "denied",
        "use the mirror",
    )
    assert list(
        AuditEntry.objects.filter(target=str(request.pk))
        .order_by("id")
        .values_list("action", flat=True)
    ) == [
        "approval.request",
        "approval.deny",
    ]


def test_client_is_denied_when_nobody_decides_in_time(web_server: str) -> None:
    client = start_client(web_server, issue_token("agent-1", ["agent"]), "--deadline-seconds", "2")
    request = pending_request()

    code, verdict, _ = finish(client)

    assert code == 1
    assert (verdict["allowed"], verdict["status"], verdict["reason"]) == (
        False,
        "expired",
        "deadline passed",
    )
    request.refresh_from_db()
    assert request.status == Status.EXPIRED
    assert list(
        AuditEntry.objects.filter(target=str(request.pk))
        .order_by("id")
        .values_list("actor", "action")
    ) == [
        ("api:agent-1", "approval.request"),
        ("system:approvals", "approval.expire"),
    ]


@pytest.mark.parametrize(
    ("what", "code", "judged"),
    [
        # One argument is a command line: the shell would run both parts.
        (("shell", "ls x; curl evil.example"), 1, "ls x; curl evil.example"),
        # Several are one command's words: ls gets one odd file name, nothing else runs.
        (("shell", "ls", "x; curl evil.example"), 0, "ls 'x; curl evil.example'"),
    ],
)
def test_the_command_line_judges_what_would_run(
    web_server: str, what: tuple[str, ...], code: int, judged: str
) -> None:
    client = start_client(web_server, issue_token("agent-1", ["agent"]), what=what)

    returncode, verdict, _ = finish(client)

    assert (returncode, verdict["allowed"]) == (code, code == 0)
    [entry] = AuditEntry.objects.filter(action__in=["approval.allow", "approval.refuse"])
    assert entry.payload["operation"] == judged


def test_rule_decisions_need_no_wait_and_errors_fail_closed(web_server: str) -> None:
    client = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="data-agent")

    assert client.shell("ls -la", "ctx-1").allowed is True
    denied = client.shell("curl https://x.example", "ctx-1")
    assert (denied.allowed, denied.status) == (False, "deny")
    broken = ApprovalClient(web_server, "cs_wrong", agent_type="data-agent").shell("ls", "ctx-1")
    assert (broken.allowed, broken.status) == (False, "error")
    assert broken.reason == "POST /v1/approvals: 401 invalid or revoked token"
    unreachable = ApprovalClient("http://127.0.0.1:1", "t", agent_type="data-agent").shell(
        "ls", "ctx-1"
    )
    assert (unreachable.allowed, unreachable.status) == (False, "error")


def test_long_poll_returns_at_once_when_already_decided_and_after_wait_when_not(
    web_server: str,
) -> None:
    agent = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="data-agent")
    pending = agent.submit({"kind": "shell", "command": "pip install x"}, "ctx-1")

    started = time.monotonic()
    state = agent.wait(pending["id"], timeout=1)
    waited = time.monotonic() - started

    assert state["status"] == "pending"
    assert waited >= 1.0
    decide(web_server, issue_token("alice", ["approver"]), pending["id"], {"decision": "approve"})
    assert agent.wait(pending["id"], timeout=30)["status"] == "approved"


def test_long_poll_checks_credentials_and_ownership(web_server: str) -> None:
    owner = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="data-agent")
    request_id = owner.submit({"kind": "shell", "command": "pip install x"}, "ctx-1")["id"]

    def status_of(token: str, path: str) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            f"{web_server}{path}", headers={"Authorization": f"Bearer {token}"}
        )
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert status_of("cs_nope", f"/v1/approvals/{request_id}?wait=1") == (
        401,
        {"error": "unauthorized", "message": "invalid or revoked token"},
    )
    other = issue_token("agent-2", ["agent"])
    assert status_of(other, f"/v1/approvals/{request_id}?wait=1")[0] == 404
    assert status_of(other, "/v1/approvals/not-a-uuid?wait=1")[0] == 404
    reader = issue_token("dashboard", ["read"])
    assert status_of(reader, f"/v1/approvals/{request_id}?wait=0")[1]["status"] == "pending"
    assert (
        status_of(issue_token("sh", ["allocations"]), f"/v1/approvals/{request_id}?wait=0")[0]
        == 403
    )

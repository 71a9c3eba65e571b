"""``GET /v1/approvals/{id}?wait=N`` (approvals/consumers.py) through the real web process:
it answers at once when the request is decided, waits while it is not, and checks the
credential and whose request it is like ``GET /v1/approvals/{id}``."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from cs_agent import ApprovalClient
from tests.support.api import decide_over_http, issue_token

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("kube_cluster", "data_agent"),
]


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
    decide_over_http(
        web_server, issue_token("alice", ["approver"]), pending["id"], {"decision": "approve"}
    )
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

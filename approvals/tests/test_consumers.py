"""``GET /v1/approvals/{id}?wait=N`` (approvals/consumers.py) through the real web process:
it answers at once when the request is decided, waits while it is not, and checks the
credential and whose request it is like ``GET /v1/approvals/{id}``."""

from __future__ import annotations

import json
import threading
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


def poll(web_server: str, token: str, request_id: str, wait: int) -> dict[str, Any]:
    """One ``GET …?wait=N``: a single answer, however long the server holds it."""
    request = urllib.request.Request(
        f"{web_server}/v1/approvals/{request_id}?wait={wait}",
        headers={"Authorization": f"Bearer {token}"},
    )
    # The socket waits well past a held answer, and far less than a 60 s hold.
    with urllib.request.urlopen(request, timeout=45) as response:
        return dict(json.loads(response.read()))


def test_long_poll_waits_for_the_decision_and_returns_at_once_when_already_decided(
    web_server: str,
) -> None:
    token = issue_token("agent-1", ["agent"])
    agent = ApprovalClient(web_server, token, agent_type="data-agent")
    pending = agent.submit({"kind": "shell", "command": "pip install x"}, "ctx-1")

    # Nothing decided within the wait: the answer is the request, still pending.
    assert pending["status"] == "pending"
    assert poll(web_server, token, pending["id"], 1) == pending
    # One held poll, answered by the decision made while it waits (a server that answered
    # at once would say "pending").
    answers: list[dict[str, Any]] = []
    waiting = threading.Thread(
        target=lambda: answers.append(poll(web_server, token, pending["id"], 40))
    )
    waiting.start()
    time.sleep(0.5)  # the poll is under way before the decision, whatever the machine
    decided = decide_over_http(
        web_server, issue_token("alice", ["approver"]), pending["id"], {"decision": "approve"}
    )
    waiting.join(timeout=45)
    assert [(a["status"], a["decidedBy"]) for a in answers] == [("approved", "api:alice")]
    assert answers[0] == decided
    # Already decided: a 60 s poll answers at once (the 45 s socket timeout would fail it).
    assert poll(web_server, token, pending["id"], 60) == decided


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

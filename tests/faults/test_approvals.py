"""Approvals under faults: the web process holding an agent's long-poll is killed and the
agent still receives the decision; concurrent reviewers never both win."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from approvals.models import ApprovalRequest
from contextsvc.core.models import AuditEntry
from cs_agent import ApprovalClient
from devenv.system import free_port
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import decide_over_http, issue_token
from tests.support.processes import ManagedProcess, child_env, manage_argv

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]

PAIRS = 100
# Anything not allowed or denied by these rules waits for a person.
RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(sudo:*)"]}}
ASKED = {"kind": "shell", "command": "pip install pandas"}


@pytest.fixture
def data_agent() -> None:
    SandboxProfileFactory.create(name="data-agent", rules=RULES)


@pytest.fixture
def own_web() -> Iterator[tuple[ManagedProcess, int]]:
    port = free_port()
    web = ManagedProcess(
        "web-approval-faults", manage_argv("serve", "--bind", f"127.0.0.1:{port}"), child_env()
    ).start()
    web.wait_listening(port, timeout=60)
    try:
        yield web, port
    finally:
        web.stop()


def decide(url: str, token: str, request_id: str, decision: str) -> int:
    request = urllib.request.Request(
        f"{url}/v1/approvals/{request_id}/decision",
        data=json.dumps({"decision": decision}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.usefixtures("data_agent")
def test_the_web_process_holding_a_long_poll_is_killed_and_the_decision_arrives(
    own_web: tuple[ManagedProcess, int],
) -> None:
    web, port = own_web
    url = f"http://127.0.0.1:{port}"
    agent = ApprovalClient(url, issue_token("agent-1", ["agent"]), agent_type="data-agent")
    pending = agent.submit(ASKED, "ctx-1")
    answer: dict[str, Any] = {}

    def wait() -> None:
        answer.update(agent.wait(pending["id"], timeout=90))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)  # the long-poll is open on the web process
    web.kill()
    web.start()  # the replacement, behind the same Service address
    web.wait_listening(port, timeout=60)
    decided = decide_over_http(
        url, issue_token("alice", ["approver"]), pending["id"], {"decision": "approve"}
    )
    waiter.join(timeout=60)

    assert not waiter.is_alive()
    assert decided["status"] == "approved"
    assert answer["status"] == "approved"
    assert answer["decidedBy"] == "api:alice"


@pytest.mark.usefixtures("data_agent")
def test_concurrent_reviewers_never_both_win(web_server: str) -> None:
    agent = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="data-agent")
    alice, bob = issue_token("alice", ["approver"]), issue_token("bob", ["approver"])
    ids = [agent.submit(ASKED, f"ctx-{n}")["id"] for n in range(PAIRS)]
    # Alice approves and Bob denies each request at the same moment.
    start = threading.Barrier(2 * PAIRS)

    def race(args: tuple[str, str, str]) -> tuple[str, str, int]:
        token, request_id, decision = args
        start.wait()
        return request_id, decision, decide(web_server, token, request_id, decision)

    work = [(alice, i, "approve") for i in ids] + [(bob, i, "deny") for i in ids]
    with ThreadPoolExecutor(max_workers=2 * PAIRS) as pool:
        outcomes = list(pool.map(race, work))

    by_request: dict[str, list[tuple[str, int]]] = {}
    for request_id, decision, status in outcomes:
        by_request.setdefault(request_id, []).append((decision, status))
    for request_id, results in by_request.items():
        statuses = sorted(status for _, status in results)
        assert statuses == [200, 409], (request_id, results)
        winner = next(decision for decision, status in results if status == 200)
        row = ApprovalRequest.objects.get(pk=request_id)
        assert row.status == {"approve": "approved", "deny": "denied"}[winner]
        decisions = AuditEntry.objects.filter(
            target=request_id, action__in=["approval.approve", "approval.deny"]
        )
        assert decisions.count() == 1

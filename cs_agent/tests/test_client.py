"""``ApprovalClient`` against the real web process: a rule's decision needs no wait, and
every error fails closed."""

from __future__ import annotations

import pytest

from cs_agent import ApprovalClient
from tests.support.api import issue_token

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


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

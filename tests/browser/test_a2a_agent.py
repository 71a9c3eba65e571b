"""Seed 001 end to end in Chromium: an A2A client asks the reference agent for a command no
rule decides, the task waits (input-required) with the approval page's link, a person
follows it and approves in the dashboard, and the task completes with the command's
output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import TaskState
from playwright.sync_api import Browser, expect

from approvals.models import ApprovalRequest, OperationRun, Status
from tests.support import agents
from tests.support.agents import a2a_url, agent_database, workspace_root

__all__ = ["a2a_url", "agent_database", "workspace_root"]  # the fixtures, used by name

pytestmark = [pytest.mark.browser, pytest.mark.cluster]


def test_an_a2a_task_waits_for_the_dashboard_and_completes_with_the_output(
    browser: Browser,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    a2a_url: str,
    web_server: str,
    workspace_root: Path,
    screenshot: Callable[..., Any],
) -> None:
    make_user("alice", "approver")
    waiting = agents.send(a2a_url, "mkdir results\nls")

    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    request = ApprovalRequest.objects.get()
    link = f"{web_server}/approvals/{request.pk}/"
    assert get_message_text(waiting.status.message) == (
        f"Waiting for a person to approve `mkdir results`: {link}"
    )
    page = browser.new_context().new_page()
    login(page, "alice")
    page.goto(link)
    expect(page.locator("h1 .badge")).to_have_text("pending")
    expect(page.locator("pre.operation").first).to_have_text("mkdir results")
    expect(page.locator("dl.spec")).to_contain_text(waiting.context_id)
    screenshot(page, "a2a-waiting")

    live_page(page, "/approvals/")
    page.locator(f"#approval-{request.pk} button[value=approve]").click()
    expect(page.locator(f"#approval-{request.pk}")).to_have_count(0, timeout=15_000)

    done = agents.wait_for_state(a2a_url, waiting.id, TaskState.TASK_STATE_COMPLETED)
    assert get_artifact_text(done.artifacts[0]) == (
        "$ mkdir results\n[exit 0]\n$ ls\nresults\n[exit 0]"
    )
    assert (workspace_root / waiting.context_id / "results").is_dir()
    request.refresh_from_db()
    assert (request.status, request.decided_by) == (Status.APPROVED, "user:alice")
    assert OperationRun.objects.get(request=request).command == "mkdir results"

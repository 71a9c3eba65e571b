"""The reference A2A agent (cs_agent/a2a_server.py) as a real process, driven by the a2a-sdk
client over loopback, against the real web process and worker. The dashboard's approval of
a waiting task is tests/browser/test_a2a_agent.py."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import Task, TaskState

from approvals.models import ApprovalRequest, OperationRun, Status
from frontend.tests.support import client_for
from tests.support import agents
from tests.support.agents import a2a_url, agent_database

__all__ = ["a2a_url", "agent_database"]  # the fixtures, used by name

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("service"),
]


def test_cancelling_a_waiting_task_withdraws_its_approval_request(a2a_url: str) -> None:
    waiting = agents.send(a2a_url, "mkdir results")
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    request = ApprovalRequest.objects.get()
    assert request.status == Status.PENDING
    queue = client_for("approver")
    assert f"approval-{request.pk}" in queue.get("/approvals/").content.decode()

    cancelled = agents.cancel(a2a_url, waiting.id)

    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert get_message_text(cancelled.status.message) == (
        f"Cancelled; approval request {request.pk} withdrawn."
    )
    request.refresh_from_db()
    assert request.status == Status.CANCELLED
    assert f"approval-{request.pk}" not in queue.get("/approvals/").content.decode()
    assert agents.get(a2a_url, waiting.id).status.state == TaskState.TASK_STATE_CANCELED
    assert OperationRun.objects.count() == 0


def test_two_contexts_tasks_run_at_once_and_neither_sees_the_others_files(
    a2a_url: str, workspace_root: Path
) -> None:
    tasks: dict[str, Task] = {}

    def ask(context_id: str) -> None:
        tasks[context_id] = agents.send(
            a2a_url, f"echo {context_id} > mine.txt\nls\ncat mine.txt", context_id=context_id
        )

    senders = [threading.Thread(target=ask, args=(context,)) for context in ("ctx-a", "ctx-b")]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(timeout=120)

    for context_id in ("ctx-a", "ctx-b"):
        task = tasks[context_id]
        assert (task.context_id, task.status.state) == (context_id, TaskState.TASK_STATE_COMPLETED)
        assert get_artifact_text(task.artifacts[0]) == (
            f"$ echo {context_id} > mine.txt\n[exit 0]\n"
            "$ ls\nmine.txt\n[exit 0]\n"
            f"$ cat mine.txt\n{context_id}\n[exit 0]"
        )
        assert (workspace_root / context_id / "mine.txt").read_text() == f"{context_id}\n"
    assert sorted(OperationRun.objects.values_list("context_id", "command")) == [
        ("ctx-a", "cat mine.txt"),
        ("ctx-a", "echo ctx-a > mine.txt"),
        ("ctx-a", "ls"),
        ("ctx-b", "cat mine.txt"),
        ("ctx-b", "echo ctx-b > mine.txt"),
        ("ctx-b", "ls"),
    ]

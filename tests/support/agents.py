"""The agent's side of seed 001 in tests: a PostgreSQL database of the agent's own, the
environment an agent process reads, the reference A2A server as a real process, and the
a2a-sdk client's calls (run in a thread of their own: the browser tests' thread already
runs Playwright's event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from django.conf import settings

from devenv.system import free_port
from profiles.tests.factories import SandboxProfileFactory
from tests.support import postgres
from tests.support.api import issue_token
from tests.support.processes import ManagedProcess, wait_until

T = TypeVar("T")


@pytest.fixture
def workspace_root() -> Iterator[Path]:
    """The agent's /workspace for one test. Not under /tmp: the sandbox mounts a /tmp of
    its own over it (and the executor refuses a workspace there)."""
    root = Path(tempfile.mkdtemp(prefix="cs-workspace-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def agent_database() -> Iterator[str]:
    """A database of the agent's own on the project's PostgreSQL (checkpoints, waits and
    A2A tasks), new for each test."""
    db = settings.DATABASES["default"]
    name = f"cs_agent_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    with postgres.connect(dbname="postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def agent_env(
    web_server: str, workspace_root: Path, database: str, *, agent_type: str, name: str
) -> dict[str, str]:
    """What an agent process reads: the service, its token (a new API client ``name``
    with the agent scope), its agent type, its workspace and its PostgreSQL."""
    return {
        **os.environ,
        "CS_URL": web_server,
        "CS_TOKEN": issue_token(name, ["agent"]),
        "CS_AGENT_TYPE": agent_type,
        "CS_WORKSPACE_ROOT": str(workspace_root),
        "CS_AGENT_DATABASE_URL": database,
        "PYTHONUNBUFFERED": "1",
    }


@contextlib.contextmanager
def a2a_server(env: dict[str, str]) -> Iterator[str]:
    """``python -m cs_agent.a2a_server`` on a free loopback port; yields its URL once its
    agent card is served."""
    port = free_port()
    server = ManagedProcess(
        "a2a-server",
        [
            sys.executable,
            "-m",
            "cs_agent.a2a_server",
            "--port",
            str(port),
            "--interval",
            "0.3",
        ],
        env,
    ).start()
    url = f"http://127.0.0.1:{port}/"

    def card_served() -> bool:
        server.assert_running()
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{url}.well-known/agent-card.json", timeout=2).status_code == 200
        return False

    try:
        wait_until(card_served, timeout=60, interval=0.2, message="the A2A server's card")
        yield url
    finally:
        server.stop()


# The reference agent type: a few commands decided by rules, in the context's own directory.
DATA_AGENT_RULES = {
    "permissions": {
        "allow": [
            "shell(ls:*)",
            "shell(echo:*)",
            "shell(cat:*)",
            "file(read:${WORKSPACE}/**)",
            "file(write:${WORKSPACE}/**)",
        ],
        "deny": ["shell(curl:*)"],
    }
}


@pytest.fixture
def a2a_url(web_server: str, workspace_root: Path, agent_database: str) -> Iterator[str]:
    """The reference A2A agent ("python-data-agent", its profile made here) serving; its
    URL."""
    SandboxProfileFactory.create(
        name="python-data-agent",
        rules={**DATA_AGENT_RULES, "context_workspace": f"{workspace_root}/${{CONTEXT_ID}}"},
        sources={"runtime": {"max_execution_time_seconds": 10, "max_memory_mb": 64}},
    )
    env = agent_env(
        web_server,
        workspace_root,
        agent_database,
        agent_type="python-data-agent",
        name="python-data-agent",
    )
    with a2a_server(env) as url:
        yield url


def in_thread(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end on an event loop of its own thread."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(("ok", asyncio.run(coroutine)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box.append(("error", exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=180)
    [(kind, value)] = box
    if kind == "error":
        raise value
    return value


async def _with_client(url: str, call: Any) -> Any:
    async with httpx.AsyncClient(timeout=120) as http:
        client = await create_client(
            url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        async with client:
            return await call(client)


def send(url: str, text: str, *, context_id: str | None = None) -> Task:
    """``SendMessage`` with the a2a-sdk client: the task as the answer states it."""
    message = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        context_id=context_id or "",
        parts=[Part(text=text)],
    )

    async def call(client: Any) -> Task:
        async for response in client.send_message(SendMessageRequest(message=message)):
            assert response.HasField("task"), response
            return response.task
        raise AssertionError("no answer to SendMessage")

    return in_thread(_with_client(url, call))


async def _get(url: str, task_id: str) -> Task:
    return await _with_client(url, lambda client: client.get_task(GetTaskRequest(id=task_id)))


def get(url: str, task_id: str) -> Task:
    return in_thread(_get(url, task_id))


def cancel(url: str, task_id: str) -> Task:
    return in_thread(
        _with_client(url, lambda client: client.cancel_task(CancelTaskRequest(id=task_id)))
    )


def wait_for_state(url: str, task_id: str, state: int, *, timeout: float = 60) -> Task:
    """The task once it is in ``state`` (a TaskState)."""

    def reached() -> Task | None:
        task = get(url, task_id)
        return task if task.status.state == state else None

    found = wait_until(
        reached, timeout=timeout, interval=0.3, message=f"task {task_id} {TaskState.Name(state)}"
    )
    assert isinstance(found, Task)
    return found

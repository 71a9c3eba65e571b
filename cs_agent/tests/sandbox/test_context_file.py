"""The agent's own file in a context: a contained run may leave anything in its place (a
FIFO, a link), and the agent must neither hang on it nor follow it. Against the real
service, which registers the context."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from cs_agent import Executor
from cs_agent.client import Verdict
from cs_agent.workspace import WorkspaceClient
from tests.support.api import issue_token
from tests.support.workspaces import ensure, platform_client, ready

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def test_a_fifo_or_a_link_a_run_left_as_context_json_is_replaced_not_opened(
    namespace: str, web_server: str, workspace_root: Path
) -> None:
    ensure(platform_client(), namespace)
    ready(namespace)
    token = issue_token("weather-pod", ["agent"], agent_types=["weather-service"])
    client = WorkspaceClient(
        web_server, token, agent_type="weather-service", namespace=namespace, root=workspace_root
    )
    client.open_context("ctx-a")
    context = workspace_root / "ctx-a"
    outside = workspace_root.parent / f"{workspace_root.name}-target"
    outside.write_text("the agent's own\n")
    # A contained run (anywhere in its context) turns the file into a FIFO, and another
    # context's into a link out of it.
    executor = Executor(None, workspace_root=str(workspace_root))  # type: ignore[arg-type]
    for context_id, command in (
        ("ctx-a", "rm .context.json && mkfifo .context.json"),
        ("ctx-b", f"ln -s {outside} .context.json"),
    ):
        where = workspace_root / context_id
        effects = {"read": [f"{where}/**"], "write": [f"{where}/**"], "network": []}
        made = executor.execute(
            Verdict(
                True,
                "allow",
                operation={"kind": "shell", "command": command},
                execution={"workspace": str(where), "memoryLimitMb": 128, "effects": effects},
            ),
            context_id=context_id,
        )
        assert (made.outcome, made.exit_status) == ("exited", 0), made.stderr
    assert stat.S_ISFIFO(os.lstat(context / ".context.json").st_mode)

    # Run in a thread so that a hang fails the test instead of stopping it.
    opened: list[Path] = []
    worker = threading.Thread(
        target=lambda: opened.extend(client.open_context(c) for c in ("ctx-a", "ctx-b")),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=30)

    assert not worker.is_alive(), "open_context hung on the FIFO"
    assert opened == [context, workspace_root / "ctx-b"]
    for directory in opened:
        written = directory / ".context.json"
        assert stat.S_ISREG(os.lstat(written).st_mode)
        assert json.loads(written.read_text())["context_id"] == directory.name
    assert outside.read_text() == "the agent's own\n"
    outside.unlink()
    assert sorted(p.name for p in context.iterdir()) == [".context.json"]

"""The agent's side of seed 001 for real: a LangGraph graph (cs_agent/graph.py) checkpointed
by AsyncPostgresSaver on the project's PostgreSQL, asking the real web process, stopped
while a person decides, its process killed, and resumed by other agent processes."""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command

from approvals.models import ApprovalRequest, OperationRun, Status
from cs_agent import ApprovalClient, Executor
from cs_agent.graph import GuardedGraph
from devenv.system import REPO_DIR
from frontend.tests.support import client_for
from profiles.tests.factories import SandboxProfileFactory
from tests.support.agents import agent_database, agent_env, in_thread
from tests.support.api import ApiClient, decide_over_http, issue_token
from tests.support.processes import wait_until

__all__ = ["agent_database"]  # the fixture, used by name

# The whole back end: the web process the agents ask, the worker beside it.
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("service"),
]

# Nothing but ls is decided by a rule: every other command waits for a person.
RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}}
CONTEXT = "ctx-graph"


@pytest.fixture
def graph_agent(workspace_root: Path) -> None:
    SandboxProfileFactory.create(
        name="graph-agent",
        rules={**RULES, "context_workspace": f"{workspace_root}/${{CONTEXT_ID}}"},
        sources={"runtime": {"max_execution_time_seconds": 10, "max_memory_mb": 64}},
    )


class Agents:
    """Agent processes (``python -m cs_agent.graph``) against the real web process."""

    def __init__(self, web_server: str, workspace_root: Path, database: str) -> None:
        self.env = agent_env(
            web_server, workspace_root, database, agent_type="graph-agent", name="agent-graph"
        )
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "cs_agent.graph", *args],
            cwd=REPO_DIR,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    def start_thread(self, thread: str, commands: list[str], *extra: str) -> subprocess.Popen[str]:
        plan = [{"kind": "shell", "command": command} for command in commands]
        return self.start("--start", thread, CONTEXT, json.dumps(plan), *extra)

    def resume_once(self) -> list[dict[str, Any]]:
        """One resuming pass in a process of its own; the outcomes it printed."""
        process = self.start("--once")
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        return [json.loads(line) for line in out.splitlines()]

    def stop(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=30)


@pytest.fixture
def agents(
    web_server: str, workspace_root: Path, agent_database: str, graph_agent: None
) -> Iterator[Agents]:
    group = Agents(web_server, workspace_root, agent_database)
    try:
        yield group
    finally:
        group.stop()


def first_outcome(process: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    """The first outcome a running agent printed (it goes on running afterwards)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError("the agent printed nothing within the time")
    line = process.stdout.readline()
    assert line, process.stderr.read() if process.stderr else "the agent ended"
    return dict(json.loads(line))


def killed(process: subprocess.Popen[str]) -> None:
    """The agent process that started the graph dies (SIGKILL: no clean-up of any kind)."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def approver() -> str:
    return issue_token("alice", ["approver"])


def test_a_graph_interrupts_and_an_edited_approval_resumes_it_in_another_process(
    agents: Agents, web_server: str, workspace_root: Path
) -> None:
    first = agents.start_thread("thread-edit", ["mkdir asked"], "--interval", "0.5")
    waiting = first_outcome(first)
    request = ApprovalRequest.objects.get()
    assert request.status == Status.PENDING
    assert (waiting["thread"], waiting["status"], waiting["results"]) == (
        "thread-edit",
        "waiting",
        [],
    )
    payload = waiting["interrupt"]
    assert {
        key: payload[key] for key in ("approval_request", "operation", "normalised", "url")
    } == {
        "approval_request": str(request.pk),
        "operation": {"kind": "shell", "command": "mkdir asked"},
        "normalised": "mkdir asked",
        "url": f"{web_server}/approvals/{request.pk}/",
    }
    assert payload["deadline"] == request.deadline.isoformat()
    assert payload["evaluation"]["decision"] == "ask"
    assert payload["action_requests"] == [
        {
            "name": "shell",
            "args": {"kind": "shell", "command": "mkdir asked"},
            "description": "Context Service waits for a person: mkdir asked",
        }
    ]
    killed(first)

    decide_over_http(
        web_server,
        approver(),
        request.pk,
        {"decision": "approve_edited", "operation": {"kind": "shell", "command": "mkdir edited"}},
    )
    [resumed] = agents.resume_once()

    assert resumed == {
        "thread": "thread-edit",
        "status": "done",
        "interrupt": None,
        "results": [
            {
                "request": str(request.pk),
                "status": "approved",
                "decision": "edit",
                "asked": {"kind": "shell", "command": "mkdir asked"},
                "ran": "mkdir edited",
                "exit": 0,
                "output": "",
                "error": None,
            }
        ],
    }
    context = workspace_root / CONTEXT
    assert (context / "edited").is_dir()
    assert not (context / "asked").exists()
    run = OperationRun.objects.get()
    assert (run.request_id, run.command, run.outcome, run.exit_status) == (
        request.pk,
        "mkdir edited",
        "exited",
        0,
    )
    page = client_for("approver").get(f"/approvals/{request.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    run_card = html[html.index('id="run"') :]
    assert '<pre class="operation">mkdir edited</pre>' in run_card
    assert "exit status 0" in run_card
    assert "by api:agent-graph" in run_card
    # Resumed once: another pass finds nothing to do.
    assert agents.resume_once() == []


def test_a_denial_resumes_the_graph_with_the_refusal_and_nothing_runs(
    agents: Agents, web_server: str, workspace_root: Path
) -> None:
    killed_first = agents.start_thread("thread-deny", ["mkdir never"])
    first_outcome(killed_first)
    killed(killed_first)
    request = ApprovalRequest.objects.get()

    decide_over_http(
        web_server, approver(), request.pk, {"decision": "deny", "reason": "not today"}
    )
    [resumed] = agents.resume_once()

    assert resumed["results"] == [
        {
            "request": str(request.pk),
            "status": "denied",
            "decision": "reject",
            "asked": {"kind": "shell", "command": "mkdir never"},
            "ran": None,
            "exit": None,
            "output": "",
            "error": "operation refused (denied): not today",
        }
    ]
    assert resumed["status"] == "done"
    assert not (workspace_root / CONTEXT / "never").exists()
    assert OperationRun.objects.count() == 0


def test_an_expired_request_resumes_the_graph_as_a_refusal(
    agents: Agents, web_server: str, workspace_root: Path
) -> None:
    first = agents.start_thread("thread-expire", ["mkdir late"], "--deadline-seconds", "1")
    first_outcome(first)
    killed(first)
    request = ApprovalRequest.objects.get()
    agent_token = agents.env["CS_TOKEN"]

    def expired() -> bool:
        state = ApiClient(agent_token).get(f"/v1/approvals/{request.pk}").json()
        return bool(state["status"] == "expired")

    wait_until(expired, timeout=30, message="the request to read as expired")
    [resumed] = agents.resume_once()

    [result] = resumed["results"]
    assert (result["status"], result["decision"], result["ran"]) == ("expired", "reject", None)
    assert result["error"].startswith("operation refused (expired)")
    assert not (workspace_root / CONTEXT / "late").exists()
    assert OperationRun.objects.count() == 0


def test_two_agent_processes_noticing_one_decision_resume_the_graph_once(
    agents: Agents, web_server: str, workspace_root: Path
) -> None:
    first = agents.start_thread("thread-race", ["mkdir once"])
    first_outcome(first)
    killed(first)
    request = ApprovalRequest.objects.get()
    decide_over_http(web_server, approver(), request.pk, {"decision": "approve"})

    racing = [agents.start("--once") for _ in range(2)]
    printed: list[dict[str, Any]] = []
    for process in racing:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        printed.extend(json.loads(line) for line in out.splitlines())

    [resumed] = printed
    [result] = resumed["results"]
    assert (result["status"], result["ran"], result["exit"]) == ("approved", "mkdir once", 0)
    assert (workspace_root / CONTEXT / "once").is_dir()
    assert OperationRun.objects.filter(request=request).count() == 1
    with psycopg.connect(agents.env["CS_AGENT_DATABASE_URL"]) as connection:
        rows = connection.execute(
            "SELECT thread_id, request_id, status FROM cs_agent_waits"
        ).fetchall()
    assert rows == [("thread-race", str(request.pk), "done")]


def test_a_resume_value_approves_nothing(
    agents: Agents, web_server: str, workspace_root: Path
) -> None:
    """A resumer that passes "approve" while the request is still pending: the graph asks
    the service, finds it pending, and waits again; nothing runs."""
    first = agents.start_thread("thread-forged", ["mkdir forged"])
    first_outcome(first)
    killed(first)
    request = ApprovalRequest.objects.get()
    client = ApprovalClient(web_server, agents.env["CS_TOKEN"], agent_type="graph-agent")
    guarded = GuardedGraph(client, Executor(client, workspace_root=str(workspace_root)), web_server)

    async def forge() -> Any:
        async with AsyncPostgresSaver.from_conn_string(
            agents.env["CS_AGENT_DATABASE_URL"]
        ) as saver:
            forged: Command[Any] = Command(
                resume={"approval_request": str(request.pk), "decision": "approve"}
            )
            config: Any = {"configurable": {"thread_id": "thread-forged"}}
            return await guarded.build(saver).ainvoke(forged, config, version="v2")

    output = in_thread(forge())

    assert [item.value["approval_request"] for item in output.interrupts] == [str(request.pk)]
    assert output.value.get("results", []) == []
    request.refresh_from_db()
    assert request.status == Status.PENDING
    assert not (workspace_root / CONTEXT / "forged").exists()
    assert OperationRun.objects.count() == 0

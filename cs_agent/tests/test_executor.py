"""The executor against the real web process: it runs only what was allowed, exactly the
string that was judged, inside the context's namespaces and limits, and reports it.

Every command here is harmless (echo, ls, cat, sleep, a small Python allocation, a pip
install that cannot reach any index). Corpus and attack strings are never executed.
"""

from __future__ import annotations

import fcntl
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from django.test import Client

from approvals.models import ApprovalRequest, OperationRun, Status
from contextsvc.core.models import AuditEntry
from cs_agent import ApprovalClient, Executor
from cs_agent.executor import EXIT_MEMORY, EXIT_REFUSED, EXIT_TIMED_OUT
from frontend.tests.support import client_for
from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, decide_over_http, issue_token
from tests.support.processes import child_env

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]

RULES = {
    "permissions": {
        "allow": [
            "shell(echo:*)",
            "shell(ls:*)",
            "shell(cat:*)",
            "shell(sleep:*)",
            "shell(pip install:*)",
            "file(read:${WORKSPACE}/**)",
            "file(write:${WORKSPACE}/**)",
        ],
        "deny": ["shell(touch:*)"],
    }
}
SOURCES = {
    "package_managers": {
        "pip": {
            "enabled": True,
            "registries": [{"name": "pypi", "url": "https://pypi.org/simple/"}],
        }
    },
    "runtime": {"max_execution_time_seconds": 3, "max_memory_mb": 64},
}


@pytest.fixture
def exec_agent(workspace_root: Path) -> None:
    SandboxProfileFactory.create(
        name="exec-agent",
        rules={**RULES, "context_workspace": f"{workspace_root}/${{CONTEXT_ID}}"},
        sources=SOURCES,
    )


@pytest.fixture
def executor(web_server: str, workspace_root: Path, exec_agent: None) -> Executor:
    client = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="exec-agent")
    return Executor(client, workspace_root=str(workspace_root), approval_timeout=30)


def scraped() -> str:
    """What /metrics says now."""
    token = issue_token("prom", ["read"])
    return Client().get("/metrics", headers={"Authorization": f"Bearer {token}"}).content.decode()


class Reviewer:
    """A person at the dashboard: decides each request the executor waits on."""

    def __init__(self, web_server: str, decision: str = "approve") -> None:
        self.web_server = web_server
        self.token = issue_token("alice", ["approver"])
        self.decision = decision
        self.threads: list[threading.Thread] = []

    def __call__(self, request: dict[str, Any]) -> None:
        body = {"decision": self.decision, "reason": "test"}
        thread = threading.Thread(
            target=decide_over_http, args=(self.web_server, self.token, request["id"], body)
        )
        thread.start()
        self.threads.append(thread)


@pytest.fixture
def reviewer(web_server: str) -> Iterator[Reviewer]:
    person = Reviewer(web_server)
    yield person
    for thread in person.threads:
        thread.join(timeout=30)


def test_an_allowed_command_runs_in_its_context_and_what_ran_is_recorded(
    executor: Executor, workspace_root: Path
) -> None:
    command = "echo hello > out.txt && ls && echo $HOME"

    result = executor.run(command, context_id="ctx-a")

    context = workspace_root / "ctx-a"
    assert (result.outcome, result.exit_status, result.exit_code) == ("exited", 0, 0)
    # The run's home is its own (a directory of the sandbox's /tmp), not the context.
    assert result.stdout == b"out.txt\n/tmp/home\n"
    assert (result.stderr, result.truncated, result.isolation) == (b"", False, "namespaces")
    assert (context / "out.txt").read_text() == "hello\n"
    assert result.command == command
    run = OperationRun.objects.get()
    assert str(run.pk) == result.run_id
    assert (run.command, run.context_id, run.agent_type, run.outcome, run.exit_status) == (
        command,
        "ctx-a",
        "exec-agent",
        "exited",
        0,
    )
    assert (run.stdout_bytes, run.stderr_bytes, run.truncated) == (len(result.stdout), 0, False)
    decided = AuditEntry.objects.get(action="approval.allow")
    assert run.check_entry_id == decided.pk
    ran = AuditEntry.objects.get(action="operation.run")
    assert (ran.actor, ran.target_type, ran.target) == ("api:agent-1", "check", str(decided.pk))
    assert ran.payload["outcome"] == "exited"


def test_other_contexts_and_everything_outside_the_context_are_out_of_reach(
    executor: Executor, workspace_root: Path, reviewer: Reviewer
) -> None:
    other = workspace_root / "ctx-b"
    other.mkdir()
    (other / "secret").write_text("b's data\n")
    outside = workspace_root.parent / f"{workspace_root.name}-outside"
    outside.mkdir()

    # The rules allow reading it (nothing denies it); the namespace does not contain it.
    read = executor.run("cat ../ctx-b/secret", context_id="ctx-a")
    listing = executor.run(f"ls {workspace_root}", context_id="ctx-a")
    # A person approves a write outside the context; it still cannot land there.
    write = executor.run(f"echo x > {outside}/escape", context_id="ctx-a", on_pending=reviewer)

    assert (read.outcome, read.exit_status, read.stdout) == ("exited", 1, b"")
    assert read.stderr == b"cat: ../ctx-b/secret: No such file or directory\n"
    assert (listing.exit_status, listing.stdout) == (0, b"ctx-a\n")
    assert write.verdict.status == "approved"
    assert (write.outcome, write.exit_status) == ("exited", 1)
    assert b"No such file or directory" in write.stderr
    assert list(outside.iterdir()) == []
    outside.rmdir()
    assert (other / "secret").read_text() == "b's data\n"
    # The request's page shows what ran next to the decision.
    page = client_for("viewer").get(f"/approvals/{write.verdict.request_id}/")
    assert page.status_code == 200
    ran = page.context["run"]
    assert (ran.command, ran.outcome, ran.exit_status) == (
        f"echo x > {outside}/escape",
        "exited",
        1,
    )
    html = page.content.decode()
    assert f'<pre class="operation">echo x &gt; {outside}/escape</pre>' in html
    assert "Exited</span> · exit status 1" in html


def test_what_the_rules_did_not_judge_is_refused_at_run_time_and_reported(
    executor: Executor, workspace_root: Path, reviewer: Reviewer
) -> None:
    """A reviewer approves ``head notes.txt``; the rules judged it to read notes.txt. The
    file is a link to another file of the context, which nobody judged: Landlock refuses
    the read, and the run report, the request's page and /metrics say so."""
    context = workspace_root / "ctx-a"
    context.mkdir()
    (context / "other.txt").write_text("not judged\n")
    (context / "notes.txt").symlink_to("other.txt")

    result = executor.run("head notes.txt", context_id="ctx-a", on_pending=reviewer)

    assert result.verdict.status == "approved"
    assert result.verdict.execution["effects"] == {
        "read": [f"{context}/notes.txt"],
        "write": [],
        "delete": [],
        "network": [],
        "programs": ["head"],
        "hidden": [],
    }
    assert (result.outcome, result.exit_status, result.stdout) == ("exited", 1, b"")
    assert result.stderr == b"head: cannot open 'notes.txt' for reading: Permission denied\n"
    refused = {
        "action": "read",
        "path": f"{context}/notes.txt",
        "error": "Permission denied",
        "reportedBy": "program",
    }
    assert result.refused_effects == (refused,)
    run = OperationRun.objects.get()
    assert (run.refused_effects, run.sandbox) == (
        [refused],
        {"network": "none", "memory": "cgroup", "processes": "cgroup"},
    )
    assert AuditEntry.objects.get(action="operation.run").payload["refused_effects"] == [refused]
    html = client_for("viewer").get(f"/approvals/{result.verdict.request_id}/").content.decode()
    assert (
        f'<li><span class="badge warn">read</span> <code>{context}/notes.txt</code> '
        '<span class="muted">Permission denied</span> '
        '<span class="reported-by">reported by the program</span></li>'
    ) in html
    assert "network: none, memory by cgroup, processes by cgroup" in html
    assert (
        "contextsvc_executor_refused_effects_total"
        '{action="read",agent_type="exec-agent",reported_by="program"} 1.0'
    ) in scraped()


def test_the_time_limit_kills_everything_the_command_started(executor: Executor) -> None:
    result = executor.run("sleep 31.25 & sleep 32.75", context_id="ctx-a")

    assert (result.outcome, result.exit_status, result.signal) == ("timed_out", None, 9)
    assert result.exit_code == EXIT_TIMED_OUT
    left = subprocess.run(
        ["pgrep", "-f", "sleep 3[12]\\.[27]5"], capture_output=True, text=True, check=False
    )
    assert left.stdout == ""
    assert OperationRun.objects.get().outcome == "timed_out"


def test_the_memory_limit_stops_it(executor: Executor, reviewer: Reviewer) -> None:
    allocate = 'python3 -c "x = bytearray(300 * 1024 * 1024)"'

    killed = executor.run(allocate, context_id="ctx-a", on_pending=reviewer)
    executor.memory_cgroups = False  # where the executor may not make a cgroup
    not_held = executor.run(allocate, context_id="ctx-a", on_pending=reviewer)
    executor.memory_rlimit = True  # the agent accepts a limit per process
    refused_memory = executor.run(allocate, context_id="ctx-a", on_pending=reviewer)

    assert (killed.outcome, killed.signal, killed.memory_enforcement) == ("memory", 9, "cgroup")
    assert killed.exit_code == EXIT_MEMORY
    assert (not_held.outcome, not_held.exit_code) == ("error", 122)
    assert not_held.message.startswith("the memory limit (64 MB) cannot be held here")
    assert (refused_memory.outcome, refused_memory.exit_status) == ("exited", 1)
    assert refused_memory.memory_enforcement == "rlimit"
    assert refused_memory.stderr.rstrip().endswith(b"MemoryError")
    assert sorted(OperationRun.objects.values_list("outcome", flat=True)) == ["exited", "memory"]


def test_refused_and_unanswered_operations_never_run(
    executor: Executor, web_server: str, workspace_root: Path
) -> None:
    denied = executor.run("touch proof", context_id="ctx-a")
    refused_by_a_person = executor.run(
        "mkdir refused", context_id="ctx-a", on_pending=Reviewer(web_server, "deny")
    )
    executor.approval_timeout = 1.0
    unanswered = executor.run("mkdir unanswered", context_id="ctx-a")

    assert (denied.outcome, denied.verdict.status, denied.exit_code) == (
        "refused",
        "deny",
        EXIT_REFUSED,
    )
    assert (refused_by_a_person.outcome, refused_by_a_person.verdict.status) == (
        "refused",
        "denied",
    )
    assert (unanswered.outcome, unanswered.verdict.status) == ("refused", "timeout")
    assert not (workspace_root / "ctx-a").exists()
    assert not OperationRun.objects.exists()
    assert sorted(ApprovalRequest.objects.values_list("status", flat=True)) == [
        Status.CANCELLED,
        Status.DENIED,
    ]


def test_the_first_pip_install_creates_the_context_virtualenv(
    executor: Executor, workspace_root: Path, reviewer: Reviewer
) -> None:
    venv = workspace_root / "ctx-a" / ".venv"
    before = executor.run("echo $VIRTUAL_ENV", context_id="ctx-a")

    # No index is reachable: pip fails, but only after the virtualenv exists.
    install = executor.run(
        "pip install --no-index cs-no-such-package", context_id="ctx-a", on_pending=reviewer
    )
    after = executor.run("echo $VIRTUAL_ENV", context_id="ctx-a")

    assert before.stdout == b"\n"
    assert (install.outcome, install.exit_status) == ("exited", 1)
    assert b"cs-no-such-package" in install.stderr
    assert (venv / "bin" / "pip").exists()
    assert after.stdout == f"{venv}\n".encode()


class _PyPIStandIn(http.server.BaseHTTPRequestHandler):
    """pypi.org for this test: a small index page on loopback."""

    def do_GET(self) -> None:
        body = b"<a href='pandas'>pandas</a>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_contained_run_reaches_its_sources_json_hosts_through_the_proxy_and_reports_the_rest(
    web_server: str, workspace_root: Path
) -> None:
    """A data agent's contained ``python3 fetch.py`` (its rules allow python3; its
    sources.json lets it reach pypi.org): the executor's proxy connects it to pypi.org (a
    loopback stand-in the test maps the name to) and refuses another loopback port, a
    private address and a host sources.json does not list; the run report, /metrics and
    the audit log name each refusal as the executor's own."""
    SandboxProfileFactory.create(
        name="fetch-agent",
        rules={
            "context_workspace": f"{workspace_root}/${{CONTEXT_ID}}",
            "permissions": {"allow": ["shell(python3:*)"], "deny": []},
        },
        sources={"web_access": {"enabled": True, "allowed_domains": ["pypi.org"]}},
    )
    stand_in = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PyPIStandIn)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    unjudged = socket.socket()
    unjudged.bind(("127.0.0.1", 0))
    unjudged.listen()
    unjudged.setblocking(False)
    other = unjudged.getsockname()[1]
    context = workspace_root / "ctx-a"
    context.mkdir()
    (context / "fetch.py").write_text(
        "import urllib.request\n"
        f"for url in ('http://pypi.org/simple/', 'http://127.0.0.1:{other}/', "
        "'http://10.1.2.3/', 'http://example.org/'):\n"
        "    try:\n"
        "        print(url, urllib.request.urlopen(url, timeout=10).read()[:9])\n"
        "    except Exception as exc:\n"
        "        print(url, exc)\n"
    )
    client = ApprovalClient(web_server, issue_token("agent-9", ["agent"]), agent_type="fetch-agent")
    executor = Executor(
        client,
        workspace_root=str(workspace_root),
        egress_pinned={"pypi.org:80": ("127.0.0.1", stand_in.server_address[1])},
    )
    try:
        result = executor.run("python3 fetch.py", context_id="ctx-a")
    finally:
        stand_in.shutdown()
        stand_in.server_close()

    assert result.verdict.status == "allow"
    assert result.verdict.evaluation["contained"] is True
    assert result.verdict.execution["egress"] == {
        "hosts": ["pypi.org"],
        "blocked": [],
        "ports": [80, 443],
    }
    assert result.stdout.decode().splitlines() == [
        'http://pypi.org/simple/ b"<a href=\'"',
        f"http://127.0.0.1:{other}/ HTTP Error 403: Forbidden",
        "http://10.1.2.3/ HTTP Error 403: Forbidden",
        "http://example.org/ HTTP Error 403: Forbidden",
    ]
    with pytest.raises(BlockingIOError):
        unjudged.accept()
    unjudged.close()
    refused = [
        {"action": "network", "path": path, "error": f"{host} is not a host the agent type "
         "may reach (sources.json)", "reportedBy": "executor"}
        for host, path in (("127.0.0.1", f"127.0.0.1:{other}"), ("10.1.2.3", "10.1.2.3:80"),
                           ("example.org", "example.org:80"))
    ]  # fmt: skip
    assert list(result.refused_effects) == refused
    run = OperationRun.objects.get()
    assert (run.refused_effects, run.sandbox) == (
        refused,
        {"network": "proxy", "memory": "cgroup", "processes": "cgroup"},
    )
    assert AuditEntry.objects.get(action="operation.run").payload["refused_effects"] == refused
    assert (
        "contextsvc_executor_refused_effects_total"
        '{action="network",agent_type="fetch-agent",reported_by="executor"} 3.0'
    ) in scraped()


def test_a_profile_without_isolation_needs_the_agents_consent(
    web_server: str, workspace_root: Path, exec_agent: None
) -> None:
    SandboxProfile.objects.filter(name="exec-agent").update(executor_isolation="none")
    client = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="exec-agent")

    refused = Executor(client, workspace_root=str(workspace_root)).run(
        "echo hi > f", context_id="ctx-a"
    )
    consented = Executor(client, workspace_root=str(workspace_root), allow_no_isolation=True).run(
        "echo hi > f", context_id="ctx-a"
    )

    assert (refused.outcome, refused.exit_code) == ("error", 122)
    assert "CS_EXECUTOR_ALLOW_NONE=1" in refused.message
    assert (consented.outcome, consented.exit_status, consented.isolation) == ("exited", 0, "none")
    assert (workspace_root / "ctx-a" / "f").read_text() == "hi\n"
    assert OperationRun.objects.count() == 1


def test_an_executor_in_another_directory_than_the_rules_judged_runs_nothing(
    web_server: str, tmp_path: Path, exec_agent: None
) -> None:
    client = ApprovalClient(web_server, issue_token("agent-1", ["agent"]), agent_type="exec-agent")
    elsewhere = tmp_path / "elsewhere"

    result = Executor(client, workspace_root=str(elsewhere)).run("echo hi > f", context_id="c")

    assert result.outcome == "error"
    assert "the rules judged this command for" in result.message
    assert not elsewhere.exists()
    assert not OperationRun.objects.exists()


def test_a_run_report_must_be_the_command_judged_and_only_once(
    web_server: str, exec_agent: None
) -> None:
    token = issue_token("agent-1", ["agent"])
    agent = ApiClient(token)
    allowed = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-a",
            "agentType": "exec-agent",
            "operation": {"kind": "shell", "command": "ls"},
        },
    ).json()
    report = {
        "checkId": allowed["checkId"],
        "contextId": "ctx-a",
        "command": "ls",
        "outcome": "exited",
        "exitStatus": 0,
        "durationMs": 12,
        "stdoutBytes": 3,
        "stderrBytes": 0,
        "truncated": False,
    }

    other = agent.post("/v1/runs", {**report, "command": "ls; cat /etc/passwd"})
    someone_else = ApiClient(issue_token("agent-2", ["agent"])).post("/v1/runs", report)
    first = agent.post("/v1/runs", report)
    again = agent.post("/v1/runs", report)

    assert (other.status_code, other.json()) == (
        409,
        {"error": "conflict", "message": "the command reported is not the command that was judged"},
    )
    assert someone_else.status_code == 404
    assert first.status_code == 201
    assert (again.status_code, again.json()["message"]) == (
        409,
        f"the run of check {allowed['checkId']} was already reported",
    )
    assert OperationRun.objects.count() == 1
    assert list(
        AuditEntry.objects.filter(action__startswith="operation.")
        .values_list("action", "actor")
        .order_by("id")
    ) == [
        ("operation.run_mismatch", "api:agent-1"),
        ("operation.run", "api:agent-1"),
    ]


def test_the_command_line_exits_with_what_happened(
    web_server: str, workspace_root: Path, exec_agent: None
) -> None:
    env = child_env(
        {
            "CS_URL": web_server,
            "CS_TOKEN": issue_token("agent-1", ["agent"]),
            "CS_AGENT_TYPE": "exec-agent",
            "CS_WORKSPACE_ROOT": str(workspace_root),
        }
    )

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cs_agent", "run", "--context-id", "ctx-a", *words],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    own = run("--", "ls", "no-such-file")
    refused = run("--", "touch", "x")
    timed_out = run("--json", "--", "sleep", "30.5")

    assert (own.returncode, own.stdout) == (2, "")
    assert "no-such-file" in own.stderr
    assert (refused.returncode, refused.stdout) == (EXIT_REFUSED, "")
    assert refused.stderr == "cs_agent: refused: deny\n"
    assert timed_out.returncode == EXIT_TIMED_OUT
    summary = json.loads(timed_out.stdout)
    assert (summary["outcome"], summary["command"], summary["exit_code"]) == (
        "timed_out",
        "sleep 30.5",
        EXIT_TIMED_OUT,
    )
    # Each run was reported before the command line exited; the refused one ran nothing.
    assert OperationRun.objects.count() == 2


def test_a_graph_that_interrupted_runs_the_decided_operation_when_it_resumes(
    executor: Executor, web_server: str, workspace_root: Path
) -> None:
    """docs/agent-client.md's LangGraph mapping, without LangGraph: submit, stop while a
    person decides, resume with the outcome and run what was decided."""
    client = executor.client
    answer = client.submit({"kind": "shell", "command": "mkdir results"}, "ctx-a")
    assert client.immediate(answer) is None  # queued: the graph would interrupt here
    decide_over_http(
        web_server, issue_token("alice", ["approver"]), answer["id"], {"decision": "approve"}
    )

    verdict = client.outcome(answer["id"], timeout=0)
    result = executor.run_verdict(verdict, context_id="ctx-a")

    assert (verdict.allowed, verdict.status, verdict.operation["command"]) == (
        True,
        "approved",
        "mkdir results",
    )
    assert (result.outcome, result.exit_status) == ("exited", 0)
    assert (workspace_root / "ctx-a" / "results").is_dir()
    assert OperationRun.objects.get().request_id == UUID(answer["id"])


def test_a_contexts_writes_wait_for_each_other_and_reads_share_it(
    executor: Executor, workspace_root: Path
) -> None:
    """Tasks of one A2A context run at once in one directory: a run that writes takes it
    alone (flock, exclusive), runs that only read share it. The test holds the directory as
    a reader would."""
    context = workspace_root / "ctx-shared"
    context.mkdir()
    (context / "notes.txt").write_text("kept\n")
    held = os.open(context, os.O_RDONLY | os.O_DIRECTORY)
    writes: list[Any] = []
    try:
        fcntl.flock(held, fcntl.LOCK_SH)
        read = executor.run("cat notes.txt", context_id="ctx-shared")
        writer = threading.Thread(
            target=lambda: writes.append(
                executor.run("echo new > out.txt", context_id="ctx-shared")
            )
        )
        writer.start()
        writer.join(timeout=2)
        # Still waiting for the reader's lock: nothing written.
        assert (writer.is_alive(), (context / "out.txt").exists()) == (True, False)
    finally:
        os.close(held)  # the reader is done
    writer.join(timeout=60)

    assert (read.outcome, read.stdout) == ("exited", b"kept\n")
    [wrote] = writes
    assert (wrote.outcome, wrote.exit_status) == ("exited", 0)
    assert (context / "out.txt").read_text() == "new\n"

"""The sandbox executor of seed 001: ask, then run exactly what was judged, inside the
context, isolated and limited.

    from cs_agent import Executor

    result = Executor.from_env().run("grep -rn error logs/", context_id="ctx-abc123")
    result.outcome      # "exited", "refused", "timed_out", "memory", "killed" or "error"
    result.exit_status  # the command's own status when it exited
    result.stdout       # capped at output_limit bytes (result.truncated says so)

One code path: the operation is checked with Context Service (its rules, then a human when
needed, as ``ApprovalClient.check`` does), and only an allowed answer runs, and what runs is
the command **as the service's answer states it** — the string that was judged, or the one
a reviewer edited — handed to ``bash -c`` as one argument, never re-quoted or rebuilt.

Isolation (the profile's ``executorIsolation``, sent back with every allow):

``namespaces`` (the default)
    bubblewrap and Landlock (``cs_agent.sandbox``): the image's system directories
    read-only, a ``/proc`` of the command's own PID namespace, a minimal ``/dev``, a private
    ``/tmp`` of bounded size, and the context's own directory at the same path it has
    outside (``/workspace/<context id>``, so that the absolute paths the rules judged mean
    the same thing) — nothing else of the workspace, no capabilities, no network unless a
    network effect was judged and the profile has one. Inside, Landlock holds the command to
    the effects the rules judged (``execution.effects``): reading, writing or deleting
    anything else fails with "Permission denied", and the run report names it.
``none``
    No sandbox: the command runs in the context's directory with the limits only. The
    executor refuses it unless the agent also sets ``CS_EXECUTOR_ALLOW_NONE=1``.

Limits (``cs_agent.limits``): ``max_execution_time_seconds`` (the whole process tree is
killed when it passes), ``max_memory_mb`` and a process count (a cgroup of the run's own
when the executor may create one, which also tells an out-of-memory kill apart;
``RLIMIT_AS``/``RLIMIT_NPROC`` otherwise; the result says which applied) from the agent
type's sources.json; ``/tmp`` is half the memory limit; the output is capped. The
environment (``cs_agent.environment``) is scrubbed to ``PASSED_THROUGH`` plus the context's
virtualenv, which the first ``pip install`` creates (``/workspace/<ctx>/.venv``, first on
``PATH`` from then on), and git's settings that keep a cloned repository from running its
own code (``GIT_CONFIG``).

Every run is reported back to the service (``POST /v1/runs``), which checks that the string
run is the string judged and writes it to the audit log next to the decision.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from cs_agent import sandbox, seccomp
from cs_agent.client import ApprovalClient, ApprovalError, Verdict
from cs_agent.egress import MAX_REFUSALS as MAX_REFUSED
from cs_agent.egress import Connect, EgressPolicy, EgressProxy
from cs_agent.environment import command_environment
from cs_agent.limits import (
    DEFAULT_MAX_PROCESSES,
    DEFAULT_OUTPUT_LIMIT,
    VENV_LIMITS,
    Cgroups,
    Limits,
    limited_argv,
)
from cs_agent.sandbox import Plan, RunDirectory, SandboxError
from cs_agent.seccomp import SeccompError

# Exit codes of ``python -m cs_agent run`` that are not the command's own (which, as in a
# shell, is its status, or 128 + the signal that killed it).
EXIT_REFUSED = 125
EXIT_TIMED_OUT = 124  # as coreutils' timeout
EXIT_MEMORY = 123
EXIT_ERROR = 122


class ExecutorError(Exception):
    """The executor cannot run anything here (missing program, bad configuration)."""


@dataclass(frozen=True)
class RunResult:
    """What happened. ``command`` is the string that ran (None when nothing ran)."""

    outcome: str  # exited | refused | timed_out | memory | killed | error
    verdict: Verdict
    command: str | None = None
    exit_status: int | None = None
    signal: int | None = None
    duration: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""
    truncated: bool = False
    isolation: str | None = None
    memory_enforcement: str | None = None  # cgroup | rlimit
    process_enforcement: str | None = None  # cgroup | rlimit
    # What the command could reach: proxy (the egress proxy, by host), none, or pod (the
    # Pod's network: isolation none only).
    network: str | None = None
    # What was refused: {"action", "path", "error", "reportedBy"}, where reportedBy is
    # "executor" (the egress proxy's record) or "program" (read from its error output).
    refused_effects: tuple[dict[str, str], ...] = ()
    message: str = ""
    run_id: str | None = None  # the service's record of this run

    @property
    def exit_code(self) -> int:
        """The CLI's exit code (see EXIT_*)."""
        if self.outcome == "exited" and self.exit_status is not None:
            return self.exit_status
        if self.outcome == "killed" and self.signal is not None:
            return 128 + self.signal
        return {
            "refused": EXIT_REFUSED,
            "timed_out": EXIT_TIMED_OUT,
            "memory": EXIT_MEMORY,
        }.get(self.outcome, EXIT_ERROR)


@dataclass
class _Capture:
    """One output stream, kept up to ``limit`` bytes and counted past it."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read(65536):
            self.total += len(chunk)
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]


def _pip_installs(verdict: Verdict) -> bool:
    """Whether the judged line installs with pip (the first one creates the virtualenv)."""
    for part in verdict.evaluation.get("parts") or []:
        words = str(part.get("text", "")).split()
        if words[:1] in (["pip"], ["pip3"]) or words[1:3] == ["-m", "pip"]:
            return True
    return False


class Executor:
    def __init__(
        self,
        client: ApprovalClient,
        *,
        workspace_root: str = "/workspace",
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        approval_timeout: float = 300.0,
        allow_no_isolation: bool = False,
        memory_cgroups: bool = True,
        memory_rlimit: bool | None = None,
        max_processes: int = DEFAULT_MAX_PROCESSES,
        environ: Mapping[str, str] | None = None,
        system_dirs: tuple[str, ...] = sandbox.SYSTEM_DIRS,
        egress_pinned: Mapping[str, tuple[str, int]] | None = None,
        egress_connect: Connect | None = None,
    ) -> None:
        self.client = client
        self.workspace_root = Path(workspace_root)
        self.output_limit = output_limit
        self.approval_timeout = approval_timeout
        self.allow_no_isolation = allow_no_isolation
        # False: rlimits only, even where a cgroup could be made (tests of that path).
        self.memory_cgroups = memory_cgroups
        # Without a memory cgroup the limit holds per process only (RLIMIT_AS: each of N
        # processes may use all of it): refused unless the agent accepts that. Not given:
        # the Pod's CS_EXECUTOR_MEMORY_RLIMIT (deploy/agent/pod.yaml sets it), so that it
        # holds for every executor an agent makes, not only for from_env's.
        self.memory_rlimit = (
            os.environ.get("CS_EXECUTOR_MEMORY_RLIMIT") == "1"
            if memory_rlimit is None
            else memory_rlimit
        )
        self.max_processes = max_processes
        self.environ = dict(os.environ if environ is None else environ)
        # What is bound read-only inside the sandbox (the image's system directories).
        self.system_dirs = system_dirs
        # The egress proxy's name overrides and dialler (EgressProxy): the tests' loopback
        # stand-ins for real hosts.
        self.egress_pinned = dict(egress_pinned or {})
        self.egress_connect = egress_connect

    @classmethod
    def from_env(cls, client: ApprovalClient | None = None) -> Executor:
        """The client's settings (``CS_URL``, ``CS_TOKEN``, ``CS_AGENT_TYPE``…) and
        ``CS_WORKSPACE_ROOT`` (default /workspace), ``CS_EXECUTOR_OUTPUT_LIMIT`` (bytes),
        ``CS_EXECUTOR_ALLOW_NONE=1`` (accept profiles whose isolation is ``none``),
        ``CS_EXECUTOR_MEMORY_RLIMIT=1`` (where no memory cgroup can be made, accept a limit
        per process), ``CS_EXECUTOR_MAX_PROCESSES`` (default 256)."""
        return cls(
            client or ApprovalClient.from_env(),
            workspace_root=os.environ.get("CS_WORKSPACE_ROOT", "/workspace"),
            output_limit=int(os.environ.get("CS_EXECUTOR_OUTPUT_LIMIT", DEFAULT_OUTPUT_LIMIT)),
            allow_no_isolation=os.environ.get("CS_EXECUTOR_ALLOW_NONE") == "1",
            max_processes=int(os.environ.get("CS_EXECUTOR_MAX_PROCESSES", DEFAULT_MAX_PROCESSES)),
        )

    # --- The loop: check, run what was judged, report ----------------------------------------

    def run(
        self,
        command: str,
        *,
        context_id: str,
        on_pending: Callable[[dict[str, Any]], None] | None = None,
    ) -> RunResult:
        verdict = self.client.check(
            {"kind": "shell", "command": command},
            context_id,
            timeout=self.approval_timeout,
            on_pending=on_pending,
        )
        return self.run_verdict(verdict, context_id=context_id)

    def run_verdict(self, verdict: Verdict, *, context_id: str) -> RunResult:
        """Run what an allowed verdict allowed (``run`` without the asking: for a graph
        that interrupted while a human decided, and resumes with ``client.outcome(id)``)."""
        result = self.execute(verdict, context_id=context_id)
        if result.outcome in ("refused", "error"):
            return result  # nothing ran: nothing to report
        return self._report(result, context_id)

    def execute(self, verdict: Verdict, *, context_id: str) -> RunResult:
        """Run what an allowed verdict allowed, in its sandbox, without telling the service
        (``run_verdict`` reports it)."""
        if not verdict.allowed:
            return RunResult("refused", verdict, message=verdict.reason or verdict.status)
        judged = (verdict.operation or {}).get("command")
        if verdict.operation.get("kind") != "shell" or not isinstance(judged, str):
            # Fail closed: an allow without the operation it allowed runs nothing.
            return RunResult("error", verdict, message="the answer did not say what was judged")
        try:
            return self._execute(judged, context_id, verdict)
        except ExecutorError as exc:
            return RunResult("error", verdict, message=str(exc))

    def _report(self, result: RunResult, context_id: str) -> RunResult:
        """Tell the service what ran. The command has already run, so a failure to report
        is kept in the result rather than raised."""
        try:
            record = self.client.report_run(
                result.verdict,
                context_id=context_id,
                command=result.command or "",
                outcome=result.outcome,
                exit_status=result.exit_status,
                signal=result.signal,
                duration=result.duration,
                stdout_bytes=len(result.stdout),
                stderr_bytes=len(result.stderr),
                truncated=result.truncated,
                refused_effects=list(result.refused_effects),
                sandbox={
                    "network": result.network or "pod",
                    "memory": result.memory_enforcement or "rlimit",
                    "processes": result.process_enforcement or "rlimit",
                },
            )
        except ApprovalError as exc:
            return _replace(result, message=f"{result.message} (not reported: {exc})".strip())
        return _replace(result, run_id=str(record.get("id")))

    # --- Running -----------------------------------------------------------------------------

    def context_dir(self, context_id: str) -> Path:
        # Context ids cannot hold '/', and '.' / '..' are refused by the service.
        if "/" in context_id or context_id in ("", ".", ".."):
            raise ExecutorError(f"not a context id: {context_id!r}")
        return self.workspace_root / context_id

    def _execute(self, command: str, context_id: str, verdict: Verdict) -> RunResult:
        execution = verdict.execution or {}
        isolation = str(execution.get("isolation") or "namespaces")
        if isolation == "none" and not self.allow_no_isolation:
            raise ExecutorError(
                "the profile runs commands without isolation, which this executor refuses "
                "unless CS_EXECUTOR_ALLOW_NONE=1 is set"
            )
        if isolation not in ("namespaces", "none"):
            raise ExecutorError(f"unknown isolation {isolation!r}")
        limits = Limits.from_execution(execution, self.output_limit)
        context = self.context_dir(context_id)
        judged_in = execution.get("workspace")
        if judged_in is not None and Path(str(judged_in)) != context:
            # Relative and absolute paths were judged against another directory.
            raise ExecutorError(
                f"the rules judged this command for {judged_in}, but this executor runs "
                f"contexts in {context} (set CS_WORKSPACE_ROOT, or the profile's "
                "context_workspace)"
            )
        try:
            sandbox.refuse_importable_workspace(self.workspace_root)
            if isolation == "namespaces":
                if context.parts[1:2] == ("tmp",):
                    raise ExecutorError(
                        f"the workspace root {self.workspace_root} is under /tmp, which the "
                        "sandbox replaces with its own: put the workspace elsewhere"
                    )
                sandbox.bwrap_path()
                sandbox.sandbox_python()
                seccomp.program()
            context_fd = sandbox.open_context(self.workspace_root, context_id)
        except (SandboxError, SeccompError) as exc:
            raise ExecutorError(str(exc)) from None
        effects = verdict.execution.get("effects") if verdict.execution else None
        if not isinstance(effects, Mapping):
            # Fail closed: an answer that does not say what was judged gets the context and
            # no network.
            effects = {"read": [f"{context}/**"], "write": [f"{context}/**"], "network": []}
        writes = bool(effects.get("write") or effects.get("delete")) or _pip_installs(verdict)
        try:
            with _context_lock(context_fd, exclusive=writes):
                return self._execute_in(
                    command, _Run(context, context_fd, isolation, effects, None), limits, verdict
                )
        finally:
            os.close(context_fd)

    def _execute_in(self, command: str, run: _Run, limits: Limits, verdict: Verdict) -> RunResult:
        """Run ``command`` held to ``run``'s judged effects (its egress set here)."""
        execution = verdict.execution or {}
        context, context_fd = run.context, run.context_fd
        if _pip_installs(verdict) and not sandbox.has_venv(context_fd):
            # The executor's own step, the same for every context (seed 001), with limits of
            # its own: ensurepip takes longer and more memory than many commands may.
            made = self._spawn(
                "python3 -m venv .venv",
                _Run(context, context_fd, run.isolation, {"write": [f"{context}/**"]}, None),
                VENV_LIMITS,
            )
            if made.outcome != "exited" or made.exit_status != 0:
                raise ExecutorError(
                    "could not create the context's virtualenv: "
                    + made.stderr.decode(errors="replace")[-500:]
                )
        if execution.get("network", "pod") == "pod" and run.effects.get("network"):
            egress = EgressPolicy.for_run(run.effects["network"], execution.get("egress"))
            run = replace(run, egress=egress)
        result = self._spawn(command, run, limits)
        return _replace(result, verdict=verdict)

    def _spawn(self, command: str, run: _Run, limits: Limits) -> RunResult:
        memory = limits.memory_mb * 1024 * 1024
        cgroups = Cgroups.create(memory, self.max_processes) if self.memory_cgroups else Cgroups()
        if cgroups.memory is None and not self.memory_rlimit:
            cgroups.remove()
            raise ExecutorError(
                f"the memory limit ({limits.memory_mb} MB) cannot be held here: the executor "
                "cannot make a memory cgroup of its own (docs/agent-client.md, 'Limits'); set "
                "CS_EXECUTOR_MEMORY_RLIMIT=1 to accept it per process (RLIMIT_AS), where each "
                "process the command starts may use it all"
            )
        if run.isolation == "none":
            venv = sandbox.has_venv(run.context_fd)
            env = command_environment(self.environ, run.context, sandboxed=False, venv=venv)
            return self._wait(command, run, limits, cgroups, ["/bin/bash", "-c", command], env)
        try:
            directory = RunDirectory(
                run.context, sandbox.venv_programs(run.context_fd), sandbox.image_git()
            )
        except OSError as exc:
            cgroups.remove()
            raise ExecutorError(f"could not prepare the run's directory: {exc}") from None
        proxy = None
        filter_fd = -1
        try:
            if run.egress is not None and run.egress.reaches_anything:
                proxy = EgressProxy(
                    run.egress,
                    directory.socket,
                    pinned=self.egress_pinned,
                    connect=self.egress_connect,
                )
                proxy.start()
            env = command_environment(
                self.environ,
                run.context,
                sandboxed=True,
                venv=sandbox.has_venv(run.context_fd),
                proxy=proxy is not None,
            )
            filter_fd = seccomp.program_fd()
            plan = Plan(
                context=run.context,
                context_fd=run.context_fd,
                grants=sandbox.grants_for(run.effects, run.context),
                run_directory=directory,
                seccomp_fd=filter_fd,
                bridge=proxy is not None,
                # Half the memory limit: tmpfs pages count against a memory cgroup too, and
                # a full /tmp should fail a write (ENOSPC), not kill the command.
                tmp_bytes=memory // 2,
                environment=env,
                system_dirs=self.system_dirs,
            )
            result = self._wait(
                command, run, limits, cgroups, sandbox.bwrap_argv(plan, command), env, filter_fd
            )
        except OSError as exc:
            cgroups.remove()
            raise ExecutorError(f"could not start the sandbox: {exc}") from None
        finally:
            if filter_fd >= 0:
                os.close(filter_fd)
            if proxy is not None:
                proxy.stop()
            directory.remove()
        refused = sandbox.refused_effects(result.stderr, plan)
        return _replace(
            result,
            network="proxy" if proxy is not None else "none",
            refused_effects=tuple([*(proxy.refused if proxy else []), *refused][:MAX_REFUSED]),
        )

    def _wait(
        self,
        command: str,
        run: _Run,
        limits: Limits,
        cgroups: Cgroups,
        inner: list[str],
        env: Mapping[str, str],
        *fds: int,
    ) -> RunResult:
        """Start ``inner`` behind the limits, wait for it (to the time limit), and say what
        happened."""
        memory = limits.memory_mb * 1024 * 1024
        # The limits apply before anything of the command starts: a shell joins the
        # cgroups (or lowers its own rlimits) and then becomes the sandbox.
        limited = limited_argv(cgroups, memory, self.max_processes, inner)
        stdout, stderr = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                limited,
                cwd=run.context,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # one process group to kill
                pass_fds=(run.context_fd, *fds),
            )
        except OSError as exc:
            cgroups.remove()
            raise ExecutorError(f"could not start the command: {exc}") from None
        readers = [
            threading.Thread(target=stdout.drain, args=(process.stdout,), daemon=True),
            threading.Thread(target=stderr.drain, args=(process.stderr,), daemon=True),
        ]
        for reader in readers:
            reader.start()
        # A timer kills the group at the limit; the wait itself blocks in waitpid (a wait
        # with a timeout polls, and noticed the end up to 50 ms late).
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _kill_group(process.pid)

        timer = threading.Timer(limits.time_seconds, expire)
        timer.start()
        try:
            process.wait()
        finally:
            timer.cancel()
        timed_out = expired.is_set()
        # Whatever the command left behind in its group goes with it.
        _kill_group(process.pid)
        for reader in readers:
            reader.join(timeout=5)
        duration = time.monotonic() - started
        try:
            out_of_memory = cgroups.memory is not None and cgroups.memory.oom_killed()
        finally:
            cgroups.remove()
        status = process.returncode
        killed_by = -status if status < 0 else None
        if timed_out:
            outcome = "timed_out"
        elif out_of_memory:
            outcome = "memory"
        elif killed_by is not None:
            outcome = "killed"
        else:
            outcome = "exited"
        return RunResult(
            outcome,
            Verdict(False, "pending"),
            command=command,
            exit_status=status if outcome == "exited" else None,
            # The kernel's out-of-memory killer, and the executor at the time limit, use
            # SIGKILL.
            signal=killed_by or signal.SIGKILL if outcome in ("memory", "timed_out") else killed_by,
            duration=duration,
            stdout=bytes(stdout.data),
            stderr=bytes(stderr.data),
            truncated=stdout.total > len(stdout.data) or stderr.total > len(stderr.data),
            isolation=run.isolation,
            memory_enforcement="cgroup" if cgroups.memory is not None else "rlimit",
            process_enforcement="cgroup" if cgroups.pids is not None else "rlimit",
            network="pod",
        )


@dataclass(frozen=True)
class _Run:
    """Where and how one command runs: ``egress`` None is no network at all."""

    context: Path
    context_fd: int
    isolation: str
    effects: Mapping[str, Any]
    egress: EgressPolicy | None


@contextlib.contextmanager
def _context_lock(context_fd: int, *, exclusive: bool) -> Iterator[None]:
    """A context's runs that write take its directory alone (``flock``, exclusive); runs
    that only read share it. Several A2A tasks of one context run at once (seed 001: A2A
    does not cancel the earlier task) in one directory, and two writers there would
    interleave (two ``pip install`` runs in one .venv). The lock is the directory's own, so
    every executor process on this node takes the same one; a network file system's
    locking is its own business."""
    # The context's descriptor is O_PATH, which flock refuses: reopen it for reading.
    fd = os.open(f"/proc/self/fd/{context_fd}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # and with it the lock


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _replace(result: RunResult, **changes: Any) -> RunResult:
    return replace(result, **changes)

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
    ``unshare --user --map-root-user --mount --pid --fork``: a new user namespace (root
    inside is the agent's own uid outside), mount namespace and PID namespace. Inside, a
    private tmpfs becomes ``/``, with ``/usr`` (and the merged ``/bin``, ``/lib``…),
    ``/etc`` read-only, a fresh ``/tmp``, the device files programs need, and the context's
    own directory at the same path it has outside (``/workspace/<context id>``, so that the
    absolute paths the rules judged mean the same thing). No other context is there; the
    process cannot see the agent's other processes; the working directory is the context.
``none``
    No namespaces: the command runs in the context's directory with the limits only. The
    executor refuses it unless the agent also sets ``CS_EXECUTOR_ALLOW_NONE=1``.

Limits: ``max_execution_time_seconds`` (the whole process tree is killed when it passes)
and ``max_memory_mb`` (a memory cgroup when the executor may create one, which tells an
out-of-memory kill apart; ``RLIMIT_AS`` otherwise) from the agent type's sources.json; the
output is capped. The environment is scrubbed to ``ENVIRONMENT`` plus the context's
virtualenv, which the first ``pip install`` creates (``/workspace/<ctx>/.venv``, first on
``PATH`` from then on).

Every run is reported back to the service (``POST /v1/runs``), which checks that the string
run is the string judged and writes it to the audit log next to the decision.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from cs_agent.client import ApprovalClient, ApprovalError, Verdict

# Exit codes of ``python -m cs_agent run`` that are not the command's own (which, as in a
# shell, is its status, or 128 + the signal that killed it).
EXIT_REFUSED = 125
EXIT_TIMED_OUT = 124  # as coreutils' timeout
EXIT_MEMORY = 123
EXIT_ERROR = 122

DEFAULT_TIME_LIMIT = 300.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_OUTPUT_LIMIT = 1024 * 1024
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What a command sees of the environment: these, taken from the executor's own if set,
# and nothing else (no tokens, no service URLs, no proxies, no PYTHON*/LD_* variables).
PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
# Runs as root of the new user namespace, before the command: the image's programs,
# libraries and configuration read-only, the context at its own path, a private /tmp and
# the device files programs need. It only ever receives the command as an argument ("$4"),
# which reaches bash as one word: nothing is re-quoted.
_SETUP = r"""
set -eu
root=$1; context=$2; inside=$3
mount -t tmpfs -o mode=0755 cs-executor "$root"
for dir in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt; do
  if [ -L "$dir" ]; then
    ln -s "$(readlink "$dir")" "$root$dir"
  elif [ -d "$dir" ]; then
    mkdir -p "$root$dir"
    mount --rbind "$dir" "$root$dir"
    mount -o remount,bind,ro "$root$dir"
  fi
done
mkdir -p "$root/tmp" "$root/dev" "$root/proc"
mount -t tmpfs -o mode=1777 cs-tmp "$root/tmp"
mkdir -p "$root$inside"
mount --bind "$context" "$root$inside"
for device in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty; do
  if [ -e "$device" ]; then
    : > "$root$device"
    mount --bind "$device" "$root$device" 2>/dev/null || rm -f "$root$device"
  fi
done
ln -s /proc/self/fd "$root/dev/fd"
# A masked /proc (as in most containers) cannot be mounted again; programs run without it.
mount -t proc proc "$root/proc" 2>/dev/null || true
# The namespace's first process stays a plain shell that waits for the command and exits
# with its status (128 + N when a signal ended it, as shells report it).
exec chroot "$root" /bin/sh -c 'cd -- "$1" || exit 126; /bin/bash -c "$2"' sh "$inside" "$4"
"""


_LIMIT = r"""
if [ -n "$1" ]; then echo $$ > "$1"; else ulimit -v "$2"; fi
shift 2
exec "$@"
"""


class ExecutorError(Exception):
    """The executor cannot run anything here (missing program, bad configuration)."""


@dataclass(frozen=True)
class Limits:
    time_seconds: float = DEFAULT_TIME_LIMIT
    memory_mb: int = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_LIMIT

    @classmethod
    def from_execution(cls, execution: Mapping[str, Any], output_bytes: int) -> Limits:
        return cls(
            time_seconds=float(execution.get("timeLimitSeconds") or DEFAULT_TIME_LIMIT),
            memory_mb=int(execution.get("memoryLimitMb") or DEFAULT_MEMORY_MB),
            output_bytes=output_bytes,
        )


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


VENV_LIMITS = Limits(time_seconds=120, memory_mb=1024)


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


class _MemoryCgroup:
    """A memory cgroup of its own under the executor's (v2, or v1's memory controller),
    when the executor may create one: the kernel then kills at the limit and says so."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    @classmethod
    def create(cls, limit_bytes: int) -> _MemoryCgroup | None:
        for version, base, limit_file in (
            (2, Path("/sys/fs/cgroup"), "memory.max"),
            (1, Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes"),
        ):
            own = _own_cgroup(version)
            if own is None:
                continue
            parent = base / own.lstrip("/")
            if (
                not (parent / limit_file).exists()
                and not (parent / "cgroup.subtree_control").exists()
            ):
                continue
            path = parent / f"cs-executor-{os.getpid()}-{time.monotonic_ns()}"
            try:
                path.mkdir()
            except OSError:
                continue  # not ours to divide (the usual case in a Pod)
            try:
                (path / limit_file).write_text(str(limit_bytes))
                # Swap would let it run on past the limit instead of being stopped.
                if version == 1 and (path / "memory.memsw.limit_in_bytes").exists():
                    (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
                elif version == 2 and (path / "memory.swap.max").exists():
                    (path / "memory.swap.max").write_text("0")
            except OSError:
                path.rmdir()
                continue
            return cls(path, version)
        return None

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_killed(self) -> bool:
        if self.version == 2:
            events = (self.path / "memory.events").read_text()
        else:
            events = (self.path / "memory.oom_control").read_text()
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and int(value or 0) > 0:
                return True
        return False

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)  # the last process is still leaving


def _own_cgroup(version: int) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if version == 2 and controllers == "":
            return path
        if version == 1 and "memory" in controllers.split(","):
            return path
    return None


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
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.workspace_root = Path(workspace_root)
        self.output_limit = output_limit
        self.approval_timeout = approval_timeout
        self.allow_no_isolation = allow_no_isolation
        # False: RLIMIT_AS only, even where a cgroup could be made (tests of that path).
        self.memory_cgroups = memory_cgroups
        self.environ = dict(os.environ if environ is None else environ)

    @classmethod
    def from_env(cls, client: ApprovalClient | None = None) -> Executor:
        """The client's settings (``CS_URL``, ``CS_TOKEN``, ``CS_AGENT_TYPE``…) and
        ``CS_WORKSPACE_ROOT`` (default /workspace), ``CS_EXECUTOR_OUTPUT_LIMIT`` (bytes),
        ``CS_EXECUTOR_ALLOW_NONE=1`` (accept profiles whose isolation is ``none``)."""
        return cls(
            client or ApprovalClient.from_env(),
            workspace_root=os.environ.get("CS_WORKSPACE_ROOT", "/workspace"),
            output_limit=int(os.environ.get("CS_EXECUTOR_OUTPUT_LIMIT", DEFAULT_OUTPUT_LIMIT)),
            allow_no_isolation=os.environ.get("CS_EXECUTOR_ALLOW_NONE") == "1",
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
        if not verdict.allowed:
            return RunResult("refused", verdict, message=verdict.reason or verdict.status)
        judged = (verdict.operation or {}).get("command")
        if verdict.operation.get("kind") != "shell" or not isinstance(judged, str):
            # Fail closed: an allow without the operation it allowed runs nothing.
            return RunResult("error", verdict, message="the answer did not say what was judged")
        try:
            result = self._execute(judged, context_id, verdict)
        except ExecutorError as exc:
            return RunResult("error", verdict, message=str(exc))
        return self._report(result, context_id)

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
        context.mkdir(parents=True, exist_ok=True)
        if _pip_installs(verdict) and not (context / ".venv").exists():
            # The executor's own step, the same for every context (seed 001), with limits of
            # its own: ensurepip takes longer and more memory than many commands may.
            made = self._spawn("python3 -m venv .venv", context, isolation, VENV_LIMITS, venv=False)
            if made.outcome != "exited" or made.exit_status != 0:
                raise ExecutorError(
                    "could not create the context's virtualenv: "
                    + made.stderr.decode(errors="replace")[-500:]
                )
        result = self._spawn(command, context, isolation, limits, venv=True)
        return _replace(result, verdict=verdict)

    def _environment(self, context: Path, *, venv: bool) -> dict[str, str]:
        env = {name: self.environ[name] for name in PASSED_THROUGH if name in self.environ}
        path = SYSTEM_PATH
        if venv and (context / ".venv" / "bin").is_dir():
            env["VIRTUAL_ENV"] = str(context / ".venv")
            path = f"{context / '.venv' / 'bin'}:{path}"
        env.update({"PATH": path, "HOME": str(context), "PWD": str(context), "TMPDIR": "/tmp"})  # noqa: S108 - the namespace's own
        env.setdefault("LANG", "C.UTF-8")
        return env

    def _argv(self, command: str, context: Path, isolation: str, root: str) -> list[str]:
        if isolation == "none":
            return ["/bin/bash", "-c", command]
        unshare = shutil.which("unshare", path=SYSTEM_PATH)
        if unshare is None or shutil.which("chroot", path=SYSTEM_PATH) is None:
            raise ExecutorError("namespaces isolation needs util-linux's unshare and chroot")
        return [
            unshare,
            "--user",
            "--map-root-user",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--",
            "/bin/sh",
            "-c",
            _SETUP,
            "cs-executor",
            root,
            str(context),
            str(context),
            command,
        ]

    def _spawn(
        self, command: str, context: Path, isolation: str, limits: Limits, *, venv: bool
    ) -> RunResult:
        memory = limits.memory_mb * 1024 * 1024
        cgroup = _MemoryCgroup.create(memory) if self.memory_cgroups else None
        root = tempfile.mkdtemp(prefix="cs-executor-")
        env = self._environment(context, venv=venv)
        # The limit applies before anything of the command starts: a shell joins the cgroup
        # (or lowers its address-space limit) and then becomes the command.
        limited = [
            "/bin/sh",
            "-c",
            _LIMIT,
            "cs-limit",
            str(cgroup.procs) if cgroup is not None else "",
            str(memory // 1024),
            *self._argv(command, context, isolation, root),
        ]
        stdout, stderr = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                limited,
                cwd=context,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # one process group to kill
            )
        except OSError as exc:
            if cgroup is not None:
                cgroup.remove()
            os.rmdir(root)
            raise ExecutorError(f"could not start the command: {exc}") from None
        readers = [
            threading.Thread(target=stdout.drain, args=(process.stdout,), daemon=True),
            threading.Thread(target=stderr.drain, args=(process.stderr,), daemon=True),
        ]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            process.wait(timeout=limits.time_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process.pid)
            process.wait()
        # Whatever the command left behind in its group goes with it.
        _kill_group(process.pid)
        for reader in readers:
            reader.join(timeout=5)
        duration = time.monotonic() - started
        try:
            out_of_memory = cgroup is not None and cgroup.oom_killed()
        finally:
            if cgroup is not None:
                cgroup.remove()
            os.rmdir(root)
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
            isolation=isolation,
            memory_enforcement="cgroup" if cgroup is not None else "rlimit",
        )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _replace(result: RunResult, **changes: Any) -> RunResult:
    return replace(result, **changes)

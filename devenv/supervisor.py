"""Run several long-lived processes in the foreground and stop them all together.

Output lines are prefixed with the process name. Every line goes to the log file when one
is given; a line its process marks routine (``ProcessSpec.routine``: a task received, run,
scheduled every few seconds) goes only there, so the foreground keeps what a person starting
the service needs to see. A child that exits is started again
after a delay that doubles while it keeps failing (1 s up to 30 s, reset once it has run
for a minute), as Kubernetes restarts a container: one process losing its database for a
moment must not take the whole local stack down. Ctrl-C (or SIGTERM) stops every child by
its PID: SIGTERM first, SIGKILL after a grace period.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TextIO

from devenv.system import terminate_pid


def _never(line: str) -> bool:
    return False


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: Sequence[str]
    routine: Callable[[str], bool] = _never
    # Set for this process on top of the stack's environment (the agent's own settings).
    env: Mapping[str, str] = field(default_factory=dict)


_log_lock = threading.Lock()


def _pump(
    spec: ProcessSpec, width: int, stream: subprocess.Popen[bytes], log: TextIO | None
) -> None:
    assert stream.stdout is not None
    for raw in iter(stream.stdout.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        shown = f"{spec.name:<{width}} | {line}\n"
        if log is not None:
            with _log_lock:
                log.write(shown)
                log.flush()
        if log is None or not spec.routine(line):
            sys.stdout.write(shown)
            sys.stdout.flush()


RESTART_DELAY_MIN = 1.0
RESTART_DELAY_MAX = 30.0
# A child that ran this long before exiting is restarted after the shortest delay again.
HEALTHY_AFTER = 60.0


@dataclass
class _Child:
    spec: ProcessSpec
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    delay: float = RESTART_DELAY_MIN
    restart_at: float | None = None


def _start(child: _Child, env: Mapping[str, str], width: int, log: TextIO | None) -> None:
    # A new session keeps the terminal's Ctrl-C away from the children: we stop them
    # ourselves, in order, instead of all at once in mid-start.
    child.proc = subprocess.Popen(
        list(child.spec.argv),
        env={**env, **child.spec.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    child.started_at = time.monotonic()
    child.restart_at = None
    threading.Thread(target=_pump, args=(child.spec, width, child.proc, log), daemon=True).start()


def run_all(
    specs: Sequence[ProcessSpec], env: Mapping[str, str], *, log_file: Path | None = None
) -> int:
    """Start every process and keep them running until Ctrl-C (or SIGTERM); with
    ``log_file``, every line is appended there too, and routine ones only there."""
    if log_file is None:
        return _supervise(specs, env, None)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as log:
        return _supervise(specs, env, log)


def _supervise(specs: Sequence[ProcessSpec], env: Mapping[str, str], log: TextIO | None) -> int:
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    width = max(len(spec.name) for spec in specs)
    children = [_Child(spec) for spec in specs]
    try:
        for child in children:
            _start(child, env, width, log)
        while not stop.is_set():
            now = time.monotonic()
            for child in children:
                if child.restart_at is not None:
                    if now >= child.restart_at:
                        print(f"starting {child.spec.name} again")
                        _start(child, env, width, log)
                    continue
                assert child.proc is not None
                code = child.proc.poll()
                if code is None:
                    continue
                if now - child.started_at >= HEALTHY_AFTER:
                    child.delay = RESTART_DELAY_MIN
                print(
                    f"{child.spec.name} exited with status {code}; "
                    f"restarting it in {child.delay:.0f}s"
                )
                child.restart_at = now + child.delay
                child.delay = min(child.delay * 2, RESTART_DELAY_MAX)
            stop.wait(0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for child in reversed(children):
            proc = child.proc
            if proc is not None and proc.poll() is None:
                print(f"stopping {child.spec.name} (pid {proc.pid})")
                terminate_pid(proc.pid, timeout=15, group=True)
            if proc is not None:
                proc.wait()
    return 0

"""Run several long-lived processes in the foreground and stop them all together.

Output lines are prefixed with the process name. Ctrl-C (or SIGTERM, or any child
exiting) stops every child by its PID: SIGTERM first, SIGKILL after a grace period.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType

from contextsvc.devenv.system import terminate_pid


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: Sequence[str]


def _pump(name: str, width: int, stream: subprocess.Popen[bytes]) -> None:
    assert stream.stdout is not None
    for raw in iter(stream.stdout.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        sys.stdout.write(f"{name:<{width}} | {line}\n")
        sys.stdout.flush()


def run_all(specs: Sequence[ProcessSpec], env: Mapping[str, str]) -> int:
    """Start every process; return when the first one ends or on Ctrl-C."""
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    width = max(len(spec.name) for spec in specs)
    children: list[tuple[ProcessSpec, subprocess.Popen[bytes]]] = []
    exit_code = 0
    try:
        for spec in specs:
            # A new session keeps the terminal's Ctrl-C away from the children: we stop
            # them ourselves, in order, instead of all at once in mid-start.
            proc = subprocess.Popen(
                list(spec.argv),
                env=dict(env),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            children.append((spec, proc))
            threading.Thread(target=_pump, args=(spec.name, width, proc), daemon=True).start()
        while not stop.is_set():
            for spec, proc in children:
                code = proc.poll()
                if code is not None:
                    print(f"{spec.name} exited with status {code}; stopping the others")
                    exit_code = code or 1
                    stop.set()
                    break
            time.sleep(0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for spec, proc in reversed(children):
            if proc.poll() is None:
                print(f"stopping {spec.name} (pid {proc.pid})")
                terminate_pid(proc.pid, timeout=15, group=True)
            proc.wait()
    return exit_code

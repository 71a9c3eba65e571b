"""Starting, recognising and stopping the cluster's processes: each in a session of its own
with a log in ``logs/``, signalled only while it still runs the program started under its
PID; and waiting on a check while watching that none of them exited.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from testenv.build import say
from testenv.cluster.instance import HOST, LOG_DIR, PORTS, STATE_DIR, STOP_TIMEOUT, ClusterError

# Popen objects of processes this Python process started, so that stopping them also
# reaps them (no zombies in a long pytest run).
_children: dict[int, subprocess.Popen[bytes]] = {}


def proc_exe_matches(pid: int, exe: str) -> bool:
    """True when ``pid`` is alive and its command line starts with ``exe``.

    Guards against PID reuse: we only ever signal processes that still run the program we
    started under that PID.
    """
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie (state Z) has finished; treat it as gone.
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    args = raw.split(b"\0")
    return bool(args) and exe.encode() in args[:2]


def stop_pid(pid: int, exe: str, name: str) -> None:
    if not proc_exe_matches(pid, exe):
        _children.pop(pid, None)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        child = _children.get(pid)
        if child is not None and child.poll() is not None:
            break
        if not proc_exe_matches(pid, exe):
            break
        time.sleep(0.05)
    else:
        say(f"{name} (pid {pid}) did not stop on SIGTERM; sending SIGKILL")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    child = _children.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=STOP_TIMEOUT)


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def check_ports() -> None:
    taken = [f"{port} ({what})" for what, port in PORTS.items() if not port_free(port)]
    if taken:
        raise ClusterError(
            "cannot start the test cluster: port(s) "
            + ", ".join(taken)
            + f" on {HOST} are in use by another process (not a cluster this repo started;"
            " see 'ss -ltnp' to find it)"
        )


def spawn(name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = (LOG_DIR / f"{name}.log").open("wb")  # a fresh log for each start
    log.write(f"\n=== {dt.datetime.now().isoformat()} {' '.join(args)}\n".encode())
    log.flush()
    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        cwd=STATE_DIR,
        # Own session: a Ctrl-C in the terminal that ran ``up`` does not reach them.
        start_new_session=True,
    )
    log.close()
    _children[proc.pid] = proc
    return proc


def wait_for(what: str, check: Callable[[], bool], deadline: float, procs: dict[str, int]) -> None:
    while True:
        if check():
            return
        for name, pid in procs.items():
            child = _children.get(pid)
            if child is not None and child.poll() is not None:
                raise ClusterError(
                    f"{name} exited with code {child.returncode} while waiting for {what}; "
                    f"see {LOG_DIR / (name + '.log')}:\n{log_tail(name)}"
                )
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what}; logs are in {LOG_DIR}")
        time.sleep(0.1)


def log_tail(name: str, lines: int = 15) -> str:
    try:
        return "\n".join(
            (LOG_DIR / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
        )
    except OSError:
        return ""

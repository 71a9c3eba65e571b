"""Small helpers shared by the local service managers: packages, ports, processes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
LOCAL_DIR = Path(os.environ.get("CS_LOCAL_DIR", str(REPO_DIR / ".local")))


class DevEnvError(RuntimeError):
    """A local service could not be installed or started; the message says why."""


def say(message: str) -> None:
    print(f"[devenv] {message}", file=sys.stderr, flush=True)


def is_root() -> bool:
    return os.geteuid() == 0


_apt_updated = False


# Wait for another apt-get to finish instead of failing on its lock (dpkg's lock only:
# `apt-get update`'s lists lock has no timeout, hence APT_LOCK as well).
APT_WAIT = ("-o", "DPkg::Lock::Timeout=600")
# The suite's parallel processes may both install Chromium on a new machine: one installs
# while the other waits here, then finds it installed.
APT_LOCK = Path("/var/lock/contextsvc-apt.lock")
_apt_depth = 0


@contextlib.contextmanager
def apt_lock() -> Iterator[None]:
    """Held while this process looks for and installs packages; re-entrant (flock on a
    second open of the file would wait for this process itself)."""
    global _apt_depth
    if _apt_depth:
        _apt_depth += 1
        try:
            yield
        finally:
            _apt_depth -= 1
        return
    APT_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with APT_LOCK.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _apt_depth = 1
        try:
            yield
        finally:
            _apt_depth = 0


def apt_install(*packages: str) -> None:
    """Install Debian packages without starting their system services."""
    global _apt_updated
    if not is_root():
        raise DevEnvError(
            f"missing system packages {', '.join(packages)}; install them with "
            f"'sudo apt-get install {' '.join(packages)}' or run as root"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with apt_lock():
        # Debian starts a packaged service on install; we run our own private instances,
        # so a policy-rc.d that refuses service starts keeps the machine's ports free.
        policy = Path("/usr/sbin/policy-rc.d")
        created_policy = False
        if not policy.exists():
            policy.write_text("#!/bin/sh\nexit 101\n")
            policy.chmod(0o755)
            created_policy = True
        try:
            if not _apt_updated:
                say("apt-get update")
                subprocess.run(
                    ["apt-get", "update", "-q", *APT_WAIT],
                    check=True,
                    env=env,
                    stdout=subprocess.DEVNULL,
                )
                _apt_updated = True
            say(f"apt-get install {' '.join(packages)}")
            subprocess.run(
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_WAIT, *packages],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
            )
        finally:
            if created_policy:
                policy.unlink()


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    """A loopback port nobody listens on right now (for a process we are about to start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        time.sleep(0.1)
    raise DevEnvError(f"{what} did not open 127.0.0.1:{port} within {timeout:.0f}s")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers signal 0; it is gone for our purposes.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def pid_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def terminate_pid(pid: int, *, timeout: float = 15.0, group: bool = False) -> None:
    """SIGTERM one process we started, then SIGKILL if it will not go.

    ``group``: the process leads a session we started it in; whatever of that session is
    left once it is gone (uvicorn's worker processes, when their parent had to be killed)
    is killed too, instead of living on as orphans."""
    if pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
    if group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def which_or_install(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path is None:
        with apt_lock():
            # Another process may have installed it while this one waited for the lock.
            path = shutil.which(binary)
            if path is None:
                apt_install(package)
                path = shutil.which(binary)
    if path is None:
        raise DevEnvError(f"{binary} not found even after installing {package}")
    return path

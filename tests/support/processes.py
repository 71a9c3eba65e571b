"""Real service processes for tests: started as subprocesses, stopped by their PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection

from devenv.system import REPO_DIR, free_port, port_open, terminate_pid

# One directory per parallel test process (pytest-xdist's gw1, …; gw0 and a serial run
# share the first): their processes have the same names.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
LOG_DIR = REPO_DIR / ".local" / ("test-logs" if _WORKER == "gw0" else f"test-logs-{_WORKER}")


def wait_until(
    predicate: Callable[[], object],
    *,
    timeout: float,
    interval: float = 0.05,
    message: str = "condition",
) -> object:
    """Poll until ``predicate()`` is truthy; fail the test with ``message`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {message}")
        time.sleep(interval)


def children_database_url() -> str:
    """The URL of the database the test run is using (``test_…``), for child processes."""
    settings = connection.settings_dict
    return (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST']}:"
        f"{settings['PORT']}/{settings['NAME']}"
    )


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    from django.conf import settings

    env = dict(os.environ)
    # The browser tests relax Django's async check for their own thread only; the service
    # processes keep it, as in production.
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": children_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CS_CELERY_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


@dataclass
class ManagedProcess:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    log_dir: Path = LOG_DIR
    cwd: Path = REPO_DIR
    log_path: Path = field(init=False)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.log_dir / f"{self.name}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> ManagedProcess:
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            list(self.argv),
            env=dict(self.env),
            cwd=self.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stop() ends its children too (uvicorn's workers)
        )
        log.close()
        return self

    def assert_running(self) -> None:
        assert self.proc is not None
        code = self.proc.poll()
        if code is not None:
            raise AssertionError(f"{self.name} exited with {code}:\n{self.log_tail()}")

    def wait_listening(self, port: int, *, timeout: float) -> None:
        """Until the process accepts connections on ``port``; fails at once if it exits."""

        def listening() -> bool:
            self.assert_running()
            return port_open(port)

        wait_until(listening, timeout=timeout, message=f"{self.name} to listen on {port}")

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            terminate_pid(self.proc.pid, timeout=20, group=True)
            self.proc.wait()

    def kill(self) -> None:
        """SIGKILL to the whole process group, as the kubelet ends a container: no
        shutdown handler runs, and children (prefork workers, uvicorn's) die with it."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@contextlib.contextmanager
def paused(process: ManagedProcess) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block and resumed after: what it would have
    done in between happens, in order, when it resumes."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


def celery_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "config", *args]


def manage_argv(*args: str) -> list[str]:
    return [sys.executable, str(REPO_DIR / "manage.py"), *args]


def parent_pid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


@contextlib.contextmanager
def web_process(name: str = "web", extra_env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The real web process (``manage.py serve``: uvicorn, the HTTP bridge, Channels) on a
    free loopback port, against the test database. Yields its base URL."""
    port = free_port()
    server = ManagedProcess(
        name, manage_argv("serve", "--bind", f"127.0.0.1:{port}"), child_env(extra_env)
    ).start()
    try:
        server.wait_listening(port, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()

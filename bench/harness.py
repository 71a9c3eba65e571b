"""A private copy of the whole service for a benchmark: its own database, worker, watcher and
web processes, on the local (or ``KUBECONFIG``) cluster."""

from __future__ import annotations

import http.client
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import django
import psycopg
from django.core.management import call_command

from devenv import services
from devenv.system import REPO_DIR, free_port
from tests.support.processes import ManagedProcess

LOG_DIR = REPO_DIR / ".local" / "bench-logs"


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def fresh_database(name: str) -> str:
    """Drop and recreate ``name`` next to the configured database; returns its URL."""
    base = os.environ.get("DATABASE_URL") or services.local_env()["DATABASE_URL"]
    # Through the server's maintenance database: an earlier benchmark of the same run may
    # have pointed DATABASE_URL at the very database being recreated.
    with psycopg.connect(_with_database(base, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_database(base, name)


@dataclass
class Stack:
    env: dict[str, str]
    web_url: str = ""
    processes: list[ManagedProcess] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> ManagedProcess:
        process = ManagedProcess(name, argv, self.env, log_dir=LOG_DIR).start()
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


@contextmanager
def service_stack(
    *, database: str, kubeconfig: str, web_workers: int = 2, worker_concurrency: int = 4
) -> Iterator[Stack]:
    """Environment + processes; Django in this process is configured for the same database."""
    env = {
        **services.local_env(),
        **os.environ,
        "DATABASE_URL": fresh_database(database),
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "CS_CELERY_QUEUE": f"cs-bench-{os.getpid()}",
        "CS_ALLOWED_NAMESPACES": "*",
        "KUBECONFIG": kubeconfig,
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)
    django.setup()
    call_command("migrate", verbosity=0)
    stack = Stack(env)
    port = free_port()
    try:
        stack.start(
            "worker",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=WARNING",
                f"--concurrency={worker_concurrency}",
                "--without-gossip",
                "--without-mingle",
            ],
        )
        stack.start("watcher", [sys.executable, "manage.py", "watch"])
        web = stack.start(
            "web",
            [
                sys.executable,
                "manage.py",
                "serve",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(web_workers),
            ],
        )
        web.wait_listening(port, timeout=60)
        stack.web_url = f"http://127.0.0.1:{port}"
        yield stack
    finally:
        stack.stop()


class Http:
    """A keep-alive HTTP client, one connection, as a caller's SDK would hold."""

    def __init__(self, base_url: str, token: str) -> None:
        parts = urlsplit(base_url)
        self.conn = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=30
        )
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        payload = json.dumps(body) if body is not None else None
        self.conn.request(method, path, body=payload, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else None)

    def close(self) -> None:
        self.conn.close()

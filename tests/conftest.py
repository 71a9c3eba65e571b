"""Fixtures shared by the cross-app tests: real worker processes against the real stores."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from contextsvc.celery import app as celery_app
from tests.support.processes import ManagedProcess, celery_argv, child_env, wait_until


@pytest.fixture(scope="session")
def celery_worker_process(
    django_db_setup: None, django_db_blocker: object
) -> Iterator[ManagedProcess]:
    """A real ``celery worker`` consuming this run's queue from the real Redis broker and
    writing to this run's PostgreSQL test database."""
    nodename = f"cs-test-{socket.gethostname()}-{id(object())}"
    worker = ManagedProcess(
        "celery-worker",
        celery_argv(
            "worker",
            "--loglevel=INFO",
            "--concurrency=2",
            "-n",
            f"{nodename}@%h",
            "--without-gossip",
            "--without-mingle",
        ),
        child_env(),
    ).start()
    full_name = f"{nodename}@{socket.gethostname()}"

    def answers_ping() -> bool:
        worker.assert_running()
        replies = celery_app.control.ping(destination=[full_name], timeout=0.5) or []
        return any(full_name in reply for reply in replies)

    try:
        wait_until(answers_ping, timeout=60, interval=0.2, message="the Celery worker to start")
        yield worker
    finally:
        worker.stop()

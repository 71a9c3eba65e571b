"""Fixtures shared by every test: the real Kubernetes control plane, a namespace per test,
and the service's own background processes (a Celery worker and the watcher) running as
real subprocesses against the real PostgreSQL, Redis and API server."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextsvc.celery import app as celery_app
from contextsvc.testenv import ClusterHandle, ensure_cluster, throwaway_namespace
from tests.support.processes import (
    ManagedProcess,
    celery_argv,
    child_env,
    manage_argv,
    wait_until,
    web_process,
)
from tests.support.receivers import HttpReceiver, MailServer


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last (after pytest-django's own ordering): Playwright keeps an event
    loop running in the test thread until the session ends, and ``async_to_sync`` refuses
    to run in a thread with a running loop."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[ClusterHandle]:
    """The local control plane (reused if one from this checkout is running, otherwise
    started, and then stopped at the end; ``CS_KEEP_CLUSTER=1`` keeps it). With
    ``CS_TEST_KUBECONFIG`` set, the tests use that cluster instead (see docs/testing.md)."""
    from contextsvc.kube.client import reset_api_client

    external = os.environ.get("CS_TEST_KUBECONFIG")
    handle = (
        ClusterHandle(kubeconfig=Path(external), started_here=False, state=None)  # type: ignore[arg-type]
        if external
        else ensure_cluster()
    )
    os.environ["KUBECONFIG"] = str(handle.kubeconfig)
    reset_api_client()
    try:
        yield handle
    finally:
        if os.environ.get("CS_KEEP_CLUSTER") != "1":
            handle.stop()


@pytest.fixture
def kube_api(kube_cluster: ClusterHandle) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for the cluster's admin user."""
    with kube_cluster.api_client() as api:
        yield api


@pytest.fixture
def namespace(kube_cluster: ClusterHandle) -> Iterator[str]:
    """A namespace of this test's own, deleted afterwards."""
    with throwaway_namespace("t", kubeconfig=kube_cluster.kubeconfig) as name:
        yield name


kube_namespace = namespace


@pytest.fixture(scope="session")
def mail_server() -> Iterator[MailServer]:
    """A real SMTP server (aiosmtpd) on loopback, which the service processes send to."""
    server = MailServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mail(mail_server: MailServer, settings: Any) -> MailServer:
    """E-mail on for this test (in this process too: requests it makes send e-mail), the
    inbox empty at its start."""
    mail_server.clear()
    settings.CS_EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = mail_server.port
    return mail_server


@pytest.fixture
def webhook_receiver() -> Iterator[HttpReceiver]:
    """A real HTTP server on loopback recording the webhook POSTs it gets."""
    receiver = HttpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()


@pytest.fixture(scope="session")
def celery_worker_process(
    kube_cluster: ClusterHandle,
    django_db_setup: None,
    django_db_blocker: object,
    mail_server: MailServer,
) -> Iterator[ManagedProcess]:
    """A real ``celery worker`` consuming this run's queue from the real Redis broker,
    writing to this run's PostgreSQL test database, driving the real cluster, sending
    e-mail to the suite's SMTP server."""
    nodename = f"cs-test-{os.getpid()}"
    worker = ManagedProcess(
        "celery-worker",
        celery_argv(
            "worker",
            "--loglevel=INFO",
            "--concurrency=4",
            "-n",
            f"{nodename}@%h",
            "--without-gossip",
            "--without-mingle",
        ),
        child_env(mail_server.env),
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


@pytest.fixture(scope="session")
def watcher_process(
    kube_cluster: ClusterHandle, django_db_setup: None, django_db_blocker: object
) -> Iterator[ManagedProcess]:
    """The real watcher (``manage.py watch``), the only active one for this database."""
    watcher = ManagedProcess("watcher", manage_argv("watch"), child_env()).start()

    def watching() -> bool:
        watcher.assert_running()
        return "watching" in watcher.log_path.read_text(errors="replace")

    try:
        wait_until(watching, timeout=60, interval=0.2, message="the watcher to start watching")
        yield watcher
    finally:
        watcher.stop()


@pytest.fixture(scope="session")
def web_server(
    django_db_setup: None, django_db_blocker: object, mail_server: MailServer
) -> Iterator[str]:
    """The real web process, shared by the session's tests (requests made through it
    e-mail the approvers who have an address). Yields its base URL."""
    with web_process(extra_env=mail_server.env) as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def _flush_survives_background_writers() -> Iterator[None]:
    """Transactional tests end with a TRUNCATE of every table while the worker and the
    watcher may still be writing about the test's last objects. PostgreSQL then aborts
    one side as a deadlock; when it picks the TRUNCATE, try it again."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self: flush.Command, *args: Any, **options: Any) -> None:
        for attempt in range(10):
            try:
                original(self, *args, **options)
                return
            except CommandError as exc:
                if "deadlock detected" not in str(exc.__cause__) or attempt == 9:
                    raise
                time.sleep(0.1 * (attempt + 1))

    flush.Command.handle = handle  # type: ignore[method-assign]
    yield
    flush.Command.handle = original  # type: ignore[method-assign]


@pytest.fixture
def service(
    transactional_db: None,
    celery_worker_process: ManagedProcess,
    watcher_process: ManagedProcess,
) -> Iterator[None]:
    """The whole back end: tests using it see committed rows (no test transaction), so
    that the worker and the watcher see them too."""
    yield
    for process in (celery_worker_process, watcher_process):
        process.assert_running()

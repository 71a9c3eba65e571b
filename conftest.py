"""Fixtures shared by every test: the real Kubernetes control plane, a namespace per test,
and the service's own background processes (a Celery worker and the watcher) running as
real subprocesses against the real PostgreSQL, Redis and API server."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config.celery import app as celery_app
from testenv import ClusterHandle, ensure_cluster, throwaway_namespace
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


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test that restarts or stops the PostgreSQL every test process shares (the
    ``postgres`` fixture of tests/faults/) is marked ``serial`` as it is collected (before
    ``-m`` selects): the parallel run leaves it to a run of its own (Makefile)."""
    if "postgres" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.serial)


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


@pytest.fixture
def other_namespace(kube_cluster: ClusterHandle) -> Iterator[str]:
    """A second namespace of the test's own (somebody else's, or one not managed)."""
    with throwaway_namespace("other", kubeconfig=kube_cluster.kubeconfig) as name:
        yield name


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


# A test's last retries (backoff up to 30 s, contextsvc/infra/queue.py) finish within this.
WORKER_IDLE_WAIT = 60.0


def worker_is_idle() -> bool:
    """Nothing in this run's queue, and nothing the worker is running, holding or keeping
    for a later retry (one reply is all there is: one worker)."""
    from django.conf import settings

    with celery_app.connection_for_read() as connection:
        # The Redis transport's own client: how many messages wait in this run's queue.
        client = connection.default_channel.client  # type: ignore[attr-defined]
        queued = client.llen(settings.CELERY_TASK_DEFAULT_QUEUE)
    if queued:
        return False
    inspect = celery_app.control.inspect(timeout=2, limit=1)
    for answer in (inspect.active(), inspect.reserved(), inspect.scheduled()):
        if answer is None or any(answer.values()):
            return False
    return True


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


@pytest.fixture
def service(
    transactional_db: None,
    celery_worker_process: ManagedProcess,
    watcher_process: ManagedProcess,
) -> Iterator[None]:
    """The whole back end: tests using it see committed rows (no test transaction), so
    that the worker and the watcher see them too. The test ends once the worker is idle —
    nothing queued for it, running, reserved or waiting for its retry — so that none of its
    work writes into the next test (or into the database being emptied for it)."""
    yield
    for process in (celery_worker_process, watcher_process):
        process.assert_running()
    wait_until(
        worker_is_idle, timeout=WORKER_IDLE_WAIT, interval=0.1, message="the worker to be idle"
    )

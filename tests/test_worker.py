"""A task goes through the real Redis broker to a real worker process and writes to the
real PostgreSQL: the path every reconcile and release will take."""

from __future__ import annotations

import os

import pytest

from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.tasks import record_heartbeat
from tests.support.processes import (
    ManagedProcess,
    celery_argv,
    child_env,
    parent_pid,
    wait_until,
)


@pytest.mark.django_db(transaction=True)
def test_task_is_consumed_by_a_worker_process_and_written_to_postgres(
    celery_worker_process: ManagedProcess,
) -> None:
    # The session's worker reported itself when it started; only the task's report counts.
    ProcessHeartbeat.objects.all().delete()

    record_heartbeat.delay()

    heartbeat = wait_until(
        lambda: ProcessHeartbeat.objects.filter(kind="worker").first(),
        timeout=30,
        message="the worker to record its heartbeat",
    )
    assert isinstance(heartbeat, ProcessHeartbeat)
    # Written by a prefork child of the worker we started, not by this test process.
    assert heartbeat.pid != os.getpid()
    assert parent_pid(heartbeat.pid) == celery_worker_process.pid
    assert ProcessHeartbeat.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_starting_worker_reports_itself_before_any_task() -> None:
    # Its own queue, so it takes none of the session worker's tasks.
    worker = ManagedProcess(
        "celery-worker-start",
        celery_argv("worker", "--concurrency=1", "-n", "starting@%h", "-Q", "cs-start-test"),
        child_env(),
    ).start()
    try:
        heartbeat = wait_until(
            lambda: ProcessHeartbeat.objects.filter(kind="worker", pid=worker.pid).first(),
            timeout=60,
            message="the new worker's start-up heartbeat",
        )
    finally:
        worker.stop()
    assert isinstance(heartbeat, ProcessHeartbeat)
    assert heartbeat.started_at == heartbeat.last_seen

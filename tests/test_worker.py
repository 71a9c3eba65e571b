"""A task goes through the real Redis broker to a real worker process and writes to the
real PostgreSQL: the path every reconcile and release will take."""

from __future__ import annotations

import functools
import os
from datetime import datetime

import pytest
from django.utils import timezone

from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.tasks import record_heartbeat
from tests.support.processes import (
    ManagedProcess,
    celery_argv,
    child_env,
    wait_until,
)


@pytest.mark.django_db(transaction=True)
def test_task_is_consumed_by_a_worker_process_and_written_to_postgres(
    celery_worker_process: ManagedProcess,
) -> None:
    # The session's worker reported itself when it started; only the task's report counts.
    ProcessHeartbeat.objects.all().delete()

    def reported_since(moment: datetime) -> ProcessHeartbeat | None:
        return ProcessHeartbeat.objects.filter(kind="worker", last_seen__gt=moment).first()

    seen = []
    for _ in range(8):
        sent_at = timezone.now()
        record_heartbeat.delay()
        heartbeat = wait_until(
            functools.partial(reported_since, sent_at),
            timeout=30,
            message="the worker to record its heartbeat",
        )
        assert isinstance(heartbeat, ProcessHeartbeat)
        seen.append(heartbeat.pid)
    # Whichever prefork child ran each task, the worker reported is the one we started
    # (the dashboard lists processes, not Celery's children), and only it. (The suite's
    # watcher records its own heartbeat meanwhile: only workers are counted.)
    assert seen == [celery_worker_process.pid] * 8
    assert celery_worker_process.pid != os.getpid()
    workers = ProcessHeartbeat.objects.filter(kind="worker")
    assert list(workers.values_list("pid", flat=True)) == [celery_worker_process.pid]


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

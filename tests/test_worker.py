"""A task goes through the real Redis broker to a real worker process and writes to the
real PostgreSQL: the path every reconcile and release will take."""

from __future__ import annotations

import os

import pytest

from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.tasks import record_heartbeat
from tests.support.processes import ManagedProcess, parent_pid, wait_until


@pytest.mark.django_db(transaction=True)
def test_task_is_consumed_by_a_worker_process_and_written_to_postgres(
    celery_worker_process: ManagedProcess,
) -> None:
    assert ProcessHeartbeat.objects.count() == 0

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

"""Processes die, the API server hangs and PostgreSQL restarts while pools are created and
released; everything converges anyway.

Each scenario (tests/faults/scenarios.py) creates a burst of pools through a real web
process, hits one fault while they are being provisioned and another while they are being
released, then checks what a platform team would. The processes are restarted as
Kubernetes would restart a container (at once, with the same configuration).

The worker and beat run with a 2-second resync interval here, so that what a fault loses
(a task in a killed worker) is re-queued within seconds rather than the production
default's minute.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from allocations.models import ACTIVE_PHASES, Allocation, Phase
from contextsvc.infra import locks
from devenv.system import free_port
from testenv import ClusterHandle
from tests.faults.scenarios import (
    FAST_RESYNC,
    Caller,
    Stack,
    assert_released_and_reusable,
    expected_objects,
    labelled_pools,
    pool_body,
    release_all,
    scenario,
    wait_converged,
)
from tests.support.api import issue_token
from tests.support.kube import frozen_apiserver
from tests.support.postgres import SuitePostgres
from tests.support.processes import ManagedProcess, celery_argv, child_env, manage_argv, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture(scope="module")
def stack(
    kube_cluster: ClusterHandle,
    celery_worker_process: ManagedProcess,
    watcher_process: ManagedProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    port = free_port()
    schedule = Path(tmp_path_factory.mktemp("beat")) / "schedule"
    fast = child_env(FAST_RESYNC)
    web = ManagedProcess("web-faults", manage_argv("serve", "--bind", f"127.0.0.1:{port}"), fast)
    # A file schedule: the suite truncates the database between tests, beat's tables too.
    beat = ManagedProcess(
        "beat-faults",
        celery_argv(
            "beat", "--loglevel=INFO", "-S", "celery.beat:PersistentScheduler", "-s", str(schedule)
        ),
        fast,
    )
    default_env = celery_worker_process.env
    celery_worker_process.stop()
    celery_worker_process.env = fast
    celery_worker_process.start()
    built = Stack(web, port, beat, celery_worker_process, watcher_process, kube_cluster)
    built.start_web()
    beat.start()
    try:
        yield built
    finally:
        web.stop()
        beat.stop()
        celery_worker_process.stop()
        celery_worker_process.env = default_env
        celery_worker_process.start()
        if watcher_process.proc is None or watcher_process.proc.poll() is not None:
            built.start_watcher()


@pytest.mark.parametrize("which", ["web", "worker", "beat", "watcher"])
def test_a_process_killed_mid_burst_and_mid_release(
    stack: Stack, namespace: str, which: str
) -> None:
    process = {
        "web": stack.web,
        "worker": stack.worker,
        "beat": stack.beat,
        "watcher": stack.watcher,
    }[which]
    scenario(
        stack,
        namespace,
        f"kill-{which}",
        during_burst=lambda: stack.restart(process),
        during_release=lambda: stack.restart(process),
    )


def test_the_api_server_frozen_for_20_seconds(stack: Stack, namespace: str) -> None:
    def freeze() -> None:
        with frozen_apiserver(stack.cluster):
            time.sleep(20)

    scenario(stack, namespace, "frozen", during_burst=freeze, during_release=freeze)


def test_postgresql_restarted_mid_burst_is_a_503_then_converges(
    stack: Stack, namespace: str, postgres: SuitePostgres
) -> None:
    caller = Caller(stack.url, issue_token("sh-postgres", ["allocations"]))
    refused: list[tuple[int, Any]] = []

    def outage() -> None:
        with postgres.down():
            refused.append(caller.call("POST", "/v1/sandbox-pools", pool_body("late", namespace)))
            refused.append(caller.call("GET", "/v1/sandbox-pools"))

    def restart() -> None:
        postgres.restart()

    scenario(
        stack, namespace, "postgres", during_burst=outage, during_release=restart, caller=caller
    )
    unavailable = {"error": "unavailable", "message": "the database is unavailable; retry shortly"}
    assert refused == [(503, unavailable), (503, unavailable)]
    assert not Allocation.objects.filter(name="late").exists()


# This database's only: the other parallel test process's allocations have ids too.
ALLOCATION_LOCKS = """
    SELECT count(*) FROM pg_locks
    WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND objsubid = 2
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""
# A killed worker's connection closes with it; PostgreSQL ends its session and frees its
# locks as soon as it notices, which on loopback is at once.
LOCK_FREED_WITHIN = 5.0
READY_AFTER_RESTART_WITHIN = 45.0


def test_a_worker_killed_holding_an_allocations_lock_is_taken_over(
    stack: Stack, namespace: str
) -> None:
    caller = Caller(stack.url, issue_token("sh-lock", ["allocations"]))

    def lock_holders(pk: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(ALLOCATION_LOCKS, [locks.ALLOCATION, pk])
            return int(cursor.fetchone()[0])

    status, _ = caller.call("POST", "/v1/sandbox-pools", pool_body("locked", namespace))
    assert status == 201
    allocation = Allocation.objects.get(name="locked", phase__in=ACTIVE_PHASES)
    with frozen_apiserver(stack.cluster):
        # The reconcile takes the lock, then hangs on its first call to the frozen server.
        wait_until(lambda: lock_holders(allocation.pk) == 1, timeout=30, message="the lock")
        stack.worker.kill()
        killed = time.monotonic()
        wait_until(
            lambda: lock_holders(allocation.pk) == 0,
            timeout=LOCK_FREED_WITHIN,
            interval=0.05,
            message="the killed worker's lock to be freed",
        )
        freed = time.monotonic() - killed
    stack.worker.start()
    restarted = time.monotonic()
    wait_converged(["locked"], Phase.READY)
    ready = time.monotonic() - restarted

    assert freed < LOCK_FREED_WITHIN
    assert ready < READY_AFTER_RESTART_WITHIN
    assert labelled_pools(namespace) == {"locked": expected_objects("locked")}
    release_all(caller, ["locked"])
    assert_released_and_reusable(caller, namespace, ["locked"])

"""Processes die, the broker loses its queue and the API server hangs while pools are
created and released; everything converges anyway.

Each scenario creates a burst of pools through a real web process, hits one fault while
they are being provisioned and another while they are being released, then checks what a
platform team would: every pool became ready with exactly its objects, every release left
nothing behind, no labelled object is without a row, the names can be used again, and the
audit log holds exactly one create and one release per pool. The processes are restarted
as Kubernetes would restart a container (at once, with the same configuration).

The worker and beat run with a 2-second resync interval here, so that what a fault loses
(a task in a killed worker, a queue in a killed Redis) is re-queued within seconds rather
than the production default's minute.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from allocations.models import ACTIVE_PHASES, Allocation, Phase
from contextsvc.core import locks
from contextsvc.core.models import AuditEntry
from contextsvc.devenv.system import free_port
from contextsvc.kube import client as kube
from contextsvc.kube import objects
from contextsvc.testenv import ClusterHandle
from tests.faults.conftest import SuitePostgres
from tests.support.api import issue_token
from tests.support.kube import frozen_apiserver, pool_objects
from tests.support.processes import (
    ManagedProcess,
    celery_argv,
    child_env,
    manage_argv,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]

POOLS = 6
CONVERGE_SECONDS = 120
FAST_RESYNC = {"CS_RESYNC_INTERVAL_SECONDS": "2"}


class Caller:
    """An SH-like caller over real HTTP: it retries a request that met no answer
    (connection refused or reset, a 503) until it gets one, as its clients do."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.last: Any = None  # the body of the last answer

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, headers=self.headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return status, json.loads(raw) if raw else None

    def until_answered(self, method: str, path: str, body: Any = None) -> list[int]:
        """Every status the caller saw, the last one an answer (not a 503)."""
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status, answer = self.call(method, path, body)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                seen.append(0)
                time.sleep(0.3)
                continue
            seen.append(status)
            self.last = answer
            if status != 503:
                return seen
            time.sleep(0.3)
        raise AssertionError(f"{method} {path} never answered: {seen}")


@dataclass
class Stack:
    """The back end the scenarios break: a web process of their own, beat, and the
    session's worker and watcher (restarted with a fast resync)."""

    web: ManagedProcess
    web_port: int
    beat: ManagedProcess
    worker: ManagedProcess
    watcher: ManagedProcess
    cluster: ClusterHandle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start_web(self) -> None:
        self.web.start()
        self.web.wait_listening(self.web_port, timeout=60)

    def start_watcher(self) -> None:
        self.watcher.start()
        wait_until(
            lambda: "watching" in self.watcher.log_path.read_text(errors="replace"),
            timeout=60,
            message="the watcher to watch again",
        )

    def restart(self, process: ManagedProcess) -> None:
        """Kill a process with SIGKILL and start it again, as the kubelet would."""
        process.kill()
        if process is self.web:
            self.start_web()
        elif process is self.watcher:
            self.start_watcher()
        else:
            process.start()


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


def pool_body(name: str, namespace: str) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": 1,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }


def create_all(caller: Caller, names: list[str], namespace: str) -> None:
    for name in names:
        seen = caller.until_answered("POST", "/v1/sandbox-pools", pool_body(name, namespace))
        # A 409 after an unanswered attempt is that attempt having landed.
        assert seen[-1] == 201 or (seen[-1] == 409 and 0 in seen[:-1]), (name, seen, caller.last)


def release_all(caller: Caller, names: list[str]) -> None:
    for name in names:
        seen = caller.until_answered("DELETE", f"/v1/sandbox-pools/{name}")
        assert seen[-1] == 204 or (seen[-1] == 404 and 0 in seen[:-1]), (name, seen)


def converged(names: list[str], phase: str) -> bool:
    live = Allocation.objects.filter(name__in=names).exclude(phase=Phase.RELEASED)
    if phase == Phase.RELEASED:
        return not live.exists()
    return live.filter(phase=phase).count() == len(names)


def wait_converged(names: list[str], phase: str) -> None:
    wait_until(
        lambda: converged(names, phase),
        timeout=CONVERGE_SECONDS,
        interval=0.5,
        message=f"{len(names)} pools to be {phase}",
    )


def labelled_pools(namespace: str) -> dict[str, list[str]]:
    """Every object carrying the pool label in the namespace, by pool."""
    found: dict[str, list[str]] = {}
    for kind in (objects.SANDBOX, objects.PVC, objects.NETWORK_POLICY, objects.POD):
        for item in kube.list_objects(kind, namespace, objects.POOL_LABEL):
            pool = objects.labels_of(item)[objects.POOL_LABEL]
            found.setdefault(pool, []).append(f"{kind.kind}/{item['metadata']['name']}")
    return {pool: sorted(names) for pool, names in found.items()}


def expected_objects(name: str) -> list[str]:
    sandbox = objects.sandbox_name(name, 0)
    return sorted(
        [
            f"NetworkPolicy/{objects.network_policy_name(name)}",
            f"PersistentVolumeClaim/{objects.dedicated_pvc_name(name, 0)}",
            f"Pod/{sandbox}",
            f"Sandbox/{sandbox}",
        ]
    )


def assert_ready_with_exactly_their_objects(namespace: str, names: list[str]) -> None:
    wait_converged(names, Phase.READY)
    # Pods are made by the controller: give the last of them a moment to be listed.
    wait_until(
        lambda: all(pool_objects(namespace, name)["pods"] for name in names),
        timeout=30,
        message="every pool's Pod",
    )
    assert labelled_pools(namespace) == {name: expected_objects(name) for name in names}
    rows = set(
        Allocation.objects.filter(namespace=namespace, phase__in=ACTIVE_PHASES).values_list(
            "name", flat=True
        )
    )
    assert rows == set(names)


def assert_released_and_reusable(caller: Caller, namespace: str, names: list[str]) -> None:
    wait_converged(names, Phase.RELEASED)
    wait_until(lambda: not labelled_pools(namespace), timeout=60, message="nothing left")
    for name in names:
        assert AuditEntry.objects.filter(action="allocation.create", target=name).count() == 1
        assert AuditEntry.objects.filter(action="allocation.release", target=name).count() == 1
    again = names[0]
    # After a PostgreSQL restart the first request may be a 503 while the web process's
    # pool replaces its dead connections (docs/testing.md): a caller retries it.
    seen = caller.until_answered("POST", "/v1/sandbox-pools", pool_body(again, namespace))
    assert seen[-1] == 201, seen
    assert set(seen) <= {503, 201}, seen
    wait_converged([again], Phase.READY)
    assert caller.call("DELETE", f"/v1/sandbox-pools/{again}")[0] == 204
    wait_converged([again], Phase.RELEASED)


def scenario(
    stack: Stack,
    namespace: str,
    prefix: str,
    during_burst: Callable[[], None],
    during_release: Callable[[], None],
    caller: Caller | None = None,
) -> None:
    caller = caller or Caller(stack.url, issue_token(f"sh-{prefix}", ["allocations"]))
    names = [f"{prefix}-{index}" for index in range(POOLS)]
    half = POOLS // 2
    create_all(caller, names[:half], namespace)
    during_burst()
    create_all(caller, names[half:], namespace)
    assert_ready_with_exactly_their_objects(namespace, names)

    release_all(caller, names)
    during_release()
    assert_released_and_reusable(caller, namespace, names)


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


ALLOCATION_LOCKS = """
    SELECT count(*) FROM pg_locks
    WHERE locktype = 'advisory' AND classid = %s AND objid = %s AND objsubid = 2
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

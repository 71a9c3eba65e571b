"""What the fault scenarios share: an SH-like caller that retries, the stack of service
processes a scenario breaks, and the checks a platform team would make after a burst and a
release (every pool ready with exactly its objects, nothing left after release, no
labelled object without a row, one create and one release in the audit log, names
reusable)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allocations.models import ACTIVE_PHASES, Allocation, Phase
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import labels_of
from contextsvc.kube.objects.kinds import NETWORK_POLICY, POD, PVC, SANDBOX
from contextsvc.kube.objects.labels import POOL_LABEL
from contextsvc.kube.objects.names import dedicated_pvc_name, network_policy_name, sandbox_name
from testenv import ClusterHandle
from tests.support.api import issue_token
from tests.support.kube import pool_objects
from tests.support.processes import ManagedProcess, wait_until

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

    def start(self, process: ManagedProcess) -> None:
        if process is self.web:
            self.start_web()
        elif process is self.watcher:
            self.start_watcher()
        else:
            process.start()

    def restart(self, process: ManagedProcess) -> None:
        """Kill a process with SIGKILL and start it again, as the kubelet would."""
        process.kill()
        self.start(process)

    def revive(self) -> list[str]:
        """Start again every process that exited by itself, as the kubelet restarts a
        container whose process ends; the names of those that had."""
        exited = [
            process
            for process in (self.web, self.beat, self.worker, self.watcher)
            if process.proc is None or process.proc.poll() is not None
        ]
        for process in exited:
            self.start(process)
        return [process.name for process in exited]


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
    for kind in (SANDBOX, PVC, NETWORK_POLICY, POD):
        for item in kube.list_objects(kind, namespace, POOL_LABEL):
            pool = labels_of(item)[POOL_LABEL]
            found.setdefault(pool, []).append(f"{kind.kind}/{item['metadata']['name']}")
    return {pool: sorted(names) for pool, names in found.items()}


def expected_objects(name: str) -> list[str]:
    sandbox = sandbox_name(name, 0)
    return sorted(
        [
            f"NetworkPolicy/{network_policy_name(name)}",
            f"PersistentVolumeClaim/{dedicated_pvc_name(name, 0)}",
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
    # Answered at once, whatever the fault was (after a PostgreSQL restart too: the web
    # process's pool replaces its dead connections on the first one it meets).
    seen = caller.until_answered("POST", "/v1/sandbox-pools", pool_body(again, namespace))
    assert seen == [201], (seen, caller.last)
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

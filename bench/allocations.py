"""Allocation benchmarks (issue: allocation engine).

1. GET /v1/sandbox-pools/{name} latency with 1,000 allocations in the database, and the
   same GET by a team with a request rate (a rate it never reaches: what counting costs),
   the two interleaved in one run.
2. 200 one-replica allocations: burst POST → all ``ready``, next to creating the same
   objects (PVC + Sandbox each) directly with the Python client, in the same run.
3. Readiness propagation: the moment this process sees a Pod turn Ready (its own watch)
   to the moment the API reports the allocation ready (``ready_at``, set by the watcher's
   UPDATE that GET then serves).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import Http, service_stack
from bench.report import machine, now, percentile, summary_ms, write_section
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import builtin_blueprint
from contextsvc.kube.objects.fields import labels_of, resource_version_of
from contextsvc.kube.objects.kinds import POD, PVC, SANDBOX
from contextsvc.kube.objects.labels import POOL_LABEL, POOLED_POD_SELECTOR
from contextsvc.kube.objects.names import dedicated_pvc_name
from contextsvc.kube.objects.pod import pod_is_ready
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.pvc import pvc_manifest
from contextsvc.kube.objects.sandbox import sandbox_manifest
from testenv import create_namespace, ensure_cluster

GET_ALLOCATIONS = 1000
GET_SAMPLES = 3000
BURST = 200
BURST_CONCURRENCY = 8
READY_TIMEOUT = 600.0


def _token(team: Any = None) -> str:
    # Imported here: models load only once service_stack() has set Django up.
    from contextsvc.core import services

    client = services.api_client_create(
        name=f"bench-{uuid.uuid4().hex[:6]}",
        scopes=["allocations"],
        actor="system:bench",
        team=team,
    )
    return services.api_token_issue(client=client, actor="system:bench")[1]


# A rate no run reaches (the GETs come one at a time): each request is counted, none refused.
UNREACHED_RATE = 1_000_000


def bench_get(web_url: str, token: str) -> tuple[list[float], list[float]]:
    """GETs by the default team's token and by a rate-limited team's, interleaved at
    random so that the machine's noise falls on both alike."""
    # Imported here: models load only once service_stack() has set Django up.
    from allocations.models import Allocation
    from contextsvc.core import services

    rated = services.team_create(name=f"bench-rated-{uuid.uuid4().hex[:6]}", actor="system:bench")
    services.team_set_quotas(
        team=rated, actor="system:bench", max_requests_per_minute=UNREACHED_RATE
    )
    Allocation.objects.bulk_create(
        Allocation(
            name=f"{prefix}-{i:04d}",
            namespace="bench-get",
            replicas=1,
            strategy="dedicated",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteOnce",
            phase="ready",
            ready_replicas=1,
            requester="system:bench",
            **({"team": rated} if prefix == "rated" else {}),
        )
        for prefix in ("get", "rated")
        for i in range(GET_ALLOCATIONS)
    )
    callers = {"get": Http(web_url, token), "rated": Http(web_url, _token(rated))}
    rng = random.Random(7)
    for _ in range(300):  # warm up connections, caches, the tokens' last_used_at
        for prefix, http in callers.items():
            http.request("GET", f"/v1/sandbox-pools/{prefix}-{rng.randrange(GET_ALLOCATIONS):04d}")
    samples: dict[str, list[float]] = {"get": [], "rated": []}
    for _ in range(2 * GET_SAMPLES):
        prefix = rng.choice(["get", "rated"])
        name = f"{prefix}-{rng.randrange(GET_ALLOCATIONS):04d}"
        started = time.perf_counter()
        status, body = callers[prefix].request("GET", f"/v1/sandbox-pools/{name}")
        samples[prefix].append(time.perf_counter() - started)
        assert status == 200 and body["name"] == name, (status, body)
    for http in callers.values():
        http.close()
    Allocation.objects.filter(namespace="bench-get").delete()
    return samples["get"], samples["rated"]


class PodReadyClock:
    """This process's own watch on a namespace: when did each Pod first turn Ready?"""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.ready_at: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        target = kube.Watchable(POD, self.namespace, POOLED_POD_SELECTOR)
        _, version = kube.list_raw(target)
        while not self.stop.is_set():
            for event in kube.watch_raw(target, version, 60):
                if event["type"] in ("ADDED", "MODIFIED"):
                    pod = event["object"]
                    version = resource_version_of(pod)
                    pool = labels_of(pod).get(POOL_LABEL)
                    if pool and pool not in self.ready_at and pod_is_ready(pod):
                        self.ready_at[pool] = time.time()
                if self.stop.is_set():
                    return

    def __enter__(self) -> PodReadyClock:
        self.thread.start()
        time.sleep(0.5)  # let the watch open before anything is created
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def bench_burst(web_url: str, token: str) -> dict[str, Any]:
    # Imported here: models load only once service_stack() has set Django up.
    from allocations.models import Allocation

    namespace = f"bench-burst-{uuid.uuid4().hex[:6]}"
    create_namespace(namespace)
    names = [f"burst-{i:03d}" for i in range(BURST)]

    def post(name: str) -> None:
        http = Http(web_url, token)
        status, body = http.request(
            "POST",
            "/v1/sandbox-pools",
            {
                "name": name,
                "replicas": 1,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )
        http.close()
        assert status == 201, body

    with PodReadyClock(namespace) as clock:
        started = time.monotonic()
        with ThreadPoolExecutor(BURST_CONCURRENCY) as pool:
            list(pool.map(post, names))
        posted = time.monotonic() - started
        _wait(
            lambda: Allocation.objects.filter(namespace=namespace, phase="ready").count() == BURST,
            READY_TIMEOUT,
            "every allocation to be ready",
        )
        service_seconds = time.monotonic() - started
    propagation = []
    for name, ready_at in Allocation.objects.filter(namespace=namespace).values_list(
        "name", "ready_at"
    ):
        if name in clock.ready_at and ready_at is not None:
            propagation.append(ready_at.timestamp() - clock.ready_at[name])

    http = Http(web_url, token)
    release_started = time.monotonic()
    for name in names:
        http.request("DELETE", f"/v1/sandbox-pools/{name}")
    http.close()
    _wait(
        lambda: Allocation.objects.filter(namespace=namespace, phase="released").count() == BURST,
        READY_TIMEOUT,
        "every allocation to be released",
    )
    release_seconds = time.monotonic() - release_started
    return {
        "posted": posted,
        "service": service_seconds,
        "release": release_seconds,
        "propagation": propagation,
        "observed": len(clock.ready_at),
    }


def bench_direct() -> float:
    """The same objects, made directly with the Python client: the floor the service adds to."""
    namespace = f"bench-direct-{uuid.uuid4().hex[:6]}"
    create_namespace(namespace)
    runtime = builtin_blueprint(image="busybox:1.36")
    with PodReadyClock(namespace) as clock:
        started = time.monotonic()
        for i in range(BURST):
            spec = PoolSpec(
                name=f"direct-{i:03d}",
                namespace=namespace,
                replicas=1,
                strategy="dedicated",
                workspace_size="1Gi",
                workspace_access_mode="ReadWriteOnce",
            )
            pvc = pvc_manifest(spec, dedicated_pvc_name(spec.name, 0))
            sandbox = sandbox_manifest(spec, 0, runtime)
            # Not ours: the service's watcher must not mistake these for allocations.
            for body in (pvc, sandbox):
                body["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "bench"
            sandbox["spec"]["podTemplate"]["metadata"]["labels"]["app.kubernetes.io/managed-by"] = (
                "bench"
            )
            kube.create_object(PVC, pvc)
            kube.create_object(SANDBOX, sandbox)
        _wait(lambda: len(clock.ready_at) == BURST, READY_TIMEOUT, "every direct Pod to be ready")
        return time.monotonic() - started


def run() -> None:
    cluster = ensure_cluster()
    try:
        with service_stack(
            database="contextsvc_bench", kubeconfig=str(cluster.kubeconfig)
        ) as stack:
            token = _token()
            get_samples, rated_samples = bench_get(stack.web_url, token)
            burst = bench_burst(stack.web_url, token)
            direct = bench_direct()
    finally:
        if cluster.started_here:
            cluster.stop()
    propagation = burst["propagation"]
    ratio = burst["service"] / direct
    body = f"""
## Allocations

Measured {now()} on {machine()}, against the local control plane (kwok nodes, the real
agent-sandbox controller). Command: `make bench` (`python -m bench allocations`).

| what | result | target |
|---|---|---|
| GET `/v1/sandbox-pools/{{name}}`, {GET_ALLOCATIONS} allocations, one keep-alive client | {summary_ms(get_samples)} | p99 ≤ 20 ms |
| the same GET by a team with a request rate (counted, never reached), interleaved | {summary_ms(rated_samples)}; p50 {percentile(rated_samples, 50) / percentile(get_samples, 50):.2f}× the unrated GET's | — |
| {BURST} one-replica allocations, burst POST ({BURST_CONCURRENCY} concurrent callers) → all `ready` | {burst["service"]:.1f} s (POSTs took {burst["posted"]:.1f} s) | — |
| the same {BURST} PVCs + Sandboxes created directly with the Python client → all Pods Ready | {direct:.1f} s | — |
| ratio service / direct | {ratio:.2f}× | ≤ 2× |
| readiness propagation, Pod Ready seen → API reports ready ({len(propagation)} pods) | p50 {percentile(propagation, 50) * 1000:.0f} ms, p99 {percentile(propagation, 99) * 1000:.0f} ms, max {max(propagation) * 1000:.0f} ms | p99 ≤ 1 s |
| release of the {BURST} allocations: DELETEs → all `released` | {burst["release"]:.1f} s | — |

A team with a request rate (`max_requests_per_minute`) pays one more statement per
request, the upsert of its rate row (contextsvc/core/ratelimit.py); a team without one
pays nothing, its rate (none) coming with the cached token. Both GETs are interleaved at
random in one run, so the ratio is the cost, whatever the machine did meanwhile.

Readiness propagation compares this benchmark's own watch of the Pods with `ready_at`,
written by the watcher's UPDATE (the value GET serves from then on); both clocks are this
machine's. A negative value means the service saw the Pod before the benchmark's watch did.

Each POST checks the name before answering (labelled leftovers, and somebody else's object
under any name it would create), so that a collision is the contract's 409 rather than a
failed allocation later. Since 2026-12-06 it reads both from the watcher's records
(PoolPresence, ForeignObject) and asks the API server nothing; before, it made 3 GETs for
one replica. The direct path's time varies between runs on this machine (27.7–51.4 s
before 2026-12-02), which moves the ratio more than the POSTs do.
"""
    write_section("allocations", body)
    print(body)

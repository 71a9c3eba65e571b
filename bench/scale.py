"""``make bench BENCH=scale``: what one allocation costs as the number of live ones grows.

For each N (``BENCH_SCALE_SIZES``, default 250,500,1000,2000) one-replica dedicated
allocations (a NetworkPolicy, a PVC, a Sandbox and its Pod each):

1. the floor: the same PVCs and Sandboxes created directly with the Python client by 8
   threads, until every Pod is Ready;
2. the service: N POSTs from 8 concurrent callers (each POST's latency), until every
   allocation reads ``ready``; the watcher's CPU over it and its resident memory at the end;
   for 1 and 2, the requests the API server served meanwhile (its own
   ``apiserver_request_total``, by verb and resource), per allocation: every client's,
   the controllers' too, which do the same work on both paths, so the difference is what
   the service adds;
3. with the N live: a resync cycle that examines every pool (their fingerprints cleared, as
   before the fingerprint existed) and then a steady one (nothing changed since), each with
   its duration and CPU; GET throughput and latency at 1, 8
   and 32 connections (wrk, 10 s each), the dashboard's allocations page;
4. release of all N, until every allocation is ``released``.

Everything runs on this machine against the local control plane: kwok nodes of its own
for the run (the test cluster's two nodes have a /24 pod range each, 254 Pods), which it
removes afterwards. Not part of the test suite.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from matplotlib.figure import Figure
from prometheus_client.parser import text_string_to_metric_families

from bench.allocations import PodReadyClock, _token, _wait
from bench.harness import Http, Stack, service_stack
from bench.report import machine, now, percentile, write_section
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import builtin_blueprint
from contextsvc.kube.objects.kinds import PVC, SANDBOX
from contextsvc.kube.objects.labels import MANAGED_BY_LABEL
from contextsvc.kube.objects.names import dedicated_pvc_name
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.pvc import pvc_manifest
from contextsvc.kube.objects.sandbox import sandbox_manifest
from devenv.system import REPO_DIR, which_or_install
from testenv import create_namespace, ensure_cluster

SIZES = [int(n) for n in os.environ.get("BENCH_SCALE_SIZES", "250,500,1000,2000").split(",")]
CALLERS = 8
READY_TIMEOUT = 1800.0
GET_SECONDS = 10
GET_CONNECTIONS = (1, 8, 32)
PLOT = REPO_DIR / "docs" / "img" / "scale.png"
BENCH_NODES = 4
TICKS = os.sysconf("SC_CLK_TCK")
# The resources a dedicated allocation makes: where its name checks and creates go.
OUR_KINDS = ("sandboxes", "persistentvolumeclaims", "networkpolicies")


@dataclass
class Round:
    n: int
    direct: float = 0.0
    service: float = 0.0
    posts: list[float] = field(default_factory=list)
    watcher_cpu: float = 0.0
    watcher_rss: float = 0.0
    resync_cold: float = 0.0
    resync_cold_cpu: float = 0.0
    resync: float = 0.0
    resync_cpu: float = 0.0
    get: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # rps, p50, p99
    dashboard: float = 0.0
    release: float = 0.0
    # Requests the API server served from the first create until every Pod was Ready.
    calls_direct: Counter[tuple[str, str]] = field(default_factory=Counter)
    calls_service: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Requests the API server served from the first DELETE until every row was released.
    calls_release: Counter[tuple[str, str]] = field(default_factory=Counter)
    # The API server's own time (µs) on the service path's calls over the same span.
    micros_service: Counter[tuple[str, str]] = field(default_factory=Counter)

    def mean_ms(self, verb: str, resources: tuple[str, ...]) -> float:
        """The API server's mean time serving one ``verb`` of ``resources`` in the burst."""
        calls = sum(self.calls_service[verb, r] for r in resources)
        micros = sum(self.micros_service[verb, r] for r in resources)
        return micros / calls / 1000 if calls else 0.0


# --- The cluster ---------------------------------------------------------------------------


@contextlib.contextmanager
def bench_nodes() -> Iterator[None]:
    """Nodes with room for thousands of Pods (a /20 pod range each), and the test cluster's
    own nodes cordoned meanwhile so that nothing lands in their /24 ranges. (The benchmark
    is the cluster's administrator: nodes are not something the service itself touches.)"""
    core: Any = k8s.CoreV1Api(kube.api_client())
    names = [f"scale-node-{i}" for i in range(1, BENCH_NODES + 1)]
    originals = [n.metadata.name for n in core.list_node().items if n.metadata.name not in names]
    for i, name in enumerate(names):
        cidr = f"127.3.{i * 16}.0/20"
        with contextlib.suppress(ApiException):  # left by an interrupted run
            core.create_node(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "annotations": {
                            "kwok.x-k8s.io/node": "fake",
                            "node.alpha.kubernetes.io/ttl": "0",
                        },
                        "labels": {"kubernetes.io/hostname": name, "type": "kwok"},
                    },
                    "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
                }
            )
    for name in originals:
        core.patch_node(name, {"spec": {"unschedulable": True}})
    try:
        _wait(lambda: _ready_nodes(core, names) == len(names), 120, "the benchmark's nodes")
        yield
    finally:
        for name in originals:
            core.patch_node(name, {"spec": {"unschedulable": False}})
        for name in names:
            with contextlib.suppress(ApiException):
                core.delete_node(name)


def _ready_nodes(core: Any, names: list[str]) -> int:
    return sum(
        1
        for node in core.list_node().items
        if node.metadata.name in names
        and any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    )


def _apiserver_samples(
    family_name: str, sample_name: str, scale: float = 1.0
) -> Counter[tuple[str, str]]:
    """One series of the API server's own ``/metrics`` times ``scale``, summed by verb and
    resource (``pods/status``; a URL that names no resource is its path, ``/readyz``)."""
    api = kube.api_client()
    method, url, headers, _, _ = api.param_serialize(
        "GET", "/metrics", auth_settings=["BearerToken"]
    )
    response = api.call_api(method, url, header_params=headers)
    text = (response.read() or b"").decode()
    values: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != family_name:
            continue
        for sample in family.samples:
            if sample.name != sample_name:
                continue
            labels = sample.labels
            resource = "/".join(filter(None, (labels["resource"], labels.get("subresource"))))
            values[labels["verb"], resource] += round(sample.value * scale)
    return values


def apiserver_calls() -> Counter[tuple[str, str]]:
    """The requests the API server has served since it started, from every client: its own
    ``apiserver_request_total``."""
    return _apiserver_samples("apiserver_request", "apiserver_request_total")


def apiserver_microseconds() -> Counter[tuple[str, str]]:
    """The time the API server has spent serving them (the sum of its
    ``apiserver_request_duration_seconds``), in µs: with the counts, the mean of a call."""
    return _apiserver_samples(
        "apiserver_request_duration_seconds", "apiserver_request_duration_seconds_sum", 1e6
    )


def _since(
    before: Counter[tuple[str, str]], now: Any = apiserver_calls
) -> Counter[tuple[str, str]]:
    after = now()
    after.subtract(before)
    return +after  # drops what did not grow


# --- One round -----------------------------------------------------------------------------


def _direct(n: int) -> tuple[float, Counter[tuple[str, str]]]:
    namespace = f"scale-direct-{uuid.uuid4().hex[:6]}"
    create_namespace(namespace)
    runtime = builtin_blueprint(image="busybox:1.36")

    def make(i: int) -> None:
        spec = PoolSpec(
            name=f"direct-{i:04d}",
            namespace=namespace,
            replicas=1,
            strategy="dedicated",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteOnce",
        )
        pvc = pvc_manifest(spec, dedicated_pvc_name(spec.name, 0))
        sandbox = sandbox_manifest(spec, 0, runtime)
        # Not ours: the service's watcher must not mistake these for allocations.
        for body in (pvc, sandbox, sandbox["spec"]["podTemplate"]):
            body["metadata"]["labels"][MANAGED_BY_LABEL] = "bench"
        kube.create_object(PVC, pvc)
        kube.create_object(SANDBOX, sandbox)

    with PodReadyClock(namespace) as clock:
        calls = apiserver_calls()
        started = time.monotonic()
        with ThreadPoolExecutor(CALLERS) as pool:
            list(pool.map(make, range(n)))
        _wait(lambda: len(clock.ready_at) == n, READY_TIMEOUT, f"{n} direct Pods to be Ready")
        elapsed = time.monotonic() - started
        calls = _since(calls)
    _delete_namespace(namespace)
    return elapsed, calls


def _delete_namespace(namespace: str) -> None:
    core: Any = k8s.CoreV1Api(kube.api_client())
    core.delete_namespace(namespace)

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    _wait(gone, READY_TIMEOUT, f"namespace {namespace} to be deleted")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _process(stack: Stack, name: str) -> int:
    return next(p.pid for p in stack.processes if p.name == name)


def _wrk(url: str, token: str, connections: int) -> tuple[float, float, float]:
    """(requests per second, p50 ms, p99 ms) of GET ``url`` for GET_SECONDS."""
    wrk = which_or_install("wrk", "wrk")
    result = subprocess.run(
        [
            wrk,
            f"-t{min(connections, 2)}",
            f"-c{connections}",
            f"-d{GET_SECONDS}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = result.stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]

    def at(q: str) -> float:
        value, unit = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    return rps, at("50"), at("99")


def _dashboard_ms() -> float:
    from django.contrib.auth.models import User
    from django.test import Client

    from contextsvc.core.users import ensure_role_groups, user_set_role

    ensure_role_groups()
    user, _ = User.objects.get_or_create(username=f"scale-{uuid.uuid4().hex[:6]}")
    user_set_role(user=user, role="viewer", actor="system:bench")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    client.get("/allocations/")
    samples = []
    for _ in range(20):
        started = time.perf_counter()
        assert client.get("/allocations/").status_code == 200
        samples.append(time.perf_counter() - started)
    return percentile(samples, 50) * 1000


def _timed(call: Any) -> tuple[float, float]:
    """Wall and CPU seconds of call() in this process."""
    cpu, wall = time.process_time(), time.monotonic()
    call()
    return time.monotonic() - wall, time.process_time() - cpu


def _round(stack: Stack, token: str, n: int) -> Round:
    from allocations import resync
    from allocations.models import Allocation

    result = Round(n)
    result.direct, result.calls_direct = _direct(n)
    namespace = f"scale-{n}-{uuid.uuid4().hex[:4]}"
    create_namespace(namespace)
    names = [f"s{n}-{i:04d}" for i in range(n)]
    watcher = _process(stack, "watcher")
    cpu_before = _cpu_seconds(watcher)
    lock = threading.Lock()

    def post(name: str) -> None:
        http = Http(stack.web_url, token)
        started = time.perf_counter()
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
        elapsed = time.perf_counter() - started
        http.close()
        assert status == 201, body
        with lock:
            result.posts.append(elapsed)

    live = Allocation.objects.filter(namespace=namespace)
    calls, micros = apiserver_calls(), apiserver_microseconds()
    started = time.monotonic()
    with ThreadPoolExecutor(CALLERS) as pool:
        list(pool.map(post, names))
    _wait(lambda: live.filter(phase="ready").count() == n, READY_TIMEOUT, f"{n} ready")
    result.service = time.monotonic() - started
    result.calls_service = _since(calls)
    result.micros_service = _since(micros, apiserver_microseconds)
    result.watcher_cpu = _cpu_seconds(watcher) - cpu_before
    result.watcher_rss = _rss_mb(watcher)

    live.update(resync_fingerprint="")
    result.resync_cold, result.resync_cold_cpu = _timed(lambda: resync.resync_all(adopt=False))
    result.resync, result.resync_cpu = _timed(lambda: resync.resync_all(adopt=False))
    url = f"{stack.web_url}/v1/sandbox-pools/{names[n // 2]}"
    for connections in GET_CONNECTIONS:
        result.get[connections] = _wrk(url, token, connections)
    result.dashboard = _dashboard_ms()

    started = time.monotonic()

    def release(name: str) -> None:
        http = Http(stack.web_url, token)
        status, _ = http.request("DELETE", f"/v1/sandbox-pools/{name}")
        http.close()
        assert status == 204, status

    calls = apiserver_calls()
    with ThreadPoolExecutor(CALLERS) as pool:
        list(pool.map(release, names))
    _wait(lambda: live.filter(phase="released").count() == n, READY_TIMEOUT, f"{n} released")
    result.release = time.monotonic() - started
    result.calls_release = _since(calls)
    _delete_namespace(namespace)
    return result


PUSHED = int(os.environ.get("BENCH_SCALE_PUSHED", "50"))
PUSH_RUNS = 3


@dataclass
class Pushed:
    """One pool's readiness on its way to a waiting client, in seconds from its Pod turning
    Ready: to the watcher's transaction that marked the row ready, and to the client."""

    to_row: float
    to_client: float


def _push_latency(stack: Stack, token: str) -> list[Pushed]:
    """Pod Ready (this process's own watch) → a client waiting on ``GET …?wait=60`` holds
    its answer, for PUSHED pools made one after another."""
    from allocations.models import Allocation

    namespace = f"scale-push-{uuid.uuid4().hex[:4]}"
    create_namespace(namespace)
    arrived: dict[str, float] = {}

    def wait_ready(name: str) -> None:
        http = Http(stack.web_url, token)
        try:
            while True:
                status, body = http.request("GET", f"/v1/sandbox-pools/{name}?wait=60")
                assert status == 200, body
                if body["status"] == "ready":
                    arrived[name] = time.time()
                    return
        finally:
            http.close()

    names = [f"push-{i:03d}" for i in range(PUSHED)]
    with PodReadyClock(namespace) as clock, ThreadPoolExecutor(PUSHED) as waiters:
        for name in names:
            http = Http(stack.web_url, token)
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
            waiters.submit(wait_ready, name)
            time.sleep(0.2)  # one at a time: the latency of a pool, not of a burst
        _wait(lambda: len(arrived) == PUSHED, READY_TIMEOUT, "every waiting client's answer")
    # When the watcher's transaction marked each row ready (PostgreSQL's now()).
    marked = {
        name: ready_at.timestamp()
        for name, ready_at in Allocation.objects.filter(namespace=namespace).values_list(
            "name", "ready_at"
        )
        if ready_at is not None
    }
    http = Http(stack.web_url, token)
    for name in names:
        http.request("DELETE", f"/v1/sandbox-pools/{name}")
    http.close()
    return [
        Pushed(marked[name] - clock.ready_at[name], arrived[name] - clock.ready_at[name])
        for name in names
        if name in clock.ready_at
    ]


# --- Report --------------------------------------------------------------------------------


def _plot(rounds: list[Round]) -> None:
    ns = [r.n for r in rounds]
    figure = Figure(figsize=(11, 7), dpi=100)
    (a, b), (c, d) = figure.subplots(2, 2)
    a.plot(ns, [r.service / r.n * 1000 for r in rounds], "o-", label="service: burst → ready")
    a.plot(ns, [r.direct / r.n * 1000 for r in rounds], "s--", label="direct client → ready")
    a.plot(ns, [r.release / r.n * 1000 for r in rounds], "^-", label="release")
    a.set_title("wall time per allocation (ms)")
    b.plot(ns, [r.watcher_cpu / r.n * 1000 for r in rounds], "o-", label="watcher CPU (burst)")
    b.plot(ns, [r.resync_cold_cpu / r.n * 1000 for r in rounds], "s-", label="resync CPU (all)")
    b.plot(ns, [r.resync_cpu / r.n * 1000 for r in rounds], "d-", label="resync CPU (steady)")
    b.set_title("CPU per allocation (ms)")
    for connections in GET_CONNECTIONS:
        c.plot(ns, [r.get[connections][0] for r in rounds], "o-", label=f"{connections} conn.")
    c.set_title("GET /v1/sandbox-pools/{name}: requests per second")
    d.plot(ns, [r.watcher_rss for r in rounds], "o-", label="watcher RSS (MB)")
    d.plot(ns, [r.dashboard for r in rounds], "s-", label="dashboard list p50 (ms)")
    d.set_title("memory and the dashboard")
    for axes in (a, b, c, d):
        axes.set_xlabel("live allocations (N)")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        axes.set_xscale("log")
        # Only the measured N as ticks (the log scale's own minor labels overlap them).
        axes.minorticks_off()
        axes.set_xticks(ns, [str(n) for n in ns])
    figure.suptitle("Cost per allocation against N (make bench BENCH=scale)")
    figure.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(PLOT)


def _table(rounds: list[Round]) -> str:
    rows = [
        "| N | direct → ready | service → ready | ratio | POST p50 / p99 | watcher CPU / RSS "
        "| resync all / steady (CPU) | GET 1 / 8 / 32 conn. (req/s; p99 ms) | dashboard "
        "| release | API calls per allocation, direct / service (release) "
        "| API server's mean GET / POST of our kinds in the burst |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rounds:
        ms = [p * 1000 for p in r.posts]
        gets = " / ".join(f"{r.get[c][0]:.0f} ({r.get[c][2]:.1f})" for c in GET_CONNECTIONS)
        rows.append(
            f"| {r.n} | {r.direct:.1f} s | {r.service:.1f} s | {r.service / r.direct:.2f}× "
            f"| {percentile(ms, 50):.0f} / {percentile(ms, 99):.0f} ms "
            f"| {r.watcher_cpu:.1f} s / {r.watcher_rss:.0f} MB "
            f"| {r.resync_cold:.2f} s ({r.resync_cold_cpu:.2f} s) / {r.resync:.2f} s "
            f"({r.resync_cpu:.2f} s) | {gets} | {r.dashboard:.0f} ms "
            f"| {r.release:.1f} s "
            f"| {r.calls_direct.total() / r.n:.1f} / {r.calls_service.total() / r.n:.1f} "
            f"({r.calls_release.total() / r.n:.1f}) "
            f"| {r.mean_ms('GET', OUR_KINDS):.1f} / {r.mean_ms('POST', OUR_KINDS):.1f} ms |"
        )
    return "\n".join(rows)


def _calls_table(r: Round) -> str:
    """Where the API server's requests went at one N, per allocation, every client's."""
    rows = [
        f"| verb | resource | direct | service (N = {r.n}) | release |",
        "|---|---|---|---|---|",
    ]
    keys = sorted(
        set(r.calls_direct) | set(r.calls_service) | set(r.calls_release),
        key=lambda key: -(r.calls_service[key] + r.calls_direct[key] + r.calls_release[key]),
    )
    for verb, resource in keys:
        direct, service, release = (
            r.calls_direct[verb, resource] / r.n,
            r.calls_service[verb, resource] / r.n,
            r.calls_release[verb, resource] / r.n,
        )
        if max(direct, service, release) >= 0.05:
            rows.append(
                f"| {verb} | {resource or '(no resource)'} | {direct:.2f} | {service:.2f} "
                f"| {release:.2f} |"
            )
    return "\n".join(rows)


def run() -> None:
    cluster = ensure_cluster()
    # The benchmark's own calls (its nodes, the direct path) go to the same cluster.
    os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
    rounds: list[Round] = []
    try:
        with (
            bench_nodes(),
            service_stack(database="contextsvc_scale", kubeconfig=str(cluster.kubeconfig)) as stack,
        ):
            token = _token()
            pushed = [_push_latency(stack, token) for _ in range(PUSH_RUNS if PUSHED else 0)]
            for n in SIZES:
                rounds.append(_round(stack, token, n))
                # Written after every N, so that what was measured survives a larger N that
                # does not fit the machine.
                _report(rounds, pushed)
    finally:
        if cluster.started_here:
            cluster.stop()


def _report(rounds: list[Round], pushed: list[list[Pushed]]) -> None:
    _plot(rounds)
    body = f"""
## Scale

Measured {now()} on {machine()}, against the local control plane (the real agent-sandbox
controller; {BENCH_NODES} kwok nodes of the benchmark's own). Command: `make bench
BENCH=scale` (`python -m bench scale`; `BENCH_SCALE_SIZES` picks the N). One-replica
dedicated allocations (NetworkPolicy, PVC, Sandbox, Pod each); {CALLERS} concurrent callers.

{_table(rounds)}

![cost per allocation against N](img/scale.png)

The API server's requests per allocation at N = {rounds[-1].n}, by verb and resource, from
the first create until every Pod was Ready (every client's: the controllers, the scheduler
and kwok do the same work on both paths; rows under 0.05 left out), and from the first
DELETE until every allocation was released:

{_calls_table(rounds[-1])}

{_pushed(pushed)}"""
    write_section("scale", body)
    print(body, flush=True)


def _pushed(runs: list[list[Pushed]]) -> str:
    if not runs:
        return ""
    rows = [
        "| run | pools | Pod Ready → row marked ready, p50 / p99 | → waiting client, p50 / p99 / max |",
        "|---|---|---|---|",
    ]
    for number, run in enumerate(runs, 1):
        to_row = [p.to_row * 1000 for p in run]
        to_client = [p.to_client * 1000 for p in run]
        rows.append(
            f"| {number} | {len(run)} | {percentile(to_row, 50):.0f} / {percentile(to_row, 99):.0f} ms "
            f"| {percentile(to_client, 50):.0f} / {percentile(to_client, 99):.0f} / "
            f"{max(to_client):.0f} ms |"
        )
    table = "\n".join(rows)
    return f"""**Readiness pushed** ({len(runs)} runs in a row, before the first N): pools made one at
a time, each with a client waiting on `GET /v1/sandbox-pools/{{name}}?wait=60`; from the Pod
turning Ready (this benchmark's own watch) to the watcher's transaction marking the row ready
(PostgreSQL's `now()` in it), and to the waiting client holding the ready answer (target p99
≤ 100 ms):

{table}
"""

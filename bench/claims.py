"""``python -m bench claims``: a warm-pool claim through the service next to agent-sandbox's
own claim path, at fixed rates.

One SandboxWarmPool of the demo template (testenv's) kept at W ready Sandboxes, and K
claims made at R per second, for each R (``BENCH_CLAIMS_WARM``, ``BENCH_CLAIMS``,
``BENCH_CLAIMS_RATES``; default 300, 250, "5,10"):

0. (the service warmed up first: bench.claims._warm_up says why)
1. directly: SandboxClaims created with the Python client, each from create to its Ready
   condition (with a Sandbox named) as this process's own watch sees it;
2. through the service: ``POST /v1/sandbox-pools`` with ``warmPoolRef``, each from the POST
   to ``GET …?wait=60`` answering ``ready``;
3. directly again, to see how far the machine drifted meanwhile;
4. once, at the last rate: a profile's warm pool, which the service makes and scales from
   demand (the beat task's work, run here on beat's 15 s schedule), from ``warmPool.min``.

For each: claim → Ready p50 / p99 / max, the ratio to the first direct run at its rate,
the CPU every process used per claim, the API server's requests per claim (every client's, the pool's refill included: the same on every
path), and how many claims found no warm Sandbox (the controller started one for them).
Between runs the claims are released and the pool refilled to W. Everything runs against
the local control plane, on kwok nodes of its own (scale.bench_nodes). Not part of the
test suite.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.allocations import _token, _wait
from bench.harness import Http, Stack, service_stack
from bench.report import machine, now, percentile, write_section
from bench.scale import TICKS, _delete_namespace, _since, apiserver_calls, bench_nodes
from contextsvc.kube import client as kube
from contextsvc.kube.objects.claim import claim_is_cold, claim_is_ready
from contextsvc.kube.objects.fields import condition, name_of, resource_version_of
from contextsvc.kube.objects.kinds import (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)
from testenv import create_namespace, ensure_cluster
from testenv.cluster.demo import demo_template

WARM = int(os.environ.get("BENCH_CLAIMS_WARM", "300"))
CLAIMS = int(os.environ.get("BENCH_CLAIMS", "250"))
RATES = [float(r) for r in os.environ.get("BENCH_CLAIMS_RATES", "5,10").split(",")]
# The profile-managed pool starts here and grows with demand up to WARM, or to the most a
# profile's warmPool.max may be (profiles/services.py).
PROFILE_MIN = int(os.environ.get("BENCH_CLAIMS_PROFILE_MIN", "25"))
PROFILE_MAX = min(WARM, 100)
BEAT_SECONDS = 15.0  # config/settings/base.py "allocations-warm-pools"
TIMEOUT = 900.0
POOL = "claims"
PROFILE = "bench-claims"
# agent-sandbox's own presubmit thresholds for its claim path (kwok + clusterloader2).
UPSTREAM_P50_MS, UPSTREAM_P99_MS = 300.0, 500.0


@dataclass
class Run:
    what: str
    rate: float
    latencies: list[float] = field(default_factory=list)  # seconds, one per claim
    cold: int = 0
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    posts: list[float] = field(default_factory=list)  # the service's POSTs alone
    # The service path split at the claim: POST → claim seen created, claim Ready → answer.
    before_claim: list[float] = field(default_factory=list)
    after_ready: list[float] = field(default_factory=list)
    # Every path: the claim seen created → seen Ready (the controller's part, as this
    # process's watch sees both).
    claim_to_ready: list[float] = field(default_factory=list)
    cpu: Counter[str] = field(default_factory=Counter)  # CPU ticks by process, the run's

    def ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000

    def calls_per_claim(self) -> float:
        return self.calls.total() / len(self.latencies)


def _group(pid: str) -> str:
    """What a process is, for the CPU table: by its command, a Python process by its
    manage.py or celery command (a uvicorn worker or a pool child by its parent's)."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except OSError:
        return ""
    for prefix, group in CPU_GROUPS:
        if comm.startswith(prefix):
            return group
    if "python" not in comm:
        return "others"
    for marker, group in (("manage.py watch", "watcher"), ("manage.py serve", "web"),
                          ("celery", "worker")):  # fmt: skip
        if marker in args:
            return group
    if "multiprocessing" in args and parent != "1":
        return _group(parent)
    return "others"


CPU_GROUPS = (
    ("kube-apiserver", "API server"),
    ("etcd", "etcd"),
    ("agent-sandbox", "agent-sandbox"),
    ("postgres", "PostgreSQL"),
)
CPU_SHOWN = ("API server", "etcd", "agent-sandbox", "web", "worker", "watcher", "PostgreSQL")


def cpu_seconds() -> Counter[str]:
    """CPU time (clock ticks) every process on the machine has used, by what it is."""
    used: Counter[str] = Counter()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        group = _group(entry.name)
        if group:
            used[group] += int(fields[11]) + int(fields[12])  # utime + stime
    return used


def _cpu_since(before: Counter[str]) -> Counter[str]:
    after = cpu_seconds()
    after.subtract(before)
    return +after


class ClaimClock:
    """This process's own watch on a namespace's SandboxClaims: when each was first seen,
    when it first turned Ready, and whether it took a warm Sandbox."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.seen_at: dict[str, float] = {}
        self.ready_at: dict[str, float] = {}
        self.cold: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self._watch()
        except Exception:
            if not self.stop.is_set():
                raise  # the run waits for what it would have seen, and times out saying so
            # (a watch still open when the run ends and the cluster stops)

    def _watch(self) -> None:
        target = kube.Watchable(SANDBOX_CLAIM, self.namespace, "")
        _, version = kube.list_raw(target)
        while not self.stop.is_set():
            for event in kube.watch_raw(target, version, 60):
                if event["type"] not in ("ADDED", "MODIFIED"):
                    continue
                at = time.time()
                claim = event["object"]
                version = resource_version_of(claim)
                name = name_of(claim)
                self.seen_at.setdefault(name, at)
                if name not in self.ready_at and claim_is_ready(claim):
                    self.ready_at[name] = at
                    if claim_is_cold(claim):
                        self.cold.add(name)
                if self.stop.is_set():
                    return

    def __enter__(self) -> ClaimClock:
        self.thread.start()
        time.sleep(0.5)  # let the watch open before anything is created
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


def _paced(count: int, rate: float, start: Callable[[int], None]) -> None:
    """``start(i)`` at ``rate`` per second from now, each in a thread of its own, so that a slow
    one never delays the next (an open-loop load, as callers make it)."""
    began = time.monotonic()
    with ThreadPoolExecutor(64) as pool:
        futures = []
        for i in range(count):
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(start, i))
        for future in futures:
            future.result()


# --- The pool --------------------------------------------------------------------------------


def _warm_pool(namespace: str) -> None:
    template = demo_template(POOL)
    template["metadata"]["namespace"] = namespace
    kube.create_object(SANDBOX_TEMPLATE, template)
    kube.create_object(
        SANDBOX_WARM_POOL,
        {
            "apiVersion": SANDBOX_WARM_POOL.api_version,
            "kind": SANDBOX_WARM_POOL.kind,
            "metadata": {"name": POOL, "namespace": namespace},
            "spec": {"replicas": WARM, "sandboxTemplateRef": {"name": POOL}},
        },
    )


def _refilled(namespace: str, pool: str, replicas: int) -> Callable[[], bool]:
    """Only the pool's ``replicas`` ready Sandboxes left in the namespace: the claimed ones
    gone with their claims, the pool made whole again."""

    def owned(sandbox: dict[str, Any]) -> bool:
        return any(
            ref.get("kind") == "SandboxWarmPool" and ref.get("name") == pool
            for ref in sandbox["metadata"].get("ownerReferences") or []
        )

    def ready(sandbox: dict[str, Any]) -> bool:
        return (condition(sandbox, "Ready") or {}).get("status") == "True"

    def done() -> bool:
        sandboxes = kube.list_objects(SANDBOX, namespace)
        return (
            len(sandboxes) == replicas
            and all(owned(s) and ready(s) for s in sandboxes)
            and not kube.list_objects(SANDBOX_CLAIM, namespace)
        )

    return done


# --- The runs --------------------------------------------------------------------------------


def _direct(namespace: str, what: str, rate: float) -> Run:
    run = Run(what, rate)
    names = [f"direct-{uuid.uuid4().hex[:5]}-{i:03d}" for i in range(CLAIMS)]
    created_at: dict[str, float] = {}

    def claim(i: int) -> None:
        name = names[i]
        created_at[name] = time.time()
        # As a caller who makes claims directly writes one: the pool, nothing else.
        kube.create_object(
            SANDBOX_CLAIM,
            {
                "apiVersion": SANDBOX_CLAIM.api_version,
                "kind": SANDBOX_CLAIM.kind,
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"warmPoolRef": {"name": POOL}},
            },
        )

    with ClaimClock(namespace) as clock:
        calls, cpu = apiserver_calls(), cpu_seconds()
        _paced(CLAIMS, rate, claim)
        _wait(lambda: all(n in clock.ready_at for n in names), TIMEOUT, f"{what}: every claim")
        run.calls = _since(calls)
        run.cpu = _cpu_since(cpu)
    run.latencies = [clock.ready_at[n] - created_at[n] for n in names]
    run.claim_to_ready = [clock.ready_at[n] - clock.seen_at[n] for n in names]
    run.cold = sum(1 for n in names if n in clock.cold)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: kube.delete_object(SANDBOX_CLAIM, namespace, n), names))
    return run


WARM_UP = 16


def _warm_up(stack: Stack, token: str, namespace: str, source: dict[str, str]) -> None:
    """A running service is warm: its web processes have loaded their code and opened
    their connections (the database, the API server), and beat keeps the cluster's
    capabilities recorded. The first request of each process pays for that once, which is
    not what a claim costs: WARM_UP allocations made and released one after another
    first, on connections of their own (spread over the web processes)."""
    from allocations.models import Allocation
    from contextsvc.core import capabilities

    capabilities.refresh()
    names = [f"warm-{uuid.uuid4().hex[:5]}-{i:02d}" for i in range(WARM_UP)]
    for name in names:
        http = Http(stack.web_url, token)
        status, body = http.request(
            "POST",
            "/v1/sandbox-pools",
            {"name": name, "replicas": 1, "namespace": namespace, **source},
        )
        assert status == 201, body
        http.request("GET", f"/v1/sandbox-pools/{name}?wait=60")
        http.request("DELETE", f"/v1/sandbox-pools/{name}")
        http.close()
    live = Allocation.objects.filter(name__in=names)
    _wait(lambda: live.filter(phase="released").count() == WARM_UP, TIMEOUT, "the warm-up")


def _service(
    stack: Stack, token: str, namespace: str, what: str, rate: float, source: dict[str, str]
) -> Run:
    from allocations.models import Allocation
    from contextsvc.kube.objects.names import claim_name

    run = Run(what, rate)
    names = [f"svc-{uuid.uuid4().hex[:5]}-{i:03d}" for i in range(CLAIMS)]
    timings: dict[str, tuple[float, float, float]] = {}  # POST sent, POST answered, ready

    def allocate(i: int) -> None:
        name = names[i]
        http = Http(stack.web_url, token)
        try:
            started = time.time()
            status, body = http.request(
                "POST",
                "/v1/sandbox-pools",
                {"name": name, "replicas": 1, "namespace": namespace, **source},
            )
            posted = time.time()
            assert status == 201, body
            while True:
                status, body = http.request("GET", f"/v1/sandbox-pools/{name}?wait=60")
                assert status == 200 and body["status"] != "failed", body
                if body["status"] == "ready":
                    timings[name] = (started, posted, time.time())
                    return
        finally:
            http.close()

    with ClaimClock(namespace) as clock:
        calls, cpu = apiserver_calls(), cpu_seconds()
        _paced(CLAIMS, rate, allocate)
        run.calls = _since(calls)
        run.cpu = _cpu_since(cpu)
    claims = {name: claim_name(name, 0) for name in names}
    for name in names:
        started, posted, ready = timings[name]
        run.latencies.append(ready - started)
        run.posts.append(posted - started)
        run.before_claim.append(clock.seen_at[claims[name]] - started)
        run.after_ready.append(ready - clock.ready_at[claims[name]])
        run.claim_to_ready.append(clock.ready_at[claims[name]] - clock.seen_at[claims[name]])
    run.cold = sum(1 for name in names if claims[name] in clock.cold)
    http = Http(stack.web_url, token)
    for name in names:
        http.request("DELETE", f"/v1/sandbox-pools/{name}")
    http.close()
    live = Allocation.objects.filter(namespace=namespace, name__in=names)
    _wait(lambda: live.filter(phase="released").count() == CLAIMS, TIMEOUT, f"{what}: released")
    return run


def _profile_run(stack: Stack, token: str, namespace: str, rate: float) -> Run:
    """A profile's warm pool from warmPool.min, scaled from demand as beat does meanwhile."""
    from allocations.services.create import warm_pools_scale
    from contextsvc.kube.objects.names import profile_warm_pool_name
    from profiles.services import profile_save

    profile_save(
        name=PROFILE,
        values={
            "image": "busybox:1.36",
            "warm_pool_min": PROFILE_MIN,
            "warm_pool_max": PROFILE_MAX,
            "warm_pool_namespace": namespace,
        },
        actor="system:bench",
        create=True,
    )
    pool = profile_warm_pool_name(PROFILE)
    warm_pools_scale()
    _wait(_refilled(namespace, pool, PROFILE_MIN), TIMEOUT, "the profile's warm pool")
    _warm_up(stack, token, namespace, {"profile": PROFILE})
    _wait(_refilled(namespace, pool, PROFILE_MIN), TIMEOUT, "the profile's warm pool refilled")
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(BEAT_SECONDS):
            warm_pools_scale()

    scaler = threading.Thread(target=beat, daemon=True)
    scaler.start()
    try:
        return _service(
            stack, token, namespace, "a profile's warm pool", rate, {"profile": PROFILE}
        )
    finally:
        stop.set()
        scaler.join()


def run() -> None:
    cluster = ensure_cluster()
    os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
    try:
        with (
            bench_nodes(),
            service_stack(
                database="contextsvc_claims", kubeconfig=str(cluster.kubeconfig)
            ) as stack,
        ):
            token = _token()
            namespace = create_namespace(prefix="bench-claims")
            profile_namespace = create_namespace(prefix="bench-claims-profile")
            try:
                _warm_pool(namespace)
                refilled = _refilled(namespace, POOL, WARM)
                _wait(refilled, TIMEOUT, f"the warm pool of {WARM}")
                _warm_up(stack, token, namespace, {"warmPoolRef": POOL})
                runs: list[Run] = []
                for rate in RATES:
                    # Written after each run: what was measured survives a later one that
                    # fails.
                    _wait(refilled, TIMEOUT, "the pool refilled")
                    runs.append(_direct(namespace, "direct", rate))
                    _report(runs)
                    _wait(refilled, TIMEOUT, "the pool refilled")
                    runs.append(
                        _service(stack, token, namespace, "service", rate, {"warmPoolRef": POOL})
                    )
                    _report(runs)
                    _wait(refilled, TIMEOUT, "the pool refilled")
                    runs.append(_direct(namespace, "direct again", rate))
                    _report(runs)
                runs.append(_profile_run(stack, token, profile_namespace, RATES[-1]))
                _report(runs)
            finally:
                # Hundreds of Sandboxes on nodes that go with the run: not left to the suite.
                for name in (namespace, profile_namespace):
                    _delete_namespace(name)
    finally:
        if cluster.started_here:
            cluster.stop()


def _cpu_table(runs: list[Run]) -> str:
    rows = [
        "| path | claims/s | " + " | ".join(CPU_SHOWN) + " | the rest |",
        "|---|---|" + "---|" * (len(CPU_SHOWN) + 1),
    ]
    for r in runs:
        per = {group: ticks / TICKS * 1000 / len(r.latencies) for group, ticks in r.cpu.items()}
        rest = sum(ms for group, ms in per.items() if group not in CPU_SHOWN)
        cells = " | ".join(f"{per.get(group, 0.0):.1f}" for group in CPU_SHOWN)
        rows.append(f"| {r.what} | {r.rate:g} | {cells} | {rest:.1f} |")
    return "\n".join(rows)


def split(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"{percentile(ms, 50):.0f} / {percentile(ms, 99):.0f} ms"


def _report(runs: list[Run]) -> None:
    rows = [
        "| path | claims/s | claim → Ready p50 / p99 / max | p99 ÷ direct p99 | the claim "
        "seen made → seen Ready, p50 / p99 | API calls per claim | found no warm Sandbox |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        direct = next(d for d in runs if d.what == "direct" and d.rate == r.rate)
        rows.append(
            f"| {r.what} | {r.rate:g} | {r.ms(50):.0f} / {r.ms(99):.0f} / "
            f"{max(r.latencies) * 1000:.0f} ms | {r.ms(99) / direct.ms(99):.2f}× "
            f"| {split(r.claim_to_ready)} | {r.calls_per_claim():.1f} "
            f"| {r.cold} of {len(r.latencies)} |"
        )
    splits = "\n".join(
        f"| {r.what} | {r.rate:g} | {split(r.posts)} | {split(r.before_claim)} "
        f"| {split(r.after_ready)} |"
        for r in runs
        if r.posts
    )

    body = f"""
## Warm-pool claims

Measured {now()} on {machine()}, against the local control plane (the real agent-sandbox
controller, kwok nodes of the benchmark's own). Command: `make bench BENCH=claims`
(`python -m bench claims`). A SandboxWarmPool of the demo template kept at {WARM} ready
Sandboxes; {CLAIMS} claims at each rate, each from its create (direct) or its
POST (service: until `GET …?wait=60` answers `ready`) to Ready. The profile's pool starts
at warmPool.min {PROFILE_MIN} and is scaled from demand every {BEAT_SECONDS:.0f} s (beat's
schedule) up to {PROFILE_MAX} (the most a profile's warmPool.max may be). agent-sandbox's own thresholds for its claim path: p50
{UPSTREAM_P50_MS:.0f} ms, p99 {UPSTREAM_P99_MS:.0f} ms; ours: the service's p99 at most
1.2× the direct p99.

{chr(10).join(rows)}

CPU per claim over each run (ms; every process of the machine, by what it is):

{_cpu_table(runs)}

The service's paths split at the claim (p50 / p99):

| path | claims/s | POST alone | POST sent → the claim seen made | the claim seen Ready → the waiting client's answer |
|---|---|---|---|---|
{splits}
"""
    write_section("claims", body)
    print(body, flush=True)

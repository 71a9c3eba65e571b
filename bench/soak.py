"""``make bench BENCH=soak``: allocation lifecycles and approvals, cycle after cycle, for
``BENCH_SOAK_SECONDS`` (default 20 minutes), with one random fault from tests/faults/ in
every cycle; every process's memory is sampled, and a trend would show as growth per hour.

Not part of the suite. Everything targets loopback: the service's own processes, the local
Redis and the local control plane.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.figure import Figure

from bench.harness import Http, Stack, service_stack
from bench.report import machine, now, write_section
from cs_agent import ApprovalClient
from devenv.services import Redis
from devenv.system import REPO_DIR, pid_alive, port_open
from testenv import ensure_cluster, throwaway_namespace

SOAK_SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "1200"))
POOLS_PER_CYCLE = 4
APPROVALS_PER_CYCLE = 4
SAMPLE_SECONDS = 5.0
CONVERGE_SECONDS = 180.0
PLOT = REPO_DIR / "docs" / "img" / "soak-memory.png"
RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(sudo:*)"]}}


def _rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (prefork and uvicorn workers)."""
    pids = {pid}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent in pids or parent == pid:
                pids.add(int(entry.name))
    total = 0
    for each in pids:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


@dataclass
class Soak:
    stack: Stack
    cluster_pid: int
    samples: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    faults: list[tuple[float, str]] = field(default_factory=list)
    restarts: dict[str, list[float]] = field(default_factory=dict)
    # Exits nobody asked for, restarted by the supervisor as the kubelet would.
    crashes: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    lifecycles: int = 0
    approvals: int = 0
    failures: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    stop: threading.Event = field(default_factory=threading.Event)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def sample(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            for process in self.stack.processes:
                if process.proc is not None and process.proc.poll() is None:
                    self.samples.setdefault(process.name, []).append(
                        (self.elapsed(), _rss_mb(process.pid))
                    )

    def restart(self, name: str) -> None:
        with self.lock:
            self._restart(name)

    def _restart(self, name: str) -> None:
        process = next(p for p in self.stack.processes if p.name == name)
        process.kill()
        process.start()
        self.restarts.setdefault(name, []).append(self.elapsed())
        if name == "web":
            port = int(self.stack.web_url.rsplit(":", 1)[1])
            process.wait_listening(port, timeout=60)

    def supervise(self) -> None:
        """Every second, start again whatever exited, as the kubelet restarts a container
        (a Celery worker exits when a late ack meets a dead Redis)."""
        while not self.stop.wait(1.0):
            with self.lock:
                for process in self.stack.processes:
                    if process.proc is not None and process.proc.poll() is not None:
                        self.crashes[process.name] = self.crashes.get(process.name, 0) + 1
                        self._restart(process.name)


def _faults(soak: Soak) -> dict[str, Callable[[], None]]:
    def kill_redis() -> None:
        redis = Redis()
        pid = redis.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        while pid_alive(pid) or port_open(redis.port):
            time.sleep(0.1)
        time.sleep(1)
        redis.start()

    def freeze_apiserver() -> None:
        os.kill(soak.cluster_pid, signal.SIGSTOP)
        try:
            time.sleep(10)
        finally:
            os.kill(soak.cluster_pid, signal.SIGCONT)

    def killer(name: str) -> Callable[[], None]:
        return lambda: soak.restart(name)

    faults = {f"kill {name}": killer(name) for name in ("web", "worker", "watcher", "beat")}
    faults["kill redis"] = kill_redis
    faults["freeze api server 10 s"] = freeze_apiserver
    return faults


def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def _answered(http_factory: Callable[[], Http], method: str, path: str, body: object) -> int:
    """A caller's retries: no answer or a 503 is asked again (a new connection)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        http = http_factory()
        try:
            status, _ = http.request(method, path, body)
        except OSError:
            status = 0
        finally:
            http.close()
        if status not in (0, 503):
            return status
        time.sleep(0.5)
    return 0


def _cycle(soak: Soak, namespace: str, token: str, agent_token: str, rng: random.Random) -> None:
    # Imported here: models load only once service_stack() has set Django up.
    from allocations.models import Allocation, Phase

    def http() -> Http:
        return Http(soak.stack.web_url, token)

    names = [f"soak-{uuid.uuid4().hex[:8]}" for _ in range(POOLS_PER_CYCLE)]
    for name in names:
        body = {
            "name": name,
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        }
        status = _answered(http, "POST", "/v1/sandbox-pools", body)
        if status not in (201, 409):
            soak.failures.append(f"create {name}: {status}")
    fault = rng.choice(sorted(_faults(soak)))
    soak.faults.append((soak.elapsed(), fault))
    _faults(soak)[fault]()

    live = Allocation.objects.filter(name__in=names).exclude(phase=Phase.RELEASED)
    if not _until(lambda: live.filter(phase=Phase.READY).count() == len(names), CONVERGE_SECONDS):
        soak.failures.append(
            f"not ready after {fault}: {sorted(live.values_list('phase', flat=True))}"
        )
    for name in names:
        status = _answered(http, "DELETE", f"/v1/sandbox-pools/{name}", None)
        if status not in (204, 404):
            soak.failures.append(f"release {name}: {status}")
    if not _until(lambda: not live.exists(), CONVERGE_SECONDS):
        soak.failures.append(f"not released after {fault}")
    else:
        soak.lifecycles += len(names)

    agent = ApprovalClient(soak.stack.web_url, agent_token, agent_type="soak-agent")
    for n in range(APPROVALS_PER_CYCLE):
        try:
            pending = agent.submit({"kind": "shell", "command": "pip install pandas"}, f"c-{n}")
            decision = "approve" if n % 2 else "deny"
            status = _answered(
                http, "POST", f"/v1/approvals/{pending['id']}/decision", {"decision": decision}
            )
            state = agent.wait(pending["id"], timeout=30)
        except Exception as exc:  # noqa: BLE001 - recorded, the soak goes on
            soak.failures.append(f"approval: {exc}")
            continue
        if status == 200 and state["status"] in ("approved", "denied"):
            soak.approvals += 1
        else:
            soak.failures.append(f"approval {pending['id']}: {status} {state['status']}")


def _trend(points: list[tuple[float, float]]) -> float:
    """Least-squares slope in MB per hour (0 with fewer than two points)."""
    if len(points) < 2:
        return 0.0
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 0.0 if var == 0 else sum((x - mx) * (y - my) for x, y in points) / var * 3600


WARM_UP_SECONDS = 60.0


def _age_trend(lives: list[list[tuple[float, float]]]) -> tuple[float, int]:
    """Memory against a process's age, pooled over every life (each one's first minute
    left out: imports, caches, pools, prefork children starting). A leak makes every life
    grow as it ages, however often faults restart the process; (MB per hour, samples)."""
    pooled = [
        (t - life[0][0], mb)
        for life in lives
        for t, mb in life
        if t - life[0][0] >= WARM_UP_SECONDS
    ]
    return _trend(pooled), len(pooled)


def _segments(
    points: list[tuple[float, float]], restarts: list[float]
) -> list[list[tuple[float, float]]]:
    """The samples of each life of a process (a restart starts a new one)."""
    cuts = sorted(restarts)
    lives: list[list[tuple[float, float]]] = [[]]
    for t, mb in points:
        while cuts and t >= cuts[0]:
            cuts.pop(0)
            lives.append([])
        lives[-1].append((t, mb))
    return [life for life in lives if life]


def _plot(soak: Soak) -> None:
    # A Figure of its own (no pyplot): nothing to show on screen, no global state to close.
    figure = Figure(figsize=(10, 4.5), dpi=100)
    axes = figure.subplots()
    for name, points in sorted(soak.samples.items()):
        for i, life in enumerate(_segments(points, soak.restarts.get(name, []))):
            axes.plot(
                [t / 60 for t, _ in life],
                [mb for _, mb in life],
                color=f"C{sorted(soak.samples).index(name)}",
                label=name if i == 0 else None,
                linewidth=1.2,
            )
    for t, _ in soak.faults:
        axes.axvline(t / 60, color="0.85", linewidth=0.6, zorder=0)
    axes.set_xlabel("minutes (grey lines: faults)")
    axes.set_ylabel("resident memory, MB (process and children)")
    axes.set_title("Soak: memory of each process over the run")
    axes.legend(loc="upper left", ncols=4, fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(PLOT)


def run() -> None:
    cluster = ensure_cluster()
    os.environ["CS_RESYNC_INTERVAL_SECONDS"] = "5"
    rng = random.Random(17)
    try:
        with (
            service_stack(database="contextsvc_soak", kubeconfig=str(cluster.kubeconfig)) as stack,
            throwaway_namespace("soak", kubeconfig=cluster.kubeconfig) as namespace,
        ):
            # Imported here: models load only once service_stack() has set Django up.
            from contextsvc.core import services
            from profiles.services import profile_save

            schedule = Path(tempfile.mkdtemp(prefix="soak-beat-")) / "schedule"
            stack.start(
                "beat",
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "beat",
                    "--loglevel=WARNING",
                    "-S",
                    "celery.beat:PersistentScheduler",
                    "-s",
                    str(schedule),
                ],
            )
            profile_save(
                name="soak-agent",
                create=True,
                actor="system:bench",
                values={"source": "builtin", "image": "busybox:1.36", "rules": RULES},
            )
            platform = services.api_client_create(
                name="soak", scopes=["allocations", "approver"], actor="system:bench"
            )
            token = services.api_token_issue(client=platform, actor="system:bench")[1]
            agent_client = services.api_client_create(
                name="soak-agent",
                scopes=["agent"],
                agent_types=["soak-agent"],
                actor="system:bench",
            )
            agent_token = services.api_token_issue(client=agent_client, actor="system:bench")[1]
            soak = Soak(stack, cluster.state.pids["kube-apiserver"])
            sampler = threading.Thread(target=soak.sample, daemon=True)
            sampler.start()
            threading.Thread(target=soak.supervise, daemon=True).start()
            cycles = 0
            while soak.elapsed() < SOAK_SECONDS:
                _cycle(soak, namespace, token, agent_token, rng)
                cycles += 1
                print(
                    f"[soak] {soak.elapsed() / 60:.1f} min: {cycles} cycles, "
                    f"{soak.lifecycles} lifecycles, {soak.approvals} approvals, "
                    f"{len(soak.failures)} failures",
                    flush=True,
                )
            soak.stop.set()
            sampler.join()
    finally:
        if cluster.started_here:
            cluster.stop()
    _plot(soak)
    _report(soak, cycles)


def _report(soak: Soak, cycles: int) -> None:
    rows = []
    for name, points in sorted(soak.samples.items()):
        lives = _segments(points, soak.restarts.get(name, []))
        longest = max(lives, key=lambda life: life[-1][0] - life[0][0])
        first, last = longest[0][1], longest[-1][1]
        peak = max(mb for _, mb in points)
        minutes = (longest[-1][0] - longest[0][0]) / 60
        trend, samples = _age_trend(lives)
        rows.append(
            f"| {name} | {len(soak.restarts.get(name, []))} | {minutes:.1f} min | "
            f"{first:.0f} → {last:.0f} MB | {trend:+.1f} MB/h ({samples} samples) | "
            f"{peak:.0f} MB |"
        )
    counted: dict[str, int] = {}
    for _, fault in soak.faults:
        counted[fault] = counted.get(fault, 0) + 1
    faults = ", ".join(f"{name} ×{n}" for name, n in sorted(counted.items()))
    crashes = ", ".join(f"{name} ×{n}" for name, n in sorted(soak.crashes.items())) or "none"
    failures = "\n".join(f"- {failure}" for failure in soak.failures[:20]) or "- none"
    body = f"""
## Soak

Measured {now()} on {machine()}, {soak.elapsed() / 60:.1f} minutes. Command: `make bench
BENCH=soak` (`BENCH_SOAK_SECONDS`, default 1200). Each cycle creates {POOLS_PER_CYCLE}
pools through the web process, applies one random fault (seeded), waits until they are
ready, releases them and waits until nothing is left, then submits {APPROVALS_PER_CYCLE}
approvals that a reviewer decides over HTTP and the agent client reads back. The worker
and beat run with a 5 s resync. Memory is the resident size of each process with its
children, sampled every {SAMPLE_SECONDS:.0f} s.

**{cycles} cycles: {soak.lifecycles} allocation lifecycles and {soak.approvals} approvals
completed; {len(soak.failures)} failures.** Faults: {faults}. Exits nobody asked
for, restarted within a second as the kubelet would: {crashes}.

Failures (first 20):
{failures}

| process | restarts (faults and exits) | longest life | memory over it | growth with age, every life | peak |
|---|---|---|---|---|---|
{chr(10).join(rows)}

![memory of each process over the soak](img/soak-memory.png)

Faults restart most processes every few minutes, so no single life is long enough to
judge. The growth is therefore a least-squares slope of resident memory against the
process's age, pooled over all its lives, each life's first minute left out (imports,
caches, connection pools and prefork children starting): a leak makes every life grow as
it ages; a few MB/h either way is allocator noise.
"""
    write_section("soak", body)
    print(body)

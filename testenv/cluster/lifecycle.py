"""``up``, ``down`` and ``status``: reuse a healthy cluster of this repo or start one, in
order, each component once the one it needs is healthy; stop only what ``up`` started.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from testenv import build
from testenv.build import say
from testenv.cluster.bootstrap import (
    apply_crds,
    crds_established,
    crds_file,
    create_nodes,
    nodes_ready,
    setup_objects,
)
from testenv.cluster.client import api_client
from testenv.cluster.components import (
    apiserver_args,
    controller_manager_args,
    etcd_args,
    etcd_data_dir,
    kwok_args,
    kwok_config,
    provisioner_args,
    sandbox_controller_args,
    scheduler_args,
)
from testenv.cluster.credentials import write_auth, write_pki
from testenv.cluster.health import healthy
from testenv.cluster.instance import (
    COMPONENTS,
    CONTROLLER_MANAGER_PORT,
    ETCD_CLIENT_PORT,
    HOST,
    KUBECONFIG,
    LOG_DIR,
    SANDBOX_HEALTH_PORT,
    SCHEDULER_PORT,
    SERVER_URL,
    SHM_DIR,
    STATE_DIR,
    STATE_FILE,
    start_timeout,
)
from testenv.cluster.processes import check_ports, proc_exe_matches, spawn, stop_pid, wait_for
from testenv.cluster.state import ClusterState, state_lock


def running_state() -> ClusterState | None:
    """The state of a cluster from this repo that is running and healthy, else None."""
    state = ClusterState.load()
    if state is None:
        return None
    wanted = build.binaries()
    for name in COMPONENTS:
        pid, exe = state.pids.get(name), state.exes.get(name)
        if pid is None or exe is None or not proc_exe_matches(pid, exe):
            return None
        if name in wanted and exe != str(wanted[name]):
            # Another version's build (AGENT_SANDBOX_VERSION changed): a new cluster, with
            # that version's CRDs in a fresh etcd.
            say(f"the running cluster has another build of {name}; starting a new one")
            return None
    if not healthy(f"{SERVER_URL}/readyz", verify=True, token=state.admin_token):
        return None
    return state


def status() -> dict[str, str]:
    """Component -> 'running (pid N)' / 'stopped' for the recorded cluster."""
    state = ClusterState.load()
    result = {}
    for name in COMPONENTS:
        if state and name in state.pids and proc_exe_matches(state.pids[name], state.exes[name]):
            result[name] = f"running (pid {state.pids[name]})"
        else:
            result[name] = "stopped"
    return result


def stop_state(state: ClusterState) -> None:
    for name in reversed(COMPONENTS):
        if name in state.pids:
            stop_pid(state.pids[name], state.exes[name], name)
    etcd_root = Path(state.etcd_dir).parent
    if etcd_root.parent == SHM_DIR and etcd_root.name.startswith("context-service-"):
        shutil.rmtree(etcd_root, ignore_errors=True)


def down() -> bool:
    """Stop the processes ``up`` started (only those) and remove the etcd data.

    Returns True when there was something to stop.
    """
    with state_lock():
        state = ClusterState.load()
        if state is None:
            return False
        stop_state(state)
        STATE_FILE.unlink(missing_ok=True)
        (STATE_DIR / "provisioner.ready").unlink(missing_ok=True)
        return True


def up() -> tuple[ClusterState, bool]:
    """Reuse a healthy cluster from this repo, or build what is missing and start one.

    Returns the state and whether this call started it.
    """
    with state_lock():
        state = running_state()
        if state is not None:
            return state, False
        stale = ClusterState.load()
        if stale is not None:
            # A half-dead cluster from earlier: stop whatever of it still runs.
            say("found a stopped or unhealthy cluster from earlier; cleaning it up")
            stop_state(stale)
            STATE_FILE.unlink(missing_ok=True)
        bins = build.ensure_built()
        with _sigterm_as_interrupt():
            return _start(bins), True


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While starting, SIGTERM (e.g. a CI timeout) stops what was started, like Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _start(bins: dict[str, Path]) -> ClusterState:
    check_ports()
    started = time.monotonic()
    deadline = started + start_timeout()
    for stale in ("provisioner.ready",):
        (STATE_DIR / stale).unlink(missing_ok=True)
    admin_token = secrets.token_urlsafe(32)
    etcd_dir = etcd_data_dir()
    shutil.rmtree(etcd_dir.parent, ignore_errors=True)
    etcd_dir.mkdir(parents=True)
    etcd_dir.chmod(0o700)
    state = ClusterState(
        pids={},
        exes={},
        etcd_dir=str(etcd_dir),
        admin_token=admin_token,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )

    def launch(name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        proc = spawn(name, args, env)
        state.pids[name] = proc.pid
        # The program that identifies the process: the script for the Python provisioner.
        state.exes[name] = args[1] if args[0] == sys.executable else args[0]
        state.save()  # after every start, so a failed ``up`` can still be cleaned up

    try:
        write_pki(STATE_DIR / "pki")
        kubeconfigs = write_auth(admin_token)
        launch("etcd", etcd_args(bins, etcd_dir))
        # Prepare files that need the module cache while etcd starts.
        crds_file()
        kwok_config()
        wait_for(
            "etcd",
            lambda: healthy(f"http://{HOST}:{ETCD_CLIENT_PORT}/health"),
            deadline,
            state.pids,
        )
        launch("kube-apiserver", apiserver_args(bins))
        wait_for(
            "kube-apiserver /readyz",
            lambda: healthy(f"{SERVER_URL}/readyz", verify=True, token=admin_token),
            deadline,
            state.pids,
        )
        launch("kube-scheduler", scheduler_args(bins, kubeconfigs))
        launch("provisioner", *provisioner_args(kubeconfigs))
        with api_client() as api:
            crd_names = apply_crds(api)
            setup_objects(api)
            create_nodes(api)
            launch("kwok", kwok_args(bins, kubeconfigs))
            # Both the agent-sandbox controller's informers and the garbage collector need
            # the sandbox kinds to exist when they start: the garbage collector discovers
            # new resource types only every 30 s, and until then it would not cascade
            # deletions through Sandboxes and SandboxClaims.
            wait_for(
                "CRDs Established", lambda: crds_established(api, crd_names), deadline, state.pids
            )
            launch("kube-controller-manager", controller_manager_args(bins, kubeconfigs))
            args, env = sandbox_controller_args(bins, kubeconfigs)
            launch("agent-sandbox-controller", args, env)
            wait_for("kwok nodes Ready", lambda: nodes_ready(api), deadline, state.pids)
        checks: list[tuple[str, Callable[[], bool]]] = [
            (
                "kube-controller-manager /healthz",
                lambda: healthy(f"https://{HOST}:{CONTROLLER_MANAGER_PORT}/healthz"),
            ),
            (
                "kube-scheduler /healthz",
                lambda: healthy(f"https://{HOST}:{SCHEDULER_PORT}/healthz"),
            ),
            (
                "agent-sandbox-controller /readyz",
                lambda: healthy(f"http://{HOST}:{SANDBOX_HEALTH_PORT}/readyz"),
            ),
            ("provisioner", lambda: (STATE_DIR / "provisioner.ready").exists()),
        ]
        for what, check in checks:
            wait_for(what, check, deadline, state.pids)
    except BaseException:
        say(f"starting the cluster failed; stopping what was started (logs: {LOG_DIR})")
        stop_state(state)
        STATE_FILE.unlink(missing_ok=True)
        raise
    state.startup_seconds = round(time.monotonic() - started, 2)
    state.save()
    say(f"cluster up in {state.startup_seconds:.1f}s; KUBECONFIG={KUBECONFIG}")
    return state

"""What tests and the local stack hold: a ``ClusterHandle`` on a running cluster (started
here or reused), and a bare second API server for a cluster without agent-sandbox.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testenv import build
from testenv.cluster.client import api_client
from testenv.cluster.components import apiserver_args
from testenv.cluster.health import healthy
from testenv.cluster.instance import (
    BARE_APISERVER_PORT,
    HOST,
    KUBECONFIG,
    SERVER_URL,
    STATE_DIR,
    ClusterError,
    start_timeout,
)
from testenv.cluster.lifecycle import down, running_state, up
from testenv.cluster.processes import port_free, spawn, stop_pid, wait_for
from testenv.cluster.state import ClusterState


@dataclass
class ClusterHandle:
    """A running cluster. ``stop()`` stops it only if this handle started it."""

    kubeconfig: Path
    started_here: bool
    state: ClusterState

    @property
    def server(self) -> str:
        return SERVER_URL

    @property
    def token(self) -> str:
        return self.state.admin_token

    def api_client(self) -> Any:
        return api_client(self.kubeconfig)

    def stop(self) -> None:
        if self.started_here:
            down()
            self.started_here = False


def ensure_cluster() -> ClusterHandle:
    """Reuse a healthy cluster of this repo or start one (building binaries if needed)."""
    state, started = up()
    return ClusterHandle(kubeconfig=KUBECONFIG, started_here=started, state=state)


@contextlib.contextmanager
def bare_apiserver() -> Iterator[Path]:
    """A second API server over the running etcd, under a key prefix of its own: an empty
    cluster with no CRDs and no controllers. Yields an admin kubeconfig for it.

    It shows how the service behaves on a cluster without agent-sandbox, without touching
    the CRDs every other test relies on. Needs the main cluster running (``ensure_cluster``).
    """
    state = running_state()
    if state is None:
        raise ClusterError("bare_apiserver() needs the test cluster running (ensure_cluster)")
    if not port_free(BARE_APISERVER_PORT):
        raise ClusterError(f"port {BARE_APISERVER_PORT} on {HOST} is in use")
    bins = build.ensure_built()
    args = [
        arg for arg in apiserver_args(bins) if not arg.startswith(("--secure-port=", "--cert-dir="))
    ] + [
        f"--secure-port={BARE_APISERVER_PORT}",
        f"--cert-dir={STATE_DIR / 'bare-apiserver-certs'}",
        f"--etcd-prefix=/bare-{secrets.token_hex(4)}",
    ]
    proc = spawn("bare-apiserver", args)
    url = f"https://{HOST}:{BARE_APISERVER_PORT}"
    try:
        wait_for(
            "the bare API server",
            lambda: healthy(f"{url}/readyz", verify=True, token=state.admin_token),
            time.monotonic() + start_timeout(),
            {"bare-apiserver": proc.pid},
        )
        config = yaml.safe_load(KUBECONFIG.read_text())
        config["clusters"][0]["cluster"]["server"] = url
        path = STATE_DIR / "bare.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        yield path
    finally:
        stop_pid(proc.pid, args[0], "bare-apiserver")
        proc.wait()

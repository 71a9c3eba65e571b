"""Where this instance of the test control plane lives: its state directory, its ports
(every one 100 × ``CS_CLUSTER_INSTANCE`` higher), its fake address ranges and the names of
what it serves.

Pod, Service and Node addresses are fake (loopback-range numbers that nothing serves);
never connect to them.
"""

from __future__ import annotations

import os
from pathlib import Path

from contextsvc.env import env_float

REPO_DIR = Path(__file__).resolve().parents[2]
# A pytest-xdist worker gwN is instance N unless told otherwise: each of the suite's
# parallel processes gets a control plane of its own.
INSTANCE = int(
    os.environ.get("CS_CLUSTER_INSTANCE")
    or os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    or 0
)
_INSTANCE_DIR = "cluster" if INSTANCE == 0 else f"cluster-{INSTANCE}"
STATE_DIR = Path(os.environ.get("CS_CLUSTER_DIR", str(REPO_DIR / ".local" / _INSTANCE_DIR)))
STATE_FILE = STATE_DIR / "state.json"
KUBECONFIG = STATE_DIR / "kubeconfig"
LOG_DIR = STATE_DIR / "logs"

HOST = "127.0.0.1"
_PORT_OFFSET = 100 * INSTANCE
ETCD_CLIENT_PORT = 12379 + _PORT_OFFSET
ETCD_PEER_PORT = 12380 + _PORT_OFFSET
APISERVER_PORT = 16443 + _PORT_OFFSET
CONTROLLER_MANAGER_PORT = 20257 + _PORT_OFFSET
SCHEDULER_PORT = 20259 + _PORT_OFFSET
SANDBOX_METRICS_PORT = 20280 + _PORT_OFFSET
SANDBOX_HEALTH_PORT = 20281 + _PORT_OFFSET
BARE_APISERVER_PORT = 17443 + _PORT_OFFSET
PORTS: dict[str, int] = {
    "etcd client": ETCD_CLIENT_PORT,
    "etcd peer": ETCD_PEER_PORT,
    "kube-apiserver": APISERVER_PORT,
    "kube-controller-manager": CONTROLLER_MANAGER_PORT,
    "kube-scheduler": SCHEDULER_PORT,
    "agent-sandbox metrics": SANDBOX_METRICS_PORT,
    "agent-sandbox health": SANDBOX_HEALTH_PORT,
}
SERVER_URL = f"https://{HOST}:{APISERVER_PORT}"
# etcd keeps its data in tmpfs (a private 0700 directory below it).
SHM_DIR = Path(os.environ.get("CS_ETCD_TMPFS", "/dev/shm"))  # noqa: S108

# Fake addresses, all inside 127.0.0.0/8 so that a mistaken connection stays on this
# machine. Nothing listens on them.
SERVICE_CIDR = "127.2.0.0/16"
POD_CIDR = "127.1.0.0/16"  # node i gets 127.1.i.0/24
NODE_IP_PREFIX = "127.0.10."  # node i has InternalIP 127.0.10.i
NODE_COUNT = 2
NODE_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# The agent-sandbox controller reads its label allow-list from a file its Deployment mounts
# from this ConfigMap; we create the ConfigMap too so the cluster looks like a real install.
SANDBOX_NAMESPACE = "agent-sandbox-system"
SANDBOX_CONFIGMAP = "agent-sandbox-config"
# A configured list replaces the controller's default, so the default domain is repeated.
ALLOWED_LABEL_DOMAINS = ("sandbox.users.io", "context.rossoctl.io")

SANDBOX_GROUP = "agents.x-k8s.io"
EXTENSIONS_GROUP = "extensions.agents.x-k8s.io"

PROVISIONER_NAME = "testenv.context.rossoctl.io/fake"
STORAGE_CLASS = "standard"  # default class, RWO and RWX, expandable
FIXED_STORAGE_CLASS = "standard-fixed"  # same provisioner, allowVolumeExpansion: false


def start_timeout() -> float:
    return env_float("CS_CLUSTER_START_TIMEOUT", 120.0, minimum=1.0)


STOP_TIMEOUT = 10.0

# Every process ``up`` starts; ``down`` stops them in reverse order (clients first, etcd last).
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "agent-sandbox-controller",
    "provisioner",
)


class ClusterError(RuntimeError):
    """The control plane could not be started or reached; the message says why."""

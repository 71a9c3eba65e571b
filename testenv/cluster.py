"""Start, reuse and stop the local test control plane.

Everything listens on 127.0.0.1 only. The processes are: etcd (data in tmpfs, no fsync),
kube-apiserver, kube-controller-manager (a few controllers), kube-scheduler, kwok (fake
nodes that turn scheduled Pods Running and Ready), the agent-sandbox controller with its
extensions, and a tiny fake dynamic volume provisioner (``provisioner.py``).

Runtime state lives in ``<repo>/.local/cluster/`` (override: ``CS_CLUSTER_DIR``): the state
file with the PIDs we started, certificates, tokens, kubeconfigs, configs and ``logs/``.
``CS_CLUSTER_INSTANCE=N`` (N > 0) is a second, independent control plane beside it: its
state in ``.local/cluster-N/``, every port 100 × N higher (the suite's parallel processes,
docs/testing.md).
Pod, Service and Node addresses of this cluster are fake (loopback-range numbers that
nothing serves); never connect to them, and never use logs/exec/attach/port-forward.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import fcntl
import hashlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from contextsvc.env import env_float
from contextsvc.kube.objects.hardening import harden
from testenv import build
from testenv.build import say

REPO_DIR = Path(__file__).resolve().parents[1]
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


def _start_timeout() -> float:
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


# ---------------------------------------------------------------------------------------
# State file and processes


@dataclass
class ClusterState:
    """What ``up`` records so that a later ``status``/``down``/``up`` finds the cluster."""

    pids: dict[str, int]
    exes: dict[str, str]  # component -> executable path, to recognise our PIDs
    etcd_dir: str
    admin_token: str
    started_at: str
    startup_seconds: float = 0.0

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=2) + "\n")
        tmp.chmod(0o600)  # it holds the admin token
        tmp.replace(STATE_FILE)

    @classmethod
    def load(cls) -> ClusterState | None:
        try:
            data = json.loads(STATE_FILE.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None


# Popen objects of processes this Python process started, so that stopping them also
# reaps them (no zombies in a long pytest run).
_children: dict[int, subprocess.Popen[bytes]] = {}


def _proc_exe_matches(pid: int, exe: str) -> bool:
    """True when ``pid`` is alive and its command line starts with ``exe``.

    Guards against PID reuse: we only ever signal processes that still run the program we
    started under that PID.
    """
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie (state Z) has finished; treat it as gone.
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    args = raw.split(b"\0")
    return bool(args) and exe.encode() in args[:2]


def _stop_pid(pid: int, exe: str, name: str) -> None:
    if not _proc_exe_matches(pid, exe):
        _children.pop(pid, None)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        child = _children.get(pid)
        if child is not None and child.poll() is not None:
            break
        if not _proc_exe_matches(pid, exe):
            break
        time.sleep(0.05)
    else:
        say(f"{name} (pid {pid}) did not stop on SIGTERM; sending SIGKILL")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    child = _children.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=STOP_TIMEOUT)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _check_ports() -> None:
    taken = [f"{port} ({what})" for what, port in PORTS.items() if not _port_free(port)]
    if taken:
        raise ClusterError(
            "cannot start the test cluster: port(s) "
            + ", ".join(taken)
            + f" on {HOST} are in use by another process (not a cluster this repo started;"
            " see 'ss -ltnp' to find it)"
        )


def _spawn(
    name: str, args: list[str], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = (LOG_DIR / f"{name}.log").open("wb")  # a fresh log for each start
    log.write(f"\n=== {dt.datetime.now().isoformat()} {' '.join(args)}\n".encode())
    log.flush()
    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        cwd=STATE_DIR,
        # Own session: a Ctrl-C in the terminal that ran ``up`` does not reach them.
        start_new_session=True,
    )
    log.close()
    _children[proc.pid] = proc
    return proc


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """Serialise up/down across processes (e.g. two pytest runs starting at once)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with (STATE_DIR / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------
# Certificates, tokens, kubeconfigs


def _write_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate and the service-account signing key."""

    pki.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    later = now + dt.timedelta(days=365)

    def key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def write(name: str, data: bytes, mode: int = 0o600) -> None:
        path = pki / name
        path.write_bytes(data)
        path.chmod(mode)

    # EC keys: generated in microseconds, unlike RSA, which keeps startup fast.
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "context-service-test-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(later)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    first_service_ip = str(next(ipaddress.ip_network(SERVICE_CIDR).hosts()))
    names: list[x509.GeneralName] = [
        x509.DNSName(n)
        for n in (
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
    ]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in (HOST, first_service_ip)]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(later)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    # Service-account tokens are signed with RSA (RS256), the Kubernetes default.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write("ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    write("ca.key", key_pem(ca_key))
    write("apiserver.crt", server_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    write("apiserver.key", key_pem(server_key))
    write("sa.key", key_pem(sa_key))
    write(
        "sa.pub",
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        0o644,
    )


@dataclass(frozen=True)
class Identity:
    """A token user of the static token file."""

    name: str
    groups: tuple[str, ...]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))


def _identities(admin_token: str) -> dict[str, Identity]:
    # The components run as cluster admins (group system:masters): this is a throwaway test
    # cluster, and it keeps component RBAC out of the way of the RBAC the tests exercise.
    masters = ("system:masters",)
    return {
        "admin": Identity("context-service-test-admin", masters, admin_token),
        "kube-controller-manager": Identity("system:kube-controller-manager", masters),
        "kube-scheduler": Identity("system:kube-scheduler", masters),
        "kwok": Identity("system:kwok-controller", masters),
        "agent-sandbox-controller": Identity("system:agent-sandbox-controller", masters),
        "provisioner": Identity("system:testenv-provisioner", masters),
    }


def _kubeconfig(user: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "context-service-test",
                "cluster": {
                    "server": SERVER_URL,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": "context-service-test",
                "context": {"cluster": "context-service-test", "user": user},
            }
        ],
        "current-context": "context-service-test",
    }


def _write_auth(admin_token: str) -> dict[str, Path]:
    """Token file for the API server plus one kubeconfig per identity."""
    ids = _identities(admin_token)
    lines = [f'{i.token},{i.name},{i.name},"{",".join(i.groups)}"' for i in ids.values()]
    tokens = STATE_DIR / "tokens.csv"
    tokens.write_text("\n".join(lines) + "\n")
    tokens.chmod(0o600)
    ca_pem = (STATE_DIR / "pki" / "ca.crt").read_bytes()
    paths = {}
    for component, ident in ids.items():
        path = KUBECONFIG if component == "admin" else STATE_DIR / f"{component}.kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(ident.name, ident.token, ca_pem)))
        path.chmod(0o600)
        paths[component] = path
    return paths


# ---------------------------------------------------------------------------------------
# HTTP checks (loopback only)


def _https_get(url: str, *, token: str | None = None, verify: bool = True) -> tuple[int, bytes]:
    if not url.startswith(("https://127.0.0.1:", "http://127.0.0.1:")):
        raise ValueError(f"refusing to connect outside loopback: {url}")
    if verify:
        ctx = ssl.create_default_context(cafile=str(STATE_DIR / "pki" / "ca.crt"))
    else:
        # Only for the components' own self-signed health endpoints on 127.0.0.1.
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url)  # noqa: S310 - loopback URL checked above
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    # No proxy, whatever the environment says: this is loopback traffic.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx)
    )
    try:
        with opener.open(request, timeout=2) as resp:
            return int(resp.status), bytes(resp.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def _healthy(url: str, *, verify: bool = False, token: str | None = None) -> bool:
    status, _ = _https_get(url, token=token, verify=verify)
    return status == 200


def _wait(what: str, check: Callable[[], bool], deadline: float, procs: dict[str, int]) -> None:
    while True:
        if check():
            return
        for name, pid in procs.items():
            child = _children.get(pid)
            if child is not None and child.poll() is not None:
                raise ClusterError(
                    f"{name} exited with code {child.returncode} while waiting for {what}; "
                    f"see {LOG_DIR / (name + '.log')}:\n{_log_tail(name)}"
                )
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what}; logs are in {LOG_DIR}")
        time.sleep(0.1)


def _log_tail(name: str, lines: int = 15) -> str:
    try:
        return "\n".join(
            (LOG_DIR / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
        )
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------
# Kubernetes objects the cluster needs


def api_client(kubeconfig: Path = KUBECONFIG) -> Any:  # kubernetes.client.ApiClient
    """A ``kubernetes.client.ApiClient`` for the admin user of this cluster."""

    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    # Never send loopback traffic through a proxy taken from the environment.
    configuration.no_proxy = "127.0.0.1,localhost"
    return k8s.ApiClient(configuration)


# libyaml's loader when PyYAML has it: the CRDs are large (seconds with the pure-Python one).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def sandbox_crds() -> list[dict[str, Any]]:
    """The four agent-sandbox CRDs from the pinned module, reduced to v1beta1.

    The shipped CRDs also serve the deprecated v1alpha1 and convert between the two with
    a webhook in the controller. We run the controller without its webhook, so conversion
    is dropped and only v1beta1 is served and stored (the controller itself speaks v1beta1).
    """
    crd_dir = build.module_dir("sigs.k8s.io/agent-sandbox", build.AGENT_SANDBOX_VERSION)
    crds = []
    for path in sorted((crd_dir / "k8s" / "crds").glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
        spec = crd["spec"]
        spec["versions"] = [v for v in spec["versions"] if v["name"] == "v1beta1"]
        if len(spec["versions"]) != 1:
            raise ClusterError(f"{path.name} has no v1beta1 version")
        spec["versions"][0]["served"] = True
        spec["versions"][0]["storage"] = True
        spec.pop("conversion", None)
        crds.append(crd)
    return crds


def _crds_file() -> Path:
    """The stripped CRDs, cached next to the binaries (reading the module is slowish)."""
    # The name says what was done to the CRDs; change it when sandbox_crds() changes.
    path = build.cache_dir() / "crds" / f"agent-sandbox-{build.AGENT_SANDBOX_VERSION}-v1beta1.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sandbox_crds()))
        tmp.replace(path)
    return path


def _apply_crds(api: Any) -> list[str]:

    ext = k8s.ApiextensionsV1Api(api)
    names = []
    for crd in json.loads(_crds_file().read_text()):
        names.append(crd["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise
    return names


def _crds_established(api: Any, names: list[str]) -> bool:

    ext = k8s.ApiextensionsV1Api(api)
    for name in names:
        crd = ext.read_custom_resource_definition(name)
        conditions = (crd.status.conditions if crd.status else None) or []
        if not any(c.type == "Established" and c.status == "True" for c in conditions):
            return False
    return True


def _create(fn: Callable[..., Any], *args: Any) -> None:
    """Create an object; an existing one is fine (idempotent setup)."""

    try:
        fn(*args)
    except ApiException as exc:
        if exc.status != 409:
            raise


def _node_name(i: int) -> str:
    return f"kwok-node-{i}"


def _create_nodes(api: Any) -> None:
    """Fake nodes, annotated so kwok manages them; each with its own pod CIDR and IP."""

    core = k8s.CoreV1Api(api)
    for i in range(1, NODE_COUNT + 1):
        name = _node_name(i)
        pod_cidr = POD_CIDR.replace(".0.0/16", f".{i}.0/24")
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                },
            },
            "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        }
        _create(core.create_node, node)
        # Addresses set before kwok starts are kept by kwok's node-initialize stage.
        addresses = {
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": f"{NODE_IP_PREFIX}{i}"},
                    {"type": "Hostname", "address": name},
                ]
            }
        }
        core.patch_node_status(name, addresses)


def _nodes_ready(api: Any) -> bool:

    nodes: list[Any] = k8s.CoreV1Api(api).list_node().items
    ready = [
        n
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
    ]
    return len(ready) >= NODE_COUNT


def _storage_classes() -> list[dict[str, Any]]:
    def storage_class(name: str, expandable: bool, default: bool) -> dict[str, Any]:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "annotations": annotations},
            "provisioner": PROVISIONER_NAME,
            "reclaimPolicy": "Delete",
            # Immediate: PVCs bind without waiting for a Pod (the provisioner does not
            # need to know the node, and kwok nodes have no topology).
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": expandable,
        }

    # One class serves both ReadWriteOnce and ReadWriteMany (the fake provisioner accepts
    # any access mode); the second exists to test classes that cannot expand.
    return [
        storage_class(STORAGE_CLASS, expandable=True, default=True),
        storage_class(FIXED_STORAGE_CLASS, expandable=False, default=False),
    ]


def _setup_objects(api: Any) -> None:

    core = k8s.CoreV1Api(api)
    storage = k8s.StorageV1Api(api)
    for sc in _storage_classes():
        _create(storage.create_storage_class, sc)
    _create(core.create_namespace, {"metadata": {"name": SANDBOX_NAMESPACE}})
    _create(
        core.create_namespaced_config_map,
        SANDBOX_NAMESPACE,
        {
            "metadata": {"name": SANDBOX_CONFIGMAP, "namespace": SANDBOX_NAMESPACE},
            "data": {"allowed-label-domains": ",".join(ALLOWED_LABEL_DOMAINS)},
        },
    )


# ---------------------------------------------------------------------------------------
# Component command lines


def _etcd_dir() -> Path:
    # Per repository, so two checkouts on one machine do not share (or delete) data.
    key = str(REPO_DIR) if INSTANCE == 0 else f"{REPO_DIR}:{INSTANCE}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return SHM_DIR / f"context-service-{digest}" / "etcd"


def _etcd_args(bins: dict[str, Path], data_dir: Path) -> list[str]:
    client_url = f"http://{HOST}:{ETCD_CLIENT_PORT}"
    peer_url = f"http://{HOST}:{ETCD_PEER_PORT}"
    return [
        str(bins["etcd"]),
        "--name=testenv",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=testenv={peer_url}",
        "--initial-cluster-state=new",
        # Test data in tmpfs: durability buys nothing and fsync costs a lot.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def _apiserver_args(bins: dict[str, Path]) -> list[str]:
    pki = STATE_DIR / "pki"
    return [
        str(bins["kube-apiserver"]),
        f"--etcd-servers=http://{HOST}:{ETCD_CLIENT_PORT}",
        f"--bind-address={HOST}",
        f"--advertise-address={HOST}",
        f"--secure-port={APISERVER_PORT}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--cert-dir={STATE_DIR / 'apiserver-certs'}",
        f"--token-auth-file={STATE_DIR / 'tokens.csv'}",
        # Client certificates signed by our CA are accepted too (e.g. for test users).
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # No kubelets or real endpoints: do not publish this process as the endpoint of
        # the 'kubernetes' Service (its address would be advertised to nothing anyway).
        "--endpoint-reconciler-type=none",
        # The default admission plugins stay on (ServiceAccount, DefaultStorageClass,
        # PersistentVolumeClaimResize, StorageObjectInUseProtection, ...), except
        # TaintNodesByCondition: it puts a not-ready NoSchedule taint on every new Node,
        # which only the node-lifecycle controller removes, and we do not run that one.
        "--disable-admission-plugins=TaintNodesByCondition",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]


# kube-controller-manager controllers we run, and why:
#  - garbage-collector: ownerReference cascades (claim -> Sandbox -> Pod/PVC/Service).
#  - namespace: deletes a namespace's contents, so throwaway test namespaces go away.
#  - persistentvolume-binder: binds PVCs to the PVs our fake provisioner creates.
#  - serviceaccount: creates the 'default' ServiceAccount in every namespace; the
#    ServiceAccount admission plugin rejects Pods whose ServiceAccount does not exist.
#  - pvc-protection / pv-protection: StorageObjectInUseProtection admission puts
#    finalizers on PVCs and PVs that only these controllers remove; without them deleted
#    PVCs (and so namespaces) would hang forever.
# Not run: the service-account token controller (no legacy token Secrets are needed; Pods
# never really start), node-lifecycle (kwok keeps nodes Ready), replication/deployment
# controllers (nothing here uses them).
KCM_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "persistentvolume-binder-controller",
    "serviceaccount-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
)


def _controller_manager_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
    kubeconfig = kubeconfigs["kube-controller-manager"]
    # No --authentication/authorization-kubeconfig: only /healthz is used, which is always
    # allowed, and delegated authentication would want a front-proxy CA we do not have.
    return [
        str(bins["kube-controller-manager"]),
        f"--kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={CONTROLLER_MANAGER_PORT}",
        f"--cert-dir={STATE_DIR / 'controller-manager-certs'}",
        f"--controllers={','.join(KCM_CONTROLLERS)}",
        "--leader-elect=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # The default client limit (20 QPS) would make a burst of 200 PVCs take a minute:
        # binding one claim costs the PV binder about five writes.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--profiling=false",
        "--v=1",
    ]


def _scheduler_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
    kubeconfig = kubeconfigs["kube-scheduler"]
    return [
        str(bins["kube-scheduler"]),
        f"--kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={SCHEDULER_PORT}",
        f"--cert-dir={STATE_DIR / 'scheduler-certs'}",
        "--leader-elect=false",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--profiling=false",
        "--v=1",
    ]


# kwok 0.8 run standalone has no stages built in: the same set kwokctl uses ("fast":
# nodes become Ready at once and keep a Lease; Pods become Ready/complete/deleted at once)
# is read from the kwok module source and passed with --config.
KWOK_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)


def _kwok_config() -> Path:
    """The kwok config file: the Stages above, copied once into the cache dir."""
    path = build.cache_dir() / "kwok" / f"stages-{build.KWOK_VERSION}-fast.yaml"
    if path.exists():
        return path
    source = build.module_dir("sigs.k8s.io/kwok", build.KWOK_VERSION)
    # Only Stages: a KwokConfiguration document in the file would replace kwok's defaulted
    # options wholesale (kwok 0.8 then fails on zero parallelism), so options are flags.
    docs = [yaml.safe_load((source / rel).read_text()) for rel in KWOK_STAGE_FILES]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump_all(docs))
    tmp.replace(path)
    return path


def _kwok_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
    # No --server-address / --node-port: kwok's kubelet-like server stays off.
    return [
        str(bins["kwok"]),
        f"--config={_kwok_config()}",
        f"--kubeconfig={kubeconfigs['kwok']}",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
        # Used only for a node without its own spec.podCIDR / addresses.
        f"--cidr={POD_CIDR.replace('.0.0/16', '.0.0/24')}",
        f"--node-ip={NODE_IP_PREFIX}1",
        "--node-lease-duration-seconds=40",
    ]


def _sandbox_controller(
    bins: dict[str, Path], kubeconfigs: dict[str, Path]
) -> tuple[list[str], dict[str, str]]:
    config_file = STATE_DIR / "sandbox-config" / "allowed-label-domains"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(",".join(ALLOWED_LABEL_DOMAINS) + "\n")
    args = [
        str(bins["agent-sandbox-controller"]),
        "--extensions",
        "--enable-webhook=false",
        "--leader-elect=false",
        f"--metrics-bind-address={HOST}:{SANDBOX_METRICS_PORT}",
        f"--health-probe-bind-address={HOST}:{SANDBOX_HEALTH_PORT}",
    ]
    env = {
        "KUBECONFIG": str(kubeconfigs["agent-sandbox-controller"]),
        build.SANDBOX_CONFIG_ENV: str(config_file),
    }
    return args, env


def _provisioner_args(kubeconfigs: dict[str, Path]) -> tuple[list[str], dict[str, str]]:
    # A module of this checkout (it runs in the state directory): it imports the kubernetes
    # client and the kernel's quantity parser, never Django.
    args = [
        sys.executable,
        "-m",
        "testenv.provisioner",
        f"--kubeconfig={kubeconfigs['provisioner']}",
        f"--provisioner={PROVISIONER_NAME}",
        f"--ready-file={STATE_DIR / 'provisioner.ready'}",
    ]
    return args, {"PYTHONPATH": str(REPO_DIR)}


# ---------------------------------------------------------------------------------------
# Public operations


def running_state() -> ClusterState | None:
    """The state of a cluster from this repo that is running and healthy, else None."""
    state = ClusterState.load()
    if state is None:
        return None
    for name in COMPONENTS:
        pid, exe = state.pids.get(name), state.exes.get(name)
        if pid is None or exe is None or not _proc_exe_matches(pid, exe):
            return None
    if not _healthy(f"{SERVER_URL}/readyz", verify=True, token=state.admin_token):
        return None
    return state


def status() -> dict[str, str]:
    """Component -> 'running (pid N)' / 'stopped' for the recorded cluster."""
    state = ClusterState.load()
    result = {}
    for name in COMPONENTS:
        if state and name in state.pids and _proc_exe_matches(state.pids[name], state.exes[name]):
            result[name] = f"running (pid {state.pids[name]})"
        else:
            result[name] = "stopped"
    return result


def _stop_state(state: ClusterState) -> None:
    for name in reversed(COMPONENTS):
        if name in state.pids:
            _stop_pid(state.pids[name], state.exes[name], name)
    etcd_root = Path(state.etcd_dir).parent
    if etcd_root.parent == SHM_DIR and etcd_root.name.startswith("context-service-"):
        shutil.rmtree(etcd_root, ignore_errors=True)


def down() -> bool:
    """Stop the processes ``up`` started (only those) and remove the etcd data.

    Returns True when there was something to stop.
    """
    with _lock():
        state = ClusterState.load()
        if state is None:
            return False
        _stop_state(state)
        STATE_FILE.unlink(missing_ok=True)
        (STATE_DIR / "provisioner.ready").unlink(missing_ok=True)
        return True


def up() -> tuple[ClusterState, bool]:
    """Reuse a healthy cluster from this repo, or build what is missing and start one.

    Returns the state and whether this call started it.
    """
    with _lock():
        state = running_state()
        if state is not None:
            return state, False
        stale = ClusterState.load()
        if stale is not None:
            # A half-dead cluster from earlier: stop whatever of it still runs.
            say("found a stopped or unhealthy cluster from earlier; cleaning it up")
            _stop_state(stale)
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
    _check_ports()
    started = time.monotonic()
    deadline = started + _start_timeout()
    for stale in ("provisioner.ready",):
        (STATE_DIR / stale).unlink(missing_ok=True)
    admin_token = secrets.token_urlsafe(32)
    etcd_dir = _etcd_dir()
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
        proc = _spawn(name, args, env)
        state.pids[name] = proc.pid
        # The program that identifies the process: the script for the Python provisioner.
        state.exes[name] = args[1] if args[0] == sys.executable else args[0]
        state.save()  # after every start, so a failed ``up`` can still be cleaned up

    try:
        _write_pki(STATE_DIR / "pki")
        kubeconfigs = _write_auth(admin_token)
        launch("etcd", _etcd_args(bins, etcd_dir))
        # Prepare files that need the module cache while etcd starts.
        _crds_file()
        _kwok_config()
        _wait(
            "etcd",
            lambda: _healthy(f"http://{HOST}:{ETCD_CLIENT_PORT}/health"),
            deadline,
            state.pids,
        )
        launch("kube-apiserver", _apiserver_args(bins))
        _wait(
            "kube-apiserver /readyz",
            lambda: _healthy(f"{SERVER_URL}/readyz", verify=True, token=admin_token),
            deadline,
            state.pids,
        )
        launch("kube-scheduler", _scheduler_args(bins, kubeconfigs))
        launch("provisioner", *_provisioner_args(kubeconfigs))
        with api_client() as api:
            crd_names = _apply_crds(api)
            _setup_objects(api)
            _create_nodes(api)
            launch("kwok", _kwok_args(bins, kubeconfigs))
            # Both the agent-sandbox controller's informers and the garbage collector need
            # the sandbox kinds to exist when they start: the garbage collector discovers
            # new resource types only every 30 s, and until then it would not cascade
            # deletions through Sandboxes and SandboxClaims.
            _wait(
                "CRDs Established", lambda: _crds_established(api, crd_names), deadline, state.pids
            )
            launch("kube-controller-manager", _controller_manager_args(bins, kubeconfigs))
            args, env = _sandbox_controller(bins, kubeconfigs)
            launch("agent-sandbox-controller", args, env)
            _wait("kwok nodes Ready", lambda: _nodes_ready(api), deadline, state.pids)
        checks: list[tuple[str, Callable[[], bool]]] = [
            (
                "kube-controller-manager /healthz",
                lambda: _healthy(f"https://{HOST}:{CONTROLLER_MANAGER_PORT}/healthz"),
            ),
            (
                "kube-scheduler /healthz",
                lambda: _healthy(f"https://{HOST}:{SCHEDULER_PORT}/healthz"),
            ),
            (
                "agent-sandbox-controller /readyz",
                lambda: _healthy(f"http://{HOST}:{SANDBOX_HEALTH_PORT}/readyz"),
            ),
            ("provisioner", lambda: (STATE_DIR / "provisioner.ready").exists()),
        ]
        for what, check in checks:
            _wait(what, check, deadline, state.pids)
    except BaseException:
        say(f"starting the cluster failed; stopping what was started (logs: {LOG_DIR})")
        _stop_state(state)
        STATE_FILE.unlink(missing_ok=True)
        raise
    state.startup_seconds = round(time.monotonic() - started, 2)
    state.save()
    say(f"cluster up in {state.startup_seconds:.1f}s; KUBECONFIG={KUBECONFIG}")
    return state


# ---------------------------------------------------------------------------------------
# Python API for tests


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


Kubeconfig = Path | str | None


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
    if not _port_free(BARE_APISERVER_PORT):
        raise ClusterError(f"port {BARE_APISERVER_PORT} on {HOST} is in use")
    bins = build.ensure_built()
    args = [
        arg
        for arg in _apiserver_args(bins)
        if not arg.startswith(("--secure-port=", "--cert-dir="))
    ] + [
        f"--secure-port={BARE_APISERVER_PORT}",
        f"--cert-dir={STATE_DIR / 'bare-apiserver-certs'}",
        f"--etcd-prefix=/bare-{secrets.token_hex(4)}",
    ]
    proc = _spawn("bare-apiserver", args)
    url = f"https://{HOST}:{BARE_APISERVER_PORT}"
    try:
        _wait(
            "the bare API server",
            lambda: _healthy(f"{url}/readyz", verify=True, token=state.admin_token),
            time.monotonic() + _start_timeout(),
            {"bare-apiserver": proc.pid},
        )
        config = yaml.safe_load(KUBECONFIG.read_text())
        config["clusters"][0]["cluster"]["server"] = url
        path = STATE_DIR / "bare.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        yield path
    finally:
        _stop_pid(proc.pid, args[0], "bare-apiserver")
        proc.wait()


def _api_for(kubeconfig: Kubeconfig) -> Any:
    return api_client(Path(kubeconfig) if kubeconfig is not None else KUBECONFIG)


def create_namespace(
    name: str | None = None, *, kubeconfig: Kubeconfig = None, prefix: str = "test"
) -> str:
    """Create namespace ``name`` (or ``<prefix>-<random>``); an existing one is fine.

    ``kubeconfig`` defaults to this repo's test cluster. Returns the name.
    """

    name = name or f"{prefix}-{secrets.token_hex(4)}"
    body = {"metadata": {"name": name, "labels": {"context.rossoctl.io/testenv": "true"}}}
    with _api_for(kubeconfig) as api:
        _create(k8s.CoreV1Api(api).create_namespace, body)
    return name


def delete_namespace(name: str, *, kubeconfig: Kubeconfig = None, wait: float = 0.0) -> None:
    """Delete a namespace; with ``wait`` > 0, wait up to that many seconds until it is gone.

    The namespace controller deletes its contents (kwok finishes Pod deletion at once).
    """

    with _api_for(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                core.read_namespace(name)
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise
            time.sleep(0.1)
        if wait > 0:
            raise TimeoutError(f"namespace {name} was still there {wait:g} s after its deletion")


# Long enough for the namespace controller to delete a test's Sandboxes, claims, PVCs and
# Pods (kwok ends Pods at once); far shorter than a test's own timeout.
CONTENT_DELETE_WAIT = 60.0
# What a test's namespace holds that the service watches or makes (with Pods and PVCs).
CUSTOM_CONTENT = (
    (SANDBOX_GROUP, "v1beta1", "sandboxes"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxclaims"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxwarmpools"),
    (EXTENSIONS_GROUP, "v1beta1", "sandboxtemplates"),
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("batch", "v1", "jobs"),
)


def namespace_content(
    name: str, *, kubeconfig: Kubeconfig = None, delete: bool = False
) -> list[str]:
    """ "kind/name" of every object of the kinds above still in the namespace; with
    ``delete``, each kind's objects are deleted first (at once: no grace period)."""
    left: list[str] = []
    immediately = k8s.V1DeleteOptions(grace_period_seconds=0, propagation_policy="Background")
    with _api_for(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        custom = k8s.CustomObjectsApi(api)
        # Claims and Sandboxes before their Pods and PVCs: what owns goes first.
        for group, version, plural in CUSTOM_CONTENT:
            if delete:
                custom.delete_collection_namespaced_custom_object(
                    group, version, name, plural, body=immediately
                )
            listed: dict[str, Any] = custom.list_namespaced_custom_object(  # type: ignore[assignment]
                group, version, name, plural
            )
            left += [f"{plural}/{item['metadata']['name']}" for item in listed["items"]]
        if delete:
            core.delete_collection_namespaced_pod(name, body=immediately)
            core.delete_collection_namespaced_persistent_volume_claim(name, body=immediately)
        for plural, items in (
            ("pods", core.list_namespaced_pod(name).items),
            ("persistentvolumeclaims", core.list_namespaced_persistent_volume_claim(name).items),
        ):
            left += [f"{plural}/{item.metadata.name if item.metadata else '?'}" for item in items]
    return left


@contextlib.contextmanager
def throwaway_namespace(prefix: str = "test", *, kubeconfig: Kubeconfig = None) -> Iterator[str]:
    """A uniquely named namespace for the ``with`` block, deleted after it; everything the
    service watches or makes there is deleted at once too, and the block ends once that is
    gone (so that none of it is still being deleted, watched and recorded while the next
    test runs). Left to the namespace controller, the content would take about ten seconds:
    it waits five before it starts, and again between passes; the empty namespace it
    removes some seconds later, which nothing watches."""
    name = create_namespace(kubeconfig=kubeconfig, prefix=prefix)
    try:
        yield name
    finally:
        # Terminating first: nothing new can be made there (a reconcile still running would
        # make again what is deleted), then the content, at once.
        delete_namespace(name, kubeconfig=kubeconfig)
        deadline = time.monotonic() + CONTENT_DELETE_WAIT
        left = namespace_content(name, kubeconfig=kubeconfig, delete=True)
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"namespace {name} still holds {', '.join(left[:5])} "
                    f"{CONTENT_DELETE_WAIT:g} s after its deletion"
                )
            time.sleep(0.1)
            left = namespace_content(name, kubeconfig=kubeconfig)


DEMO_NAMESPACE = "serverless-harness"


def seed_demo(kubeconfig: Kubeconfig = None, namespace: str = DEMO_NAMESPACE) -> None:
    """The service's default namespace with a demo SandboxTemplate and a warm pool of 2.

    Idempotent: existing objects are left as they are.
    """

    template = demo_template("demo")
    pool = {
        "apiVersion": f"{EXTENSIONS_GROUP}/v1beta1",
        "kind": "SandboxWarmPool",
        "metadata": {"name": "demo"},
        "spec": {"replicas": 2, "sandboxTemplateRef": {"name": "demo"}},
    }
    with _api_for(kubeconfig) as api:
        _create(k8s.CoreV1Api(api).create_namespace, {"metadata": {"name": namespace}})
        custom = k8s.CustomObjectsApi(api)
        for plural, body in (("sandboxtemplates", template), ("sandboxwarmpools", pool)):
            _create(
                custom.create_namespaced_custom_object,
                EXTENSIONS_GROUP,
                "v1beta1",
                namespace,
                plural,
                body,
            )


def demo_template(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A minimal SandboxTemplate (busybox; kwok never pulls the image), hardened as a
    profile's own warm pool is (objects.hardening.harden): the service refuses to hand out claims
    of an unhardened template, and the demo pool is the first one a newcomer tries."""
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]
    }
    harden(pod_spec, frozenset())
    return {
        "apiVersion": f"{EXTENSIONS_GROUP}/v1beta1",
        "kind": "SandboxTemplate",
        "metadata": {"name": name},
        "spec": {
            "podTemplate": {
                "metadata": {"labels": copy.deepcopy(labels or {"app": "demo-sandbox"})},
                "spec": pod_spec,
            },
            # No CNI here anyway; Unmanaged keeps the template free of a NetworkPolicy.
            "networkPolicyManagement": "Unmanaged",
        },
    }

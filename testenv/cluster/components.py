"""The command line of each process: etcd, kube-apiserver, kube-controller-manager (the few
controllers that are needed), kube-scheduler, kwok with its stages, the agent-sandbox
controller and the fake volume provisioner.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import yaml

from testenv import build
from testenv.cluster.instance import (
    ALLOWED_LABEL_DOMAINS,
    APISERVER_PORT,
    CONTROLLER_MANAGER_PORT,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    HOST,
    INSTANCE,
    NODE_ANNOTATION,
    NODE_IP_PREFIX,
    POD_CIDR,
    PROVISIONER_NAME,
    REPO_DIR,
    SANDBOX_HEALTH_PORT,
    SANDBOX_METRICS_PORT,
    SCHEDULER_PORT,
    SERVICE_ACCOUNT_ISSUER,
    SERVICE_CIDR,
    SHM_DIR,
    STATE_DIR,
)


def etcd_data_dir() -> Path:
    # Per repository, so two checkouts on one machine do not share (or delete) data.
    key = str(REPO_DIR) if INSTANCE == 0 else f"{REPO_DIR}:{INSTANCE}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return SHM_DIR / f"context-service-{digest}" / "etcd"


def etcd_args(bins: dict[str, Path], data_dir: Path) -> list[str]:
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


def apiserver_args(bins: dict[str, Path]) -> list[str]:
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


def controller_manager_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
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


def scheduler_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
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


def kwok_config() -> Path:
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


def kwok_args(bins: dict[str, Path], kubeconfigs: dict[str, Path]) -> list[str]:
    # No --server-address / --node-port: kwok's kubelet-like server stays off.
    return [
        str(bins["kwok"]),
        f"--config={kwok_config()}",
        f"--kubeconfig={kubeconfigs['kwok']}",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
        # Used only for a node without its own spec.podCIDR / addresses.
        f"--cidr={POD_CIDR.replace('.0.0/16', '.0.0/24')}",
        f"--node-ip={NODE_IP_PREFIX}1",
        "--node-lease-duration-seconds=40",
    ]


def sandbox_controller_args(
    bins: dict[str, Path], kubeconfigs: dict[str, Path]
) -> tuple[list[str], dict[str, str]]:
    config_file = STATE_DIR / "sandbox-config" / "allowed-label-domains"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(",".join(ALLOWED_LABEL_DOMAINS) + "\n")
    args = [
        str(bins["agent-sandbox-controller"]),
        "--extensions",
        # v0.5's conversion webhook (v1alpha1 ↔ v1beta1) is on by default; v1.0 removed both
        # and refuses the flag.
        *(["--enable-webhook=false"] if build.agent_sandbox_before_v1() else []),
        "--leader-elect=false",
        f"--metrics-bind-address={HOST}:{SANDBOX_METRICS_PORT}",
        f"--health-probe-bind-address={HOST}:{SANDBOX_HEALTH_PORT}",
    ]
    env = {
        "KUBECONFIG": str(kubeconfigs["agent-sandbox-controller"]),
        build.SANDBOX_CONFIG_ENV: str(config_file),
    }
    return args, env


def provisioner_args(kubeconfigs: dict[str, Path]) -> tuple[list[str], dict[str, str]]:
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

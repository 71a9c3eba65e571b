"""The one module that knows Kubernetes object shapes: names, labels, manifests.

Names, labels and annotations are the v1 contract (``v1-api.md``): objects an earlier
Go deployment left in a cluster must be recognised, so none of them may change.
Everything else in the service deals in allocations; this module turns an allocation's
desired state into plain manifest dicts and reads observed state back out of objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]

# --- API coordinates -------------------------------------------------------------------------

SANDBOX_GROUP = "agents.x-k8s.io"
EXTENSIONS_GROUP = "extensions.agents.x-k8s.io"
AGENT_SANDBOX_VERSION = "v1beta1"


@dataclass(frozen=True)
class CustomKind:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


SANDBOX = CustomKind(SANDBOX_GROUP, AGENT_SANDBOX_VERSION, "sandboxes", "Sandbox")
SANDBOX_TEMPLATE = CustomKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxtemplates", "SandboxTemplate"
)
SANDBOX_WARM_POOL = CustomKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxwarmpools", "SandboxWarmPool"
)
SANDBOX_CLAIM = CustomKind(EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxclaims", "SandboxClaim")
EXTENSION_KINDS = (SANDBOX_TEMPLATE, SANDBOX_WARM_POOL, SANDBOX_CLAIM)

# --- Labels and annotations (the v1 contract) ---------------------------------------------------

LABEL_DOMAIN = "context.rossoctl.io"
POOL_LABEL = f"{LABEL_DOMAIN}/pool"
REPLICAS_KEY = f"{LABEL_DOMAIN}/replicas"
READ_ONLY_ANNOTATION = f"{LABEL_DOMAIN}/workspace-read-only"
CLAIM_ANNOTATION = f"{LABEL_DOMAIN}/workspace-claim"
CONTEXT_NAME_LABEL = f"{LABEL_DOMAIN}/name"
CONTEXT_TYPE_LABEL = f"{LABEL_DOMAIN}/type"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "context-service"

MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
# Claimed warm-pool Pods only receive labels in allow-listed domains, so they carry the
# pool label but not managed-by: Pods are found by the pool label alone.
POOLED_POD_SELECTOR = POOL_LABEL

WORKSPACE_VOLUME = "workspace"
WORKSPACE_MOUNT_PATH = "/workspace"
SANDBOX_CONTAINER = "sandbox"
BUILTIN_COMMAND = ["/bin/sh", "-c", "mkdir -p /workspace && exec sleep infinity"]


def pool_selector(pool: str) -> str:
    """The selector callers route work with (``sandboxSelector`` in the v1 response)."""
    return f"{POOL_LABEL}={pool}"


def managed_pool_selector(pool: str) -> str:
    """Objects this service created for one allocation: both labels must match."""
    return f"{POOL_LABEL}={pool},{MANAGED_SELECTOR}"


def pool_labels(pool: str) -> dict[str, str]:
    return {POOL_LABEL: pool, MANAGED_BY_LABEL: MANAGED_BY}


# --- Names --------------------------------------------------------------------------------------


def sandbox_name(pool: str, index: int) -> str:
    return f"sandbox-{pool}-{index}"


def dedicated_pvc_name(pool: str, index: int) -> str:
    return f"{pool}-workspace-{index}"


def shared_pvc_name(pool: str) -> str:
    return f"{pool}-workspace"


def claim_name(pool: str, index: int) -> str:
    return f"claim-{pool}-{index}"


def context_pvc_name(name: str) -> str:
    return f"context-{name}"


# --- Desired state ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Runtime:
    """What runs in each direct Sandbox: the built-in runtime or a profile's blueprint."""

    image: str
    command: Sequence[str] = tuple(BUILTIN_COMMAND)
    args: Sequence[str] = ()
    env: Sequence[Mapping[str, Any]] = ()
    resources: Mapping[str, Any] = field(
        default_factory=lambda: {
            "requests": {"memory": "64Mi", "cpu": "50m"},
            "limits": {"memory": "256Mi"},
        }
    )
    service_account: str | None = None


@dataclass(frozen=True)
class PoolSpec:
    """The desired state of one allocation, as this module needs it."""

    name: str
    namespace: str
    replicas: int
    strategy: str  # "dedicated" | "shared" | "existing" | "warmpool"
    size: str = ""
    access_mode: str = ""
    storage_class: str | None = None
    claim_name: str | None = None
    read_only: bool = False
    warm_pool: str | None = None


def pvc_manifest(spec: PoolSpec, name: str) -> Manifest:
    body: Manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "labels": {**pool_labels(spec.name), REPLICAS_KEY: str(spec.replicas)},
        },
        "spec": {
            "accessModes": [spec.access_mode],
            "resources": {"requests": {"storage": spec.size}},
        },
    }
    if spec.storage_class:
        body["spec"]["storageClassName"] = spec.storage_class
    return body


def workspace_claim_for(spec: PoolSpec, index: int) -> str:
    """Which PVC Sandbox ``index`` mounts."""
    if spec.strategy == "dedicated":
        return dedicated_pvc_name(spec.name, index)
    if spec.strategy == "shared":
        return shared_pvc_name(spec.name)
    if spec.strategy == "existing" and spec.claim_name:
        return spec.claim_name
    raise ValueError(f"strategy {spec.strategy!r} has no workspace claim")


def managed_pvc_names(spec: PoolSpec) -> list[str]:
    if spec.strategy == "dedicated":
        return [dedicated_pvc_name(spec.name, i) for i in range(spec.replicas)]
    if spec.strategy == "shared":
        return [shared_pvc_name(spec.name)]
    return []


def sandbox_manifest(spec: PoolSpec, index: int, runtime: Runtime) -> Manifest:
    labels = pool_labels(spec.name)
    claim = workspace_claim_for(spec, index)
    annotations = {
        REPLICAS_KEY: str(spec.replicas),
        READ_ONLY_ANNOTATION: "true" if spec.read_only else "false",
    }
    if spec.strategy == "existing" and spec.claim_name:
        annotations[CLAIM_ANNOTATION] = spec.claim_name
    container: Manifest = {
        "name": SANDBOX_CONTAINER,
        "image": runtime.image,
        "command": list(runtime.command),
        "workingDir": WORKSPACE_MOUNT_PATH,
        "volumeMounts": [
            {
                "name": WORKSPACE_VOLUME,
                "mountPath": WORKSPACE_MOUNT_PATH,
                "readOnly": spec.read_only,
            }
        ],
        "resources": dict(runtime.resources),
    }
    if runtime.args:
        container["args"] = list(runtime.args)
    if runtime.env:
        container["env"] = [dict(item) for item in runtime.env]
    pod_spec: Manifest = {
        "containers": [container],
        "volumes": [
            {
                "name": WORKSPACE_VOLUME,
                "persistentVolumeClaim": {"claimName": claim, "readOnly": spec.read_only},
            }
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {POOL_LABEL: spec.name}},
            }
        ],
    }
    if runtime.service_account:
        pod_spec["serviceAccountName"] = runtime.service_account
    return {
        "apiVersion": SANDBOX.api_version,
        "kind": SANDBOX.kind,
        "metadata": {
            "name": sandbox_name(spec.name, index),
            "namespace": spec.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"podTemplate": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}},
    }


def claim_manifest(spec: PoolSpec, index: int) -> Manifest:
    assert spec.warm_pool, "warm-pool allocations name their pool"
    return {
        "apiVersion": SANDBOX_CLAIM.api_version,
        "kind": SANDBOX_CLAIM.kind,
        "metadata": {
            "name": claim_name(spec.name, index),
            "namespace": spec.namespace,
            "labels": pool_labels(spec.name),
        },
        "spec": {
            "warmPoolRef": {"name": spec.warm_pool},
            # Only the pool label: keys outside the controller's allow-listed domains make
            # the claim fail with InvalidMetadata.
            "additionalPodMetadata": {"labels": {POOL_LABEL: spec.name}},
        },
    }


def context_pvc_manifest(
    *,
    name: str,
    namespace: str,
    context_type: str,
    size: str,
    access_mode: str,
    storage_class: str | None,
) -> Manifest:
    body: Manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": context_pvc_name(name),
            "namespace": namespace,
            "labels": {
                MANAGED_BY_LABEL: MANAGED_BY,
                CONTEXT_NAME_LABEL: name,
                CONTEXT_TYPE_LABEL: context_type,
            },
        },
        "spec": {"accessModes": [access_mode], "resources": {"requests": {"storage": size}}},
    }
    if storage_class:
        body["spec"]["storageClassName"] = storage_class
    return body


# --- Observed state -----------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return item
    return None


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    ready = condition(pod, "Ready")
    return bool(
        ready is not None
        and ready.get("status") == "True"
        and (pod.get("metadata") or {}).get("deletionTimestamp") is None
    )


def claim_is_ready(claim: Mapping[str, Any]) -> bool:
    """Ready condition True and a Sandbox named in status (agent-sandbox rule of thumb 1)."""
    ready = condition(claim, "Ready")
    sandbox = ((claim.get("status") or {}).get("sandbox") or {}).get("name")
    return bool(ready is not None and ready.get("status") == "True" and sandbox)


# Reasons after which no retry helps (agent-sandbox.md, rule of thumb 2).
TERMINAL_REASONS = frozenset(
    {
        "InvalidMetadata",
        "EnvVarsInjectionRejected",
        "VolumeClaimTemplatesError",
        "ClaimExpired",
        "SandboxExpired",
        "PodFailed",
        "PodSucceeded",
        "MultiplePods",
    }
)


def terminal_failure(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when the object's Ready condition is False for a terminal reason."""
    ready = condition(obj, "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    reason = str(ready.get("reason") or "")
    if reason in TERMINAL_REASONS:
        return reason, str(ready.get("message") or reason)
    return None


def pvc_is_bound(pvc: Mapping[str, Any]) -> bool:
    return (pvc.get("status") or {}).get("phase") == "Bound"


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def is_managed_for(obj: Mapping[str, Any], pool: str) -> bool:
    """True when ``obj`` carries both of our labels for this allocation."""
    labels = labels_of(obj)
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(POOL_LABEL) == pool

"""The one module that knows Kubernetes object shapes: names, labels, manifests.

Names, labels and annotations are the v1 contract (``v1-api.md``): objects an earlier
Go deployment left in a cluster must be recognised, so none of them may change.
Everything else in the service deals in allocations; this module turns an allocation's
desired state into plain manifest dicts and reads observed state back out of objects.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from contextsvc.quantity import parse_quantity

Manifest = dict[str, Any]
AnyObject = TypeVar("AnyObject", bound=Mapping[str, Any])

# --- API coordinates -------------------------------------------------------------------------

SANDBOX_GROUP = "agents.x-k8s.io"
EXTENSIONS_GROUP = "extensions.agents.x-k8s.io"
AGENT_SANDBOX_VERSION = "v1beta1"


@dataclass(frozen=True)
class ApiKind:
    """Where a kind lives in the API (group "" is the core group)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


PVC = ApiKind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
# Read for what the PV controller says of a PVC that stays Pending (volume_problem).
EVENT = ApiKind("", "v1", "events", "Event")
POD = ApiKind("", "v1", "pods", "Pod")
NETWORK_POLICY = ApiKind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
JOB = ApiKind("batch", "v1", "jobs", "Job")
RUNTIME_CLASS = ApiKind("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", namespaced=False)
STORAGE_CLASS = ApiKind("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False)
SANDBOX = ApiKind(SANDBOX_GROUP, AGENT_SANDBOX_VERSION, "sandboxes", "Sandbox")
SANDBOX_TEMPLATE = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxtemplates", "SandboxTemplate"
)
SANDBOX_WARM_POOL = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxwarmpools", "SandboxWarmPool"
)
SANDBOX_CLAIM = ApiKind(EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxclaims", "SandboxClaim")
# A warm pool's scale subresource (what RBAC grants as sandboxwarmpools/scale).
SANDBOX_WARM_POOL_SCALE = ApiKind(
    EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION, "sandboxwarmpools/scale", "Scale"
)
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
ARTIFACTS_VOLUME = "artifacts"
ARTIFACTS_MOUNT_PATH = "/artifacts"
# Past an allocation's expiry the service releases it; the Sandboxes stop by themselves
# this much later if the service could not (agent-sandbox's shutdownTime, Retain).
EXPIRY_BACKSTOP = timedelta(minutes=10)
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


def sandbox_index(pool: str, name: str) -> int | None:
    """The replica index in a Sandbox name that :func:`sandbox_name` made, else None."""
    prefix = f"sandbox-{pool}-"
    rest = name.removeprefix(prefix)
    return int(rest) if name.startswith(prefix) and rest.isdigit() and rest.isascii() else None


def dedicated_pvc_name(pool: str, index: int) -> str:
    return f"{pool}-workspace-{index}"


def shared_pvc_name(pool: str) -> str:
    return f"{pool}-workspace"


def claim_name(pool: str, index: int) -> str:
    return f"claim-{pool}-{index}"


def context_pvc_name(name: str) -> str:
    return f"context-{name}"


def artifacts_context_name(pool: str) -> str:
    """The named context an allocation's retained artifacts become."""
    return f"{pool}-artifacts"


def artifacts_pvc_name(pool: str) -> str:
    # Named as the context it may become, so that the context's PVC is this one.
    return context_pvc_name(artifacts_context_name(pool))


# --- Desired state ------------------------------------------------------------------------------


DEFAULT_RESOURCES: Mapping[str, Any] = {
    "requests": {"memory": "64Mi", "cpu": "50m"},
    "limits": {"memory": "256Mi"},
}
SANDBOX_UID = 10001
TMP_VOLUME = "tmp"
# The Pod's own /tmp, an emptyDir: scratch space inside the sandbox, not the host's /tmp.
TMP_PATH = "/tmp"  # noqa: S108


class Relaxation:
    """Hardened defaults a profile may switch off, explicitly and visibly."""

    RUN_AS_ROOT = "run-as-root"
    WRITABLE_ROOT_FILESYSTEM = "writable-root-filesystem"
    PRIVILEGE_ESCALATION = "privilege-escalation"
    CAPABILITIES = "keep-capabilities"
    SERVICE_ACCOUNT_TOKEN = "service-account-token"  # noqa: S105 - a name, not a secret
    # Volumes outside Pod Security "restricted"'s list (nfs, iscsi, …).
    ANY_VOLUME_TYPE = "any-volume-type"
    # No default requests and limits for containers that set none.
    UNBOUNDED_RESOURCES = "unbounded-resources"
    ALL = (
        RUN_AS_ROOT,
        WRITABLE_ROOT_FILESYSTEM,
        PRIVILEGE_ESCALATION,
        CAPABILITIES,
        SERVICE_ACCOUNT_TOKEN,
        ANY_VOLUME_TYPE,
        UNBOUNDED_RESOURCES,
    )


@dataclass(frozen=True)
class Blueprint:
    """What runs in each direct Sandbox, before the workspace is injected: the built-in
    runtime, a built-in profile, or a copy of a SandboxTemplate's pod template."""

    pod_spec: Mapping[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    volume_claim_templates: Sequence[Mapping[str, Any]] = ()
    relaxations: frozenset[str] = frozenset()
    runtime_class: str | None = None
    # Network rules in the profile form ({"cidr"|"namespace", "ports", "protocol"}).
    ingress: Sequence[Mapping[str, Any]] = ()
    egress: Sequence[Mapping[str, Any]] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "podSpec": copy.deepcopy(dict(self.pod_spec)),
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "volumeClaimTemplates": copy.deepcopy(list(self.volume_claim_templates)),
            "relaxations": sorted(self.relaxations),
            "runtimeClass": self.runtime_class,
            "ingress": copy.deepcopy(list(self.ingress)),
            "egress": copy.deepcopy(list(self.egress)),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Blueprint:
        return cls(
            pod_spec=copy.deepcopy(dict(data["podSpec"])),
            labels=dict(data.get("labels") or {}),
            annotations=dict(data.get("annotations") or {}),
            volume_claim_templates=copy.deepcopy(list(data.get("volumeClaimTemplates") or [])),
            relaxations=frozenset(data.get("relaxations") or ()),
            runtime_class=data.get("runtimeClass"),
            ingress=copy.deepcopy(list(data.get("ingress") or [])),
            egress=copy.deepcopy(list(data.get("egress") or [])),
        )


def builtin_blueprint(
    *,
    image: str,
    service_account: str | None = None,
    command: Sequence[str] = tuple(BUILTIN_COMMAND),
    args: Sequence[str] = (),
    env: Sequence[Mapping[str, Any]] = (),
    resources: Mapping[str, Any] = DEFAULT_RESOURCES,
    volumes: Sequence[Mapping[str, Any]] = (),
    volume_mounts: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    relaxations: frozenset[str] = frozenset(),
    runtime_class: str | None = None,
    ingress: Sequence[Mapping[str, Any]] = (),
    egress: Sequence[Mapping[str, Any]] = (),
) -> Blueprint:
    """The v1 built-in runtime (one container named ``sandbox``), or a built-in profile."""
    container: Manifest = {
        "name": SANDBOX_CONTAINER,
        "image": image,
        "command": list(command),
        "workingDir": WORKSPACE_MOUNT_PATH,
        "resources": copy.deepcopy(dict(resources)),
    }
    if args:
        container["args"] = list(args)
    if env:
        container["env"] = [dict(item) for item in env]
    if volume_mounts:
        container["volumeMounts"] = [dict(item) for item in volume_mounts]
    pod_spec: Manifest = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = [dict(item) for item in volumes]
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    return Blueprint(
        pod_spec=pod_spec,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        relaxations=relaxations,
        runtime_class=runtime_class,
        ingress=ingress,
        egress=egress,
    )


def template_blueprint(
    template: Mapping[str, Any],
    *,
    relaxations: frozenset[str] = frozenset(),
    runtime_class: str | None = None,
    ingress: Sequence[Mapping[str, Any]] = (),
    egress: Sequence[Mapping[str, Any]] = (),
) -> Blueprint:
    """Copy a SandboxTemplate's blueprint (pod template and volume claim templates).

    The template's own ``networkPolicy`` is not copied: a direct allocation's traffic is
    governed by the NetworkPolicy Context Service creates for it from the profile."""
    spec = template.get("spec") or {}
    pod_template = spec.get("podTemplate") or {}
    metadata = pod_template.get("metadata") or {}
    pod_spec = copy.deepcopy(pod_template.get("spec") or {})
    return Blueprint(
        pod_spec=pod_spec,
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        volume_claim_templates=copy.deepcopy(list(spec.get("volumeClaimTemplates") or [])),
        relaxations=relaxations,
        runtime_class=runtime_class or pod_spec.get("runtimeClassName"),
        ingress=ingress,
        egress=egress,
    )


def _reserved_label(key: str) -> bool:
    return key == MANAGED_BY_LABEL or key.split("/", 1)[0] == LABEL_DOMAIN


def _reserved_mount(path: object) -> str | None:
    """What of ours a mount at ``path`` would cover: "workspace", "artifacts" or None."""
    text = str(path or "").rstrip("/")
    for reserved, what in (
        (WORKSPACE_MOUNT_PATH, "workspace"),
        (ARTIFACTS_MOUNT_PATH, "artifacts"),
    ):
        if text == reserved or text.startswith(reserved + "/"):
            return what
    return None


# Which part of a pod a problem is about: profiles report it under the field that sets it.
PART_LABELS, PART_VOLUMES, PART_MOUNTS, PART_POD = "labels", "volumes", "mounts", "pod"
Problem = tuple[str, str]  # (part, message)


def blueprint_problems(blueprint: Blueprint) -> list[Problem]:
    """Why a blueprint may not be used: the workspace and the pool labels are ours. (What
    it may not do to the node is ``podsecurity``'s table.)"""
    problems: list[Problem] = []
    for key in blueprint.labels:
        if _reserved_label(key):
            problems.append(
                (
                    PART_LABELS,
                    f'pod label "{key}" is set by Context Service and cannot be overridden',
                )
            )
    spec = blueprint.pod_spec
    containers = list(spec.get("containers") or [])
    if not containers:
        problems.append((PART_POD, "the pod template has no containers"))
    for volume in spec.get("volumes") or []:
        if volume.get("name") in (WORKSPACE_VOLUME, ARTIFACTS_VOLUME, TMP_VOLUME):
            problems.append(
                (PART_VOLUMES, f'volume "{volume.get("name")}" is reserved for Context Service')
            )
    for claim in blueprint.volume_claim_templates:
        if (claim.get("metadata") or {}).get("name") == WORKSPACE_VOLUME:
            problems.append(
                (PART_VOLUMES, f'volume claim template "{WORKSPACE_VOLUME}" is reserved')
            )
    for container in containers + list(spec.get("initContainers") or []):
        for mount in container.get("volumeMounts") or []:
            covered = _reserved_mount(mount.get("mountPath"))
            if covered is not None:
                goes = "goes" if covered == "workspace" else "go"
                problems.append(
                    (
                        PART_MOUNTS,
                        f'container "{container.get("name")}" mounts "{mount.get("name")}" at '
                        f"{mount.get('mountPath')}, where the allocation's {covered} {goes}",
                    )
                )
    return problems


def default_resources(container: Manifest) -> None:
    """Fill what a container leaves out with the built-in runtime's requests and limits,
    in place: a sandbox without a memory limit can take its node's memory. A limit is
    never set below the container's own request, nor a request above its own limit."""
    resources: Manifest = container.setdefault("resources", {})
    requests: Manifest = resources.setdefault("requests", {})
    limits: Manifest = resources.setdefault("limits", {})
    for key, default in DEFAULT_RESOURCES["requests"].items():
        if key not in requests:
            limit = limits.get(key)
            requests[key] = (
                limit
                if limit is not None and parse_quantity(limit) < parse_quantity(default)
                else default
            )
    for key, default in DEFAULT_RESOURCES["limits"].items():
        if key not in limits:
            request = requests.get(key)
            limits[key] = (
                request
                if request is not None and parse_quantity(request) > parse_quantity(default)
                else default
            )


def harden(pod_spec: Manifest, relaxations: frozenset[str]) -> None:
    """Apply the hardened defaults (seed 002) in place, except those explicitly relaxed."""
    root = Relaxation.RUN_AS_ROOT in relaxations
    pod_security: Manifest = dict(pod_spec.get("securityContext") or {})
    pod_security["seccompProfile"] = {"type": "RuntimeDefault"}
    if not root:
        pod_security.update(
            runAsNonRoot=True, runAsUser=SANDBOX_UID, runAsGroup=SANDBOX_UID, fsGroup=SANDBOX_UID
        )
    pod_spec["securityContext"] = pod_security
    pod_spec["automountServiceAccountToken"] = Relaxation.SERVICE_ACCOUNT_TOKEN in relaxations
    read_only_root = Relaxation.WRITABLE_ROOT_FILESYSTEM not in relaxations
    for container in list(pod_spec.get("containers") or []) + list(
        pod_spec.get("initContainers") or []
    ):
        if Relaxation.UNBOUNDED_RESOURCES not in relaxations:
            default_resources(container)
        security: Manifest = dict(container.get("securityContext") or {})
        security["allowPrivilegeEscalation"] = Relaxation.PRIVILEGE_ESCALATION in relaxations
        security["readOnlyRootFilesystem"] = read_only_root
        if Relaxation.CAPABILITIES not in relaxations:
            security["capabilities"] = {"drop": ["ALL"]}
        if not root:
            security.update(runAsNonRoot=True, runAsUser=SANDBOX_UID, runAsGroup=SANDBOX_UID)
        else:
            for key in ("runAsNonRoot", "runAsUser", "runAsGroup"):
                security.pop(key, None)
        container["securityContext"] = security
        if read_only_root and not any(
            m.get("mountPath") == TMP_PATH for m in container.get("volumeMounts") or []
        ):
            # A read-only root still needs somewhere to write scratch files.
            container.setdefault("volumeMounts", []).append(
                {"name": TMP_VOLUME, "mountPath": TMP_PATH}
            )
    if read_only_root:
        pod_spec.setdefault("volumes", []).append({"name": TMP_VOLUME, "emptyDir": {}})


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
    # Lifecycle: Sandboxes without Pods while suspended; stopped by the controller at
    # shutdown_time (RFC 3339) if the service has not released them by then.
    suspended: bool = False
    shutdown_time: str | None = None
    artifacts: ArtifactsSpec | None = None


@dataclass(frozen=True)
class ArtifactsSpec:
    size: str
    access_mode: str
    storage_class: str | None = None


def expiry_backstop(expires_at: datetime) -> str:
    return (expires_at + EXPIRY_BACKSTOP).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def artifacts_pvc_manifest(spec: PoolSpec) -> Manifest:
    """The allocation's artifacts PVC: owned by the pool (its label) until a retaining
    release makes it a named context (``artifacts_retain_patch``)."""
    assert spec.artifacts is not None
    body: Manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": artifacts_pvc_name(spec.name),
            "namespace": spec.namespace,
            "labels": pool_labels(spec.name),
        },
        "spec": {
            "accessModes": [spec.artifacts.access_mode],
            "resources": {"requests": {"storage": spec.artifacts.size}},
        },
    }
    if spec.artifacts.storage_class:
        body["spec"]["storageClassName"] = spec.artifacts.storage_class
    return body


def artifacts_retain_patch(pool: str) -> Manifest:
    """Hand the artifacts PVC from the pool to a named context of type artifacts: no longer
    the pool's (a release leaves it), now a context's (docs/api.md)."""
    return {
        "metadata": {
            "labels": {
                POOL_LABEL: None,
                CONTEXT_NAME_LABEL: artifacts_context_name(pool),
                CONTEXT_TYPE_LABEL: "artifacts",
            }
        }
    }


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


def sandbox_manifest(spec: PoolSpec, index: int, blueprint: Blueprint) -> Manifest:
    """Sandbox ``index``: the blueprint with the workspace, the pool labels, the topology
    spread and the hardened defaults injected."""
    labels = pool_labels(spec.name)
    annotations = {
        REPLICAS_KEY: str(spec.replicas),
        READ_ONLY_ANNOTATION: "true" if spec.read_only else "false",
    }
    if spec.strategy == "existing" and spec.claim_name:
        annotations[CLAIM_ANNOTATION] = spec.claim_name
    pod_spec: Manifest = copy.deepcopy(dict(blueprint.pod_spec))
    workspace_mount = {
        "name": WORKSPACE_VOLUME,
        "mountPath": WORKSPACE_MOUNT_PATH,
        "readOnly": spec.read_only,
    }
    ours = [dict(workspace_mount)]
    volumes: list[Manifest] = [
        {
            "name": WORKSPACE_VOLUME,
            "persistentVolumeClaim": {
                "claimName": workspace_claim_for(spec, index),
                "readOnly": spec.read_only,
            },
        }
    ]
    if spec.artifacts is not None:
        ours.append({"name": ARTIFACTS_VOLUME, "mountPath": ARTIFACTS_MOUNT_PATH})
        volumes.append(
            {
                "name": ARTIFACTS_VOLUME,
                "persistentVolumeClaim": {"claimName": artifacts_pvc_name(spec.name)},
            }
        )
    for container in pod_spec.get("containers") or []:
        container["volumeMounts"] = [*ours, *(container.get("volumeMounts") or [])]
    pod_spec["volumes"] = [*volumes, *(pod_spec.get("volumes") or [])]
    pod_spec["topologySpreadConstraints"] = [
        *(pod_spec.get("topologySpreadConstraints") or []),
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {POOL_LABEL: spec.name}},
        },
    ]
    if blueprint.runtime_class:
        pod_spec["runtimeClassName"] = blueprint.runtime_class
    harden(pod_spec, blueprint.relaxations)
    pod_metadata: Manifest = {"labels": {**blueprint.labels, **labels}}
    if blueprint.annotations:
        pod_metadata["annotations"] = dict(blueprint.annotations)
    sandbox_spec: Manifest = {"podTemplate": {"metadata": pod_metadata, "spec": pod_spec}}
    sandbox_spec.update(sandbox_lifecycle(spec))
    if blueprint.volume_claim_templates:
        sandbox_spec["volumeClaimTemplates"] = copy.deepcopy(list(blueprint.volume_claim_templates))
    return {
        "apiVersion": SANDBOX.api_version,
        "kind": SANDBOX.kind,
        "metadata": {
            "name": sandbox_name(spec.name, index),
            "namespace": spec.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": sandbox_spec,
    }


def sandbox_lifecycle(spec: PoolSpec) -> Manifest:
    """The Sandbox spec fields the allocation's lifecycle sets (absent: the defaults)."""
    fields: Manifest = {}
    if spec.suspended:
        fields["operatingMode"] = "Suspended"
    if spec.shutdown_time:
        fields["shutdownTime"] = spec.shutdown_time
        fields["shutdownPolicy"] = "Retain"
    return fields


def operating_mode(sandbox: Mapping[str, Any]) -> str:
    return str((sandbox.get("spec") or {}).get("operatingMode") or "Running")


def shutdown_policy(sandbox: Mapping[str, Any]) -> str:
    # The CRD defaults it: a Sandbox made without one reads back with Retain.
    return str((sandbox.get("spec") or {}).get("shutdownPolicy") or "Retain")


def sandbox_drift(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> Manifest | None:
    """A merge patch bringing an existing Sandbox's lifecycle (operating mode, shutdown
    time) and its replicas annotation to what the allocation wants now; None when they
    already are. (Suspend, resume, expiry and scale change nothing else of a Sandbox.)"""
    have, want = existing.get("spec") or {}, desired.get("spec") or {}
    spec_patch: Manifest = {}
    if operating_mode(existing) != operating_mode(desired):
        spec_patch["operatingMode"] = operating_mode(desired)
    if have.get("shutdownTime") != want.get("shutdownTime"):
        spec_patch["shutdownTime"] = want.get("shutdownTime")  # None removes it
    # Compared as the API server defaults it: against the Retain it fills in, "none
    # wanted" is no drift (it was patched on every reconcile, a write each time).
    if shutdown_policy(existing) != shutdown_policy(desired):
        spec_patch["shutdownPolicy"] = shutdown_policy(desired)
    patch: Manifest = {}
    if spec_patch:
        patch["spec"] = spec_patch
    replicas = annotations_of(desired).get(REPLICAS_KEY)
    if annotations_of(existing).get(REPLICAS_KEY) != replicas:
        patch["metadata"] = {"annotations": {REPLICAS_KEY: replicas}}
    return patch or None


def network_policy_name(pool: str) -> str:
    return f"{pool}-sandboxes"


def _peer_rule(rule: Mapping[str, Any], direction: str) -> Manifest:
    if "cidr" in rule:
        peer: Manifest = {"ipBlock": {"cidr": rule["cidr"]}}
    else:
        peer = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": rule["namespace"]}}
        }
    body: Manifest = {direction: [peer]}
    if rule.get("ports"):
        protocol = rule.get("protocol", "TCP")
        body["ports"] = [{"protocol": protocol, "port": port} for port in rule["ports"]]
    return body


DNS_EGRESS: Manifest = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


def blueprint_network_rules(blueprint: Blueprint) -> tuple[list[Manifest], list[Manifest]]:
    """(ingress, egress) NetworkPolicy rules from a profile's rules, DNS out first."""
    return (
        [_peer_rule(rule, "from") for rule in blueprint.ingress],
        [DNS_EGRESS, *(_peer_rule(rule, "to") for rule in blueprint.egress)],
    )


def network_policy_manifest(
    spec: PoolSpec, *, ingress: Sequence[Manifest], egress: Sequence[Manifest]
) -> Manifest:
    """Default deny in and out for the allocation's Pods (direct Sandboxes, or the warm-pool
    Pods its claims took), except what the rules let through."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": network_policy_name(spec.name),
            "namespace": spec.namespace,
            "labels": pool_labels(spec.name),
        },
        "spec": {
            "podSelector": {"matchLabels": {POOL_LABEL: spec.name}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": copy.deepcopy(list(ingress)),
            "egress": copy.deepcopy(list(egress)),
        },
    }


# --- Warm pools (the pool owner's template) ---------------------------------------------------

# On a SandboxWarmPool, by its owner: restricted Pod Security rules its template may break
# (comma-separated relaxation names, as a profile lists them).
WARM_POOL_RELAXATIONS_ANNOTATION = f"{LABEL_DOMAIN}/relaxations"


def warm_pool_template_name(pool: Mapping[str, Any]) -> str | None:
    name = ((pool.get("spec") or {}).get("sandboxTemplateRef") or {}).get("name")
    return str(name) if name else None


def warm_pool_summary(pool: Mapping[str, Any]) -> dict[str, Any]:
    """What the capabilities page shows of a SandboxWarmPool."""
    spec, status = pool.get("spec") or {}, pool.get("status") or {}
    return {
        "namespace": pool["metadata"]["namespace"],
        "name": pool["metadata"]["name"],
        "template": warm_pool_template_name(pool),
        "replicas": spec.get("replicas", 1),
        "readyReplicas": status.get("readyReplicas", 0),
        # The profile whose warmPool made it (the service owns it), or "" (a platform team's).
        "profile": profile_of_warm_pool(pool),
    }


def profile_of_warm_pool(pool: Mapping[str, Any]) -> str:
    """The profile whose warmPool made the pool (the service owns it), or "" (a platform
    team's own)."""
    labels = labels_of(pool)
    return str(labels.get(PROFILE_LABEL, "")) if labels.get(MANAGED_BY_LABEL) == MANAGED_BY else ""


def warm_pool_relaxations(pool: Mapping[str, Any]) -> frozenset[str]:
    raw = annotations_of(pool).get(WARM_POOL_RELAXATIONS_ANNOTATION, "")
    return frozenset(name.strip() for name in str(raw).split(",") if name.strip())


def template_pod(template: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """(pod spec, pod annotations) of a SandboxTemplate's pod template."""
    pod_template = (template.get("spec") or {}).get("podTemplate") or {}
    return pod_template.get("spec") or {}, (pod_template.get("metadata") or {}).get(
        "annotations"
    ) or {}


def warm_pool_fence(template: Mapping[str, Any]) -> dict[str, list[Manifest]]:
    """The NetworkPolicy rules for a warm-pool allocation's Pods: the template's own
    ``networkPolicy`` rules (its owner's intent) when it has them, DNS out, and nothing else
    — even when the template leaves its Pods unmanaged."""
    policy = (template.get("spec") or {}).get("networkPolicy") or {}
    return {
        "ingress": copy.deepcopy(list(policy.get("ingress") or [])),
        "egress": [DNS_EGRESS, *copy.deepcopy(list(policy.get("egress") or []))],
    }


# --- Warm pools the service owns (a profile's warmPool) ------------------------------------

PROFILE_LABEL = f"{LABEL_DOMAIN}/profile"
SCALED_AT_ANNOTATION = f"{LABEL_DOMAIN}/scaled-at"
# The hash of the spec the service last wrote: the API server adds defaults to a stored
# spec, so comparing specs would see a change on every run.
SPEC_HASH_ANNOTATION = f"{LABEL_DOMAIN}/spec-hash"


def spec_hash(spec: Mapping[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def spec_hash_of(obj: Mapping[str, Any]) -> str:
    return str(annotations_of(obj).get(SPEC_HASH_ANNOTATION, ""))


def profile_warm_pool_name(profile: str) -> str:
    """The SandboxWarmPool (and its SandboxTemplate) a profile's warmPool makes."""
    return f"profile-{profile}"


def profile_warm_pool_selector(profile: str) -> str:
    return f"{MANAGED_SELECTOR},{PROFILE_LABEL}={profile}"


def _profile_labels(profile: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, PROFILE_LABEL: profile}


def profile_template_manifest(profile: str, namespace: str, blueprint: Blueprint) -> Manifest:
    """The profile's hardened blueprint as a SandboxTemplate. A warm Sandbox has no
    workspace PVC (claims carry none): /workspace is scratch space of its own. The
    template's network rules are the profile's, which the fence of each allocation that
    claims from it copies (warm_pool_fence); the controller makes no policy of its own."""
    pod_spec: Manifest = copy.deepcopy(dict(blueprint.pod_spec))
    for container in pod_spec.get("containers") or []:
        container["volumeMounts"] = [
            {"name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_MOUNT_PATH},
            *(container.get("volumeMounts") or []),
        ]
    scratch = {"name": WORKSPACE_VOLUME, "emptyDir": {}}
    pod_spec["volumes"] = [scratch, *(pod_spec.get("volumes") or [])]
    if blueprint.runtime_class:
        pod_spec["runtimeClassName"] = blueprint.runtime_class
    harden(pod_spec, blueprint.relaxations)
    pod_metadata: Manifest = {"labels": dict(blueprint.labels)}
    if blueprint.annotations:
        pod_metadata["annotations"] = dict(blueprint.annotations)
    ingress = [_peer_rule(rule, "from") for rule in blueprint.ingress]
    egress = [_peer_rule(rule, "to") for rule in blueprint.egress]
    spec: Manifest = {
        "podTemplate": {"metadata": pod_metadata, "spec": pod_spec},
        "networkPolicyManagement": "Unmanaged",
        "networkPolicy": {"ingress": ingress, "egress": egress},
    }
    if blueprint.volume_claim_templates:
        spec["volumeClaimTemplates"] = copy.deepcopy(list(blueprint.volume_claim_templates))
    return {
        "apiVersion": SANDBOX_TEMPLATE.api_version,
        "kind": SANDBOX_TEMPLATE.kind,
        "metadata": {
            "name": profile_warm_pool_name(profile),
            "namespace": namespace,
            "labels": _profile_labels(profile),
            "annotations": {SPEC_HASH_ANNOTATION: spec_hash(spec)},
        },
        "spec": spec,
    }


def profile_warm_pool_manifest(
    profile: str, namespace: str, replicas: int, relaxations: frozenset[str]
) -> Manifest:
    """The profile's SandboxWarmPool. Recreate: when the profile (so the template) changes,
    the controller replaces the unclaimed Sandboxes, so warm capacity is never stale."""
    annotations = {}
    if relaxations:
        # What the profile relaxes, said as a pool owner says it (the allocation-time check
        # of the pool's template accepts these, audited).
        annotations[WARM_POOL_RELAXATIONS_ANNOTATION] = ",".join(sorted(relaxations))
    return {
        "apiVersion": SANDBOX_WARM_POOL.api_version,
        "kind": SANDBOX_WARM_POOL.kind,
        "metadata": {
            "name": profile_warm_pool_name(profile),
            "namespace": namespace,
            "labels": _profile_labels(profile),
            "annotations": annotations,
        },
        "spec": profile_warm_pool_spec(profile, replicas),
    }


def profile_warm_pool_spec(profile: str, replicas: int) -> Manifest:
    return {
        "replicas": replicas,
        "sandboxTemplateRef": {"name": profile_warm_pool_name(profile)},
        "updateStrategy": {"type": "Recreate"},
    }


def warm_pool_replicas(pool: Mapping[str, Any]) -> int:
    return int((pool.get("spec") or {}).get("replicas", 1))


def warm_pool_ready(pool: Mapping[str, Any]) -> int:
    return int((pool.get("status") or {}).get("readyReplicas") or 0)


def warm_pool_scaled_at(pool: Mapping[str, Any]) -> datetime | None:
    """When the service last changed the pool's size (None: never, or not by the service)."""
    raw = annotations_of(pool).get(SCALED_AT_ANNOTATION)
    try:
        return datetime.fromisoformat(str(raw)) if raw else None
    except ValueError:
        return None


def scale_patch(replicas: int) -> Manifest:
    """The scale subresource's body (a merge patch of autoscaling/v1 Scale)."""
    return {"spec": {"replicas": replicas}}


def scaled_at_patch(at: datetime) -> Manifest:
    return {"metadata": {"annotations": {SCALED_AT_ANNOTATION: at.isoformat()}}}


def claim_warm_pool(claim: Mapping[str, Any]) -> str:
    """The SandboxWarmPool a claim draws from."""
    return str(((claim.get("spec") or {}).get("warmPoolRef") or {}).get("name") or "")


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


def context_manifest_of(context: Any) -> Manifest:
    """The PVC of a named context row (``ContextResource``)."""
    return context_pvc_manifest(
        name=context.name,
        namespace=context.namespace,
        context_type=context.type,
        size=context.size,
        access_mode=context.access_mode,
        storage_class=context.storage_class or None,
    )


def is_context_pvc(pvc: Mapping[str, Any], name: str) -> bool:
    """The PVC carries both labels of the named context ``name`` (else it is not one)."""
    labels = labels_of(pvc)
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(CONTEXT_NAME_LABEL) == name


# --- Any object's fields -------------------------------------------------------------------------
# Every read of an object's metadata or status outside this module goes through these.


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def kind_of(obj: Mapping[str, Any]) -> str:
    """The object's ``kind`` ("" when it does not say: list items of some kinds)."""
    return str(obj.get("kind") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The object's namespace ("" for a cluster-scoped one)."""
    return str(metadata_of(obj).get("namespace") or "")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return metadata_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return metadata_of(obj).get("annotations") or {}


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of any object."""
    metadata = obj["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


def resource_version_of(obj: Mapping[str, Any]) -> str:
    """metadata.resourceVersion of an object, a watch event's object or a list; one the
    server left out is an error (a watch from "" would silently start from anywhere)."""
    return str(obj["metadata"]["resourceVersion"])


def creation_time(obj: Mapping[str, Any]) -> datetime | None:
    raw = metadata_of(obj).get("creationTimestamp")
    try:
        # Python 3.11 reads the API server's "Z" as UTC.
        return datetime.fromisoformat(str(raw)) if raw else None
    except ValueError:
        return None


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """A delete was issued and the object waits for its finalizers or its dependents."""
    return bool(metadata_of(obj).get("deletionTimestamp"))


def for_display(obj: Mapping[str, Any]) -> Manifest:
    """A shallow copy of the object to show people: without ``managedFields``, which is
    the API server's bookkeeping of who set which field."""
    shown = dict(obj)
    metadata = obj.get("metadata")
    if metadata:
        shown["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return shown


def status_phase(obj: Mapping[str, Any]) -> str:
    """status.phase of a Pod or PVC ("" before the object has one)."""
    return str((obj.get("status") or {}).get("phase") or "")


def conditions_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


# --- Observed state -----------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in conditions_of(obj):
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
    return bool(ready is not None and ready.get("status") == "True" and claim_sandbox(claim))


def claim_sandbox(claim: Mapping[str, Any]) -> str:
    """The Sandbox a claim is bound to ("" while it is not)."""
    return str(((claim.get("status") or {}).get("sandbox") or {}).get("name") or "")


def claim_is_cold(claim: Mapping[str, Any]) -> bool:
    """A bound claim whose Sandbox was started for it: the controller names such a Sandbox
    after the claim, while a warm one keeps its pool's generated name."""
    return claim_sandbox(claim) == name_of(claim)


def pod_is_scheduled(pod: Mapping[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return bool(scheduled is not None and scheduled.get("status") == "True") or bool(
        (pod.get("spec") or {}).get("nodeName")
    )


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


# A not-ready Sandbox or Claim on its normal way to Ready says this (no news).
PROGRESS_REASONS = frozenset({"", "DependenciesNotReady"})


def controller_problem(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when the controller reports why the object is not ready and it is
    not the normal wait for the Pod (e.g. ``ReconcilerError``: it cannot create the Pod).
    Terminal reasons are ``terminal_failure``'s."""
    ready = condition(obj, "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    reason = str(ready.get("reason") or "")
    if reason in PROGRESS_REASONS or reason in TERMINAL_REASONS:
        return None
    return reason, str(ready.get("message") or reason)


def is_sandbox_pod(pod: Mapping[str, Any]) -> bool:
    """Made by a Sandbox (the agent-sandbox controller owns every Pod of ours). The pool
    label alone is not enough: anyone who may label a Pod could otherwise add to an
    allocation's ready count, or keep its name taken for ever."""
    return any(
        ref.get("kind") == SANDBOX.kind
        and str(ref.get("apiVersion", "")).split("/")[0] == SANDBOX.group
        for ref in metadata_of(pod).get("ownerReferences") or []
    )


def sandbox_pods_among(pods: Iterable[AnyObject]) -> list[AnyObject]:
    """The Pods a Sandbox made (``is_sandbox_pod``): the only ones that count for an
    allocation, wherever Pods are found by the pool label."""
    return [pod for pod in pods if is_sandbox_pod(pod)]


# What ``harden`` promises, read back from a live Pod (``manage.py smoke``): each check
# returns what is wrong, or None.


def _pod_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def _pod_security(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("spec") or {}).get("securityContext") or {}


def pod_may_run_as_root(pod: Mapping[str, Any]) -> str | None:
    pod_security = _pod_security(pod)
    for container in _pod_containers(pod):
        security = {**pod_security, **(container.get("securityContext") or {})}
        if security.get("runAsNonRoot") is not True or security.get("runAsUser") in (None, 0):
            return f"container {container['name']} may run as root"
    return None


def pod_root_is_writable(pod: Mapping[str, Any]) -> str | None:
    for container in _pod_containers(pod):
        if (container.get("securityContext") or {}).get("readOnlyRootFilesystem") is not True:
            return f"container {container['name']} has a writable root filesystem"
    return None


def pod_has_token(pod: Mapping[str, Any]) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("automountServiceAccountToken") is not False:
        return "the service-account token is mounted"
    for container in _pod_containers(pod):
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath", "").startswith("/var/run/secrets/kubernetes.io"):
                return f"container {container['name']} mounts a service-account token"
    return None


def pod_not_locked_down(pod: Mapping[str, Any]) -> str | None:
    seccomp = _pod_security(pod).get("seccompProfile") or {}
    if seccomp.get("type") != "RuntimeDefault":
        return "the pod's seccomp profile is not RuntimeDefault"
    for container in _pod_containers(pod):
        security = container.get("securityContext") or {}
        if security.get("allowPrivilegeEscalation") is not False:
            return f"container {container['name']} allows privilege escalation"
        if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
            return f"container {container['name']} does not drop all capabilities"
    return None


def pod_lacks_workspace(pod: Mapping[str, Any]) -> str | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if not any(
            m.get("mountPath") == WORKSPACE_MOUNT_PATH for m in container.get("volumeMounts") or []
        ):
            return f"container {container['name']} does not mount {WORKSPACE_MOUNT_PATH}"
    return None


HARDENING_CHECKS: list[tuple[str, Callable[[Mapping[str, Any]], str | None]]] = [
    ("runs as non-root", pod_may_run_as_root),
    ("read-only root filesystem", pod_root_is_writable),
    ("no service-account token", pod_has_token),
    ("seccomp, capabilities, privilege escalation locked down", pod_not_locked_down),
    ("workspace mounted at /workspace", pod_lacks_workspace),
]


def pvc_is_bound(pvc: Mapping[str, Any]) -> bool:
    return status_phase(pvc) == "Bound"


# What the PV controller last said of a managed PVC that stays Pending ("reason: message"),
# copied from its Events by the resync, so that the watcher (which does not watch Events)
# and the resync read the same problem from the PVC itself.
VOLUME_PROBLEM_ANNOTATION = f"{LABEL_DOMAIN}/volume-problem"
# The PV controller's events that say why a claim gets no volume. ExternalProvisioning is
# a Normal event, but one that lasts means nothing provisions the class.
VOLUME_PROBLEM_REASONS = frozenset(
    {"ProvisioningFailed", "FailedBinding", "ExternalProvisioning", "ClaimMisbound", "ClaimLost"}
)
PVC_EVENTS_SELECTOR = "involvedObject.kind=PersistentVolumeClaim"


def pvc_events_problem(pvc: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> str:
    """The newest event of ``events`` about this PVC (this incarnation of it: its uid) that
    says why it gets no volume, as "reason: message"; "" when none does."""
    uid = metadata_of(pvc).get("uid")
    said = [
        event
        for event in events
        if (event.get("involvedObject") or {}).get("uid") == uid
        and (event.get("reason") in VOLUME_PROBLEM_REASONS or event.get("type") == "Warning")
    ]
    if not said:
        return ""
    newest = max(
        said,
        key=lambda event: str(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or metadata_of(event).get("creationTimestamp")
            or ""
        ),
    )
    return f"{newest.get('reason') or 'Pending'}: {newest.get('message') or ''}".strip()


def volume_problem_patch(problem: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {VOLUME_PROBLEM_ANNOTATION: problem or None}}}


def volume_problem(pvc: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of a PVC still Pending that the PV controller said why of."""
    if status_phase(pvc) not in ("", "Pending") or is_deleting(pvc):
        return None
    said = str(annotations_of(pvc).get(VOLUME_PROBLEM_ANNOTATION) or "")
    if not said:
        return None
    reason, _, message = said.partition(": ")
    return reason, message or reason


def context_key(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, context name) of a named context's PVC; None for any other object."""
    name = labels_of(obj).get(CONTEXT_NAME_LABEL)
    return (object_key(obj)[0], str(name)) if name else None


@dataclass(frozen=True)
class PvcShape:
    """A PVC's request as the v1 responses show it: size, one access mode, StorageClass."""

    size: str
    access_mode: str
    storage_class: str
    access_modes: tuple[str, ...] = ()


def pvc_shape(pvc: Mapping[str, Any]) -> PvcShape:
    spec = pvc.get("spec") or {}
    size = str(((spec.get("resources") or {}).get("requests") or {}).get("storage") or "")
    modes = tuple(str(mode) for mode in spec.get("accessModes") or ())
    # ReadWriteMany, when offered, is the mode that matters: it is what sharing needs.
    mode = "ReadWriteMany" if "ReadWriteMany" in modes else (modes[0] if modes else "")
    return PvcShape(size, mode, str(spec.get("storageClassName") or ""), modes)


def pvc_capacity(pvc: Mapping[str, Any]) -> str | None:
    """The size the PVC reports it has (status.capacity), once bound."""
    capacity = ((pvc.get("status") or {}).get("capacity") or {}).get("storage")
    return str(capacity) if capacity else None


def pvc_resize_patch(size: str) -> Manifest:
    """The merge patch that asks for a bigger volume."""
    return {"spec": {"resources": {"requests": {"storage": size}}}}


def storage_class_expansion_problem(
    storage_class: Mapping[str, Any] | None, name: str, elastic: Sequence[str]
) -> str | None:
    """Why a PVC of this StorageClass cannot be grown by a resize, or None when it can.
    ``elastic`` names provisioners whose volumes grow by themselves."""
    if storage_class is None:
        return f'StorageClass "{name}" does not exist'
    provisioner = storage_class.get("provisioner")
    if provisioner in elastic:
        return f'StorageClass "{name}" ({provisioner}) grows by itself'
    if not storage_class.get("allowVolumeExpansion"):
        return f'StorageClass "{name}" does not allow volume expansion'
    return None


def is_managed_for(obj: Mapping[str, Any], pool: str) -> bool:
    """True when ``obj`` carries both of our labels for this allocation."""
    labels = labels_of(obj)
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(POOL_LABEL) == pool


# --- Agent workspaces (seed 001) ------------------------------------------------------------------

WORKSPACE_TYPE_LABEL = "rossoctl.io/type"
WORKSPACE_AGENT_LABEL = "rossoctl.io/agent"
AGENT_WORKSPACE = "agent-workspace"
CLEANUP_CONTEXT_LABEL = f"{LABEL_DOMAIN}/context"


def managed_claim(pvc: Manifest) -> tuple[str, str] | None:
    """What a PVC is to this service, for workspace.claimName: ("artifacts", context) for
    artifacts a released allocation retained, ("allocation", pool) for an allocation's own
    volume, ("agent-workspace", agent type) for an agent type's shared workspace; None for
    a PVC the service does not manage (the caller's own: the v1 contract's case)."""
    labels = (pvc.get("metadata") or {}).get("labels") or {}
    ours = labels.get(MANAGED_BY_LABEL) == MANAGED_BY
    if labels.get(WORKSPACE_TYPE_LABEL) == AGENT_WORKSPACE:
        return "agent-workspace", str(labels.get(WORKSPACE_AGENT_LABEL, ""))
    if ours and labels.get(CONTEXT_TYPE_LABEL) == "artifacts":
        return "artifacts", str(labels.get(CONTEXT_NAME_LABEL, ""))
    if ours and labels.get(POOL_LABEL):
        return "allocation", str(labels[POOL_LABEL])
    return None


def agent_workspace_pvc_name(agent_type: str) -> str:
    return f"{agent_type}-workspace"


def agent_workspace_selector(agent_type: str) -> str:
    return f"{WORKSPACE_TYPE_LABEL}={AGENT_WORKSPACE},{WORKSPACE_AGENT_LABEL}={agent_type}"


def agent_workspace_pvc_manifest(
    *, agent_type: str, namespace: str, size: str, storage_class: str | None
) -> Manifest:
    body: Manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": agent_workspace_pvc_name(agent_type),
            "namespace": namespace,
            "labels": {
                WORKSPACE_TYPE_LABEL: AGENT_WORKSPACE,
                WORKSPACE_AGENT_LABEL: agent_type,
                MANAGED_BY_LABEL: MANAGED_BY,
            },
        },
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}},
    }
    if storage_class:
        body["spec"]["storageClassName"] = storage_class
    return body


# The cleanup deletes exactly /workspace/<context id>. The id was validated when it was
# registered (no "/", no "." or "..", no leading "-") and is checked again here before use;
# ``rm -rf`` never follows symbolic links, so a link planted at or under that path removes
# the link, not what it points to.
CLEANUP_SCRIPT = """set -eu
case "$CONTEXT_ID" in
  ""|.|..|*/*|-*) echo "refusing context id '$CONTEXT_ID'" >&2; exit 2 ;;
esac
rm -rf -- "/workspace/$CONTEXT_ID"
echo "removed /workspace/$CONTEXT_ID"
"""


def cleanup_job_name(agent_type: str, context_key: int) -> str:
    return f"cs-cleanup-{agent_type[:30]}-{context_key}"


def cleanup_job_manifest(
    *, name: str, namespace: str, agent_type: str, context_id: str, image: str
) -> Manifest:
    """A one-off Job that deletes one context's directory from the agent workspace,
    hardened like every sandbox Pod."""
    labels = {
        MANAGED_BY_LABEL: MANAGED_BY,
        WORKSPACE_AGENT_LABEL: agent_type,
        CLEANUP_CONTEXT_LABEL: "cleanup",
    }
    pod_spec: Manifest = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "cleanup",
                "image": image,
                "command": ["/bin/sh", "-c", CLEANUP_SCRIPT],
                "env": [{"name": "CONTEXT_ID", "value": context_id}],
                "volumeMounts": [{"name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_MOUNT_PATH}],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "16Mi"},
                    "limits": {"memory": "64Mi"},
                },
            }
        ],
        "volumes": [
            {
                "name": WORKSPACE_VOLUME,
                "persistentVolumeClaim": {"claimName": agent_workspace_pvc_name(agent_type)},
            }
        ],
    }
    harden(pod_spec, frozenset())
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": 600,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def job_outcome(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """("succeeded" | "failed", message) once a Job has finished; None while it runs."""
    for kind, outcome in (("Complete", "succeeded"), ("Failed", "failed")):
        found = condition(job, kind)
        if found is not None and found.get("status") == "True":
            return outcome, str(found.get("message") or found.get("reason") or outcome)
    return None

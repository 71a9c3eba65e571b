"""PersistentVolumeClaims: an allocation's workspace and artifacts volumes, named contexts'
volumes and agent-type workspaces; their shape, capacity and resize, and why a Pending
one gets no volume.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextsvc.kube.objects.fields import (
    annotations_of,
    is_deleting,
    labels_of,
    metadata_of,
    object_key,
    status_phase,
)
from contextsvc.kube.objects.kinds import Manifest
from contextsvc.kube.objects.labels import (
    AGENT_WORKSPACE,
    CONTEXT_NAME_LABEL,
    CONTEXT_TYPE_LABEL,
    LABEL_DOMAIN,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    POOL_LABEL,
    REPLICAS_KEY,
    WORKSPACE_AGENT_LABEL,
    WORKSPACE_TYPE_LABEL,
    pool_labels,
)
from contextsvc.kube.objects.names import (
    agent_workspace_pvc_name,
    artifacts_context_name,
    artifacts_pvc_name,
    context_pvc_name,
    dedicated_pvc_name,
    shared_pvc_name,
)
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.quantity import parse_quantity


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
            "accessModes": [spec.workspace_access_mode],
            "resources": {"requests": {"storage": spec.workspace_size}},
        },
    }
    if spec.workspace_storage_class:
        body["spec"]["storageClassName"] = spec.workspace_storage_class
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


def requested_storage(spec: PoolSpec) -> int:
    """The bytes of storage the service requests for a pool's PVCs (its workspaces and its
    artifacts volume): what a team's storage quota counts. A caller's existing PVC and a
    warm pool's volumes are not requested by the pool, and count for nothing."""
    bodies = [pvc_manifest(spec, name) for name in managed_pvc_names(spec)]
    if spec.artifacts is not None:
        bodies.append(artifacts_pvc_manifest(spec))
    return sum(int(parse_quantity(pvc_shape(body).size)) for body in bodies)


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


def agent_workspace_key(pvc: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, agent type) of an agent workspace's PVC; None for any other object."""
    labels = labels_of(pvc)
    agent_type = labels.get(WORKSPACE_AGENT_LABEL)
    if labels.get(WORKSPACE_TYPE_LABEL) != AGENT_WORKSPACE or not agent_type:
        return None
    return object_key(pvc)[0], str(agent_type)


def is_agent_workspace_pvc(pvc: Mapping[str, Any], agent_type: str) -> bool:
    """The PVC carries the seed's labels of ``agent_type``'s workspace (what a workspace
    adopts, and what it deletes; else it is not one)."""
    return (
        agent_workspace_key(pvc) is not None
        and labels_of(pvc).get(WORKSPACE_AGENT_LABEL) == agent_type
    )


def managed_label_patch() -> Manifest:
    """Our managed-by label on a PVC the service adopted, so that its watches see it."""
    return {"metadata": {"labels": {MANAGED_BY_LABEL: MANAGED_BY}}}


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

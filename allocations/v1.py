"""The v1 HTTP contract for sandbox pools and contexts: request parsing in the contract's
validation order with its exact messages, and the exact response shapes.

Decoding problems (unknown fields, wrong JSON types) are reported first, as the Go service's
strict decoder did; then the contract's checks run in order. Where ``v1-api.md`` gives a
message it is used verbatim; the other messages are ours and are listed in docs/api.md.
"""

from __future__ import annotations

from typing import Any

from allocations.models import Allocation, ContextResource, Phase, Strategy
from allocations.requests import ContextRequest, PoolRequest
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.jsonbody import field, reject_unknown_fields
from contextsvc.core.validators import is_dns1123_label, is_dns1123_subdomain, is_pool_name
from contextsvc.kube.objects import context_pvc_name
from contextsvc.quantity import is_positive_quantity

NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"
REPLICAS_MESSAGE = "replicas must be between 1 and 100"
WARM_POOL_WITH_WORKSPACE = "warmPoolRef cannot be combined with workspace settings"
READ_ONLY_REQUIRED = "workspace.readOnly is required with workspace.claimName"
READ_ONLY_WITHOUT_CLAIM = "workspace.readOnly requires workspace.claimName"
WARM_POOL_NAME_MESSAGE = "warmPoolRef must be a lowercase Kubernetes name"
CLAIM_NAME_MESSAGE = "workspace.claimName must be a lowercase Kubernetes name"
CLAIM_WITH_STORAGE = "workspace.claimName cannot be combined with size, accessMode, or storageClass"
SIZE_REQUIRED = "workspace.size is required"
SIZE_MESSAGE = "workspace.size must be a positive Kubernetes quantity"
# The two words in this order here, and the other way round in the contexts message below:
# both are the Go service's own strings.
ACCESS_MODE_MESSAGE = "workspace.accessMode must be ReadWriteMany or ReadWriteOnce"
NAMESPACE_MESSAGE = "namespace must be a lowercase Kubernetes name"
CONTEXT_TYPE_MESSAGE = "type must be workspace, memory, knowledge, or artifacts"
BACKEND_MESSAGE = "storage.backend must be pvc"
STORAGE_SIZE_MESSAGE = "storage.size must be a positive Kubernetes quantity"
STORAGE_ACCESS_MODE_MESSAGE = "storage.accessMode must be ReadWriteOnce or ReadWriteMany"
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")

POOL_FIELDS = frozenset({"name", "replicas", "warmPoolRef", "workspace", "profile", "namespace"})
WORKSPACE_FIELDS = frozenset({"size", "accessMode", "storageClass", "claimName", "readOnly"})
CONTEXT_FIELDS = frozenset({"name", "namespace", "type", "storage"})
STORAGE_FIELDS = frozenset({"backend", "size", "accessMode", "storageClass"})
CONTEXT_TYPES = ("workspace", "memory", "knowledge", "artifacts")


def parse_pool_request(body: dict[str, Any]) -> PoolRequest:
    reject_unknown_fields(body, POOL_FIELDS)
    workspace = field(body, "workspace", dict) or {}
    reject_unknown_fields(workspace, WORKSPACE_FIELDS, "workspace.")
    name = field(body, "name", str) or ""
    replicas = field(body, "replicas", int) or 0
    warm_pool = field(body, "warmPoolRef", str) or ""
    profile = field(body, "profile", str) or ""
    namespace = field(body, "namespace", str) or ""
    size = field(workspace, "size", str, where="workspace.") or ""
    access_mode = field(workspace, "accessMode", str, where="workspace.") or ""
    storage_class = field(workspace, "storageClass", str, where="workspace.") or ""
    claim = field(workspace, "claimName", str, where="workspace.") or ""
    read_only = field(workspace, "readOnly", bool, where="workspace.")

    if not is_pool_name(name):
        raise InvalidRequest(NAME_MESSAGE)
    if not 1 <= replicas <= 100:
        raise InvalidRequest(REPLICAS_MESSAGE)
    if warm_pool:
        if not is_dns1123_subdomain(warm_pool):
            raise InvalidRequest(WARM_POOL_NAME_MESSAGE)
        if size or access_mode or storage_class or claim or read_only is not None:
            raise InvalidRequest(WARM_POOL_WITH_WORKSPACE)
        _check_namespace(namespace)
        return PoolRequest(
            name,
            replicas,
            Strategy.WARMPOOL,
            warm_pool=warm_pool,
            profile=profile,
            namespace=namespace,
        )
    if claim:
        if not is_dns1123_subdomain(claim):
            raise InvalidRequest(CLAIM_NAME_MESSAGE)
        if size or access_mode or storage_class:
            raise InvalidRequest(CLAIM_WITH_STORAGE)
        if read_only is None:
            raise InvalidRequest(READ_ONLY_REQUIRED)
        _check_namespace(namespace)
        return PoolRequest(
            name,
            replicas,
            Strategy.EXISTING,
            claim_name=claim,
            read_only=read_only,
            profile=profile,
            namespace=namespace,
        )
    if read_only is not None:
        raise InvalidRequest(READ_ONLY_WITHOUT_CLAIM)
    if not size.strip():
        raise InvalidRequest(SIZE_REQUIRED)
    if not is_positive_quantity(size):
        raise InvalidRequest(SIZE_MESSAGE)
    if access_mode not in ACCESS_MODES:
        raise InvalidRequest(ACCESS_MODE_MESSAGE)
    if storage_class and not is_dns1123_subdomain(storage_class):
        raise InvalidRequest("workspace.storageClass must be a DNS-1123 subdomain")
    _check_namespace(namespace)
    strategy = Strategy.SHARED if access_mode == "ReadWriteMany" else Strategy.DEDICATED
    return PoolRequest(
        name,
        replicas,
        strategy,
        size=size,
        access_mode=access_mode,
        storage_class=storage_class,
        profile=profile,
        namespace=namespace,
    )


def _check_namespace(namespace: str) -> None:
    if namespace and not is_dns1123_label(namespace):
        raise InvalidRequest(NAMESPACE_MESSAGE)


V1_STATUS = {
    Phase.REQUESTED: "provisioning",
    Phase.PROVISIONING: "provisioning",
    Phase.READY: "ready",
    Phase.FAILED: "failed",
}


def pool_status(allocation: Allocation) -> str:
    """``provisioning`` until every replica is ready, then ``ready`` (+ ``failed``)."""
    return V1_STATUS.get(Phase(allocation.phase), "provisioning")


def pool_response(allocation: Allocation, *, default_namespace: str) -> dict[str, Any]:
    workspace: dict[str, Any] = {
        "size": allocation.workspace_size,
        "accessMode": allocation.workspace_access_mode,
    }
    if allocation.workspace_storage_class:
        workspace["storageClass"] = allocation.workspace_storage_class
    if allocation.claim_name:
        workspace["claimName"] = allocation.claim_name
    if allocation.read_only is not None:
        workspace["readOnly"] = allocation.read_only
    body: dict[str, Any] = {
        "name": allocation.name,
        "status": pool_status(allocation),
        "replicas": allocation.replicas,
        "readyReplicas": allocation.ready_replicas,
        "sandboxSelector": allocation.selector,
        "workspace": workspace,
    }
    if allocation.warm_pool:
        body["warmPoolRef"] = allocation.warm_pool
    # Additions that break nothing: fields a Go client ignores, present only when they apply.
    if allocation.phase == Phase.FAILED or (
        allocation.message and allocation.phase in (Phase.REQUESTED, Phase.PROVISIONING)
    ):
        # Why it failed, or why it is not ready yet (what the controller, or the last
        # retry, reported).
        body["message"] = allocation.message
    if allocation.profile_name:
        body["profile"] = allocation.profile_name
    if allocation.namespace != default_namespace:
        body["namespace"] = allocation.namespace
    return body


# --- Named contexts ------------------------------------------------------------------------


def parse_context_request(body: dict[str, Any]) -> ContextRequest:
    reject_unknown_fields(body, CONTEXT_FIELDS)
    storage = field(body, "storage", dict) or {}
    reject_unknown_fields(storage, STORAGE_FIELDS, "storage.")
    name = field(body, "name", str) or ""
    namespace = field(body, "namespace", str) or ""
    context_type = field(body, "type", str) or ""
    backend = field(storage, "backend", str, where="storage.") or ""
    size = field(storage, "size", str, where="storage.") or ""
    access_mode = field(storage, "accessMode", str, where="storage.") or ""
    storage_class = field(storage, "storageClass", str, where="storage.") or ""

    if not is_pool_name(name):
        raise InvalidRequest(NAME_MESSAGE)
    if not is_dns1123_label(namespace):
        raise InvalidRequest(NAMESPACE_MESSAGE)
    if context_type not in CONTEXT_TYPES:
        raise InvalidRequest(CONTEXT_TYPE_MESSAGE)
    if backend != "pvc":
        raise InvalidRequest(BACKEND_MESSAGE)
    if not is_positive_quantity(size):
        raise InvalidRequest(STORAGE_SIZE_MESSAGE)
    if access_mode not in ACCESS_MODES:
        raise InvalidRequest(STORAGE_ACCESS_MODE_MESSAGE)
    if storage_class and not is_dns1123_subdomain(storage_class):
        raise InvalidRequest("storage.storageClass must be a DNS-1123 subdomain")
    return ContextRequest(name, namespace, context_type, size, access_mode, storage_class)


def context_response(context: ContextResource) -> dict[str, Any]:
    storage: dict[str, Any] = {
        "backend": "pvc",
        "size": context.size,
        "accessMode": context.access_mode,
    }
    if context.storage_class:
        storage["storageClass"] = context.storage_class
    body: dict[str, Any] = {
        "name": context.name,
        "namespace": context.namespace,
        "type": context.type,
        "status": "ready" if context.status == ContextResource.Status.READY else "provisioning",
        "storage": storage,
        "attachment": {"kind": "pvc", "claimName": context_pvc_name(context.name)},
    }
    if context.status == ContextResource.Status.FAILED:
        body["status"] = "failed"
        body["message"] = context.message
    return body

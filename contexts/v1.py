"""The v1 HTTP contract for named contexts: request parsing in the contract's validation
order with its exact messages, and the exact response shape (as allocations/v1.py does for
sandbox pools, whose name, namespace and access-mode messages these share)."""

from __future__ import annotations

from typing import Any

from contexts.models import ContextResource
from contexts.requests import ContextRequest
from contextsvc.core.contract import field, reject_unknown_fields
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.validators import (
    ACCESS_MODES,
    NAME_MESSAGE,
    NAMESPACE_MESSAGE,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_pool_name,
)
from contextsvc.kube.objects.names import context_pvc_name
from contextsvc.quantity import is_positive_quantity

CONTEXT_TYPE_MESSAGE = "type must be workspace, memory, knowledge, or artifacts"
BACKEND_MESSAGE = "storage.backend must be pvc"
STORAGE_SIZE_MESSAGE = "storage.size must be a positive Kubernetes quantity"
STORAGE_ACCESS_MODE_MESSAGE = "storage.accessMode must be ReadWriteOnce or ReadWriteMany"

CONTEXT_FIELDS = frozenset({"name", "namespace", "type", "storage"})
STORAGE_FIELDS = frozenset({"backend", "size", "accessMode", "storageClass"})
CONTEXT_TYPES = ("workspace", "memory", "knowledge", "artifacts")


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

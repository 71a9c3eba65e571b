"""The v1 HTTP contract for named contexts: request parsing in the contract's validation
order with its exact messages, and the exact response shape (as allocations/v1.py does for
sandbox pools, whose name, namespace and access-mode messages these share)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contexts.models import ContextResource
from contexts.requests import ContextRequest
from contextsvc.infra import openapi
from contextsvc.infra.contract import Body, Field
from contextsvc.infra.validators import (
    ACCESS_MODES,
    NAME_MESSAGE,
    NAMESPACE_MESSAGE,
)
from contextsvc.kube.objects.names import context_pvc_name
from contextsvc.quantity import MAX_LENGTH as MAX_QUANTITY_LENGTH
from contextsvc.quantity import is_positive_quantity

CONTEXT_TYPE_MESSAGE = "type must be workspace, memory, knowledge, or artifacts"
BACKEND_MESSAGE = "storage.backend must be pvc"
STORAGE_SIZE_MESSAGE = "storage.size must be a positive Kubernetes quantity"
STORAGE_ACCESS_MODE_MESSAGE = "storage.accessMode must be ReadWriteOnce or ReadWriteMany"
STORAGE_CLASS_MESSAGE = "storage.storageClass must be a DNS-1123 subdomain"
CONTEXT_TYPES = ("workspace", "memory", "knowledge", "artifacts")

# The create request, declared once: the parser below and the document (contexts/api.py).
STORAGE = Body(
    "ContextStorage",
    (
        Field("backend", required=True, schema={"enum": ["pvc"]}, message=BACKEND_MESSAGE),
        Field(
            "size",
            required=True,
            schema={"pattern": openapi.POSITIVE_QUANTITY, "maxLength": MAX_QUANTITY_LENGTH},
            message=STORAGE_SIZE_MESSAGE,
            test=is_positive_quantity,
        ),
        Field(
            "accessMode",
            required=True,
            schema={"enum": list(ACCESS_MODES)},
            message=STORAGE_ACCESS_MODE_MESSAGE,
        ),
        # "" is Go's zero value: the same as leaving the storage class out.
        Field(
            "storageClass",
            schema={"pattern": rf"^$|{openapi.DNS_SUBDOMAIN}", "maxLength": 253},
            message=STORAGE_CLASS_MESSAGE,
        ),
    ),
)
CONTEXT = Body(
    "ContextRequest",
    (
        # First: as the Go service's decoder met it, storage's type and unknown fields come
        # before the other fields' types.
        Field("storage", dict, required=True, body=STORAGE),
        Field(
            "name",
            required=True,
            schema={"pattern": openapi.POOL_NAME, "maxLength": 50},
            message=NAME_MESSAGE,
        ),
        Field(
            "namespace",
            required=True,
            schema={"pattern": openapi.DNS_LABEL, "maxLength": 63},
            message=NAMESPACE_MESSAGE,
        ),
        Field(
            "type",
            required=True,
            schema={"enum": list(CONTEXT_TYPES)},
            message=CONTEXT_TYPE_MESSAGE,
        ),
    ),
)


def parse_context_request(body: dict[str, Any]) -> ContextRequest:
    """Decoding problems first, then the contract's checks in its order (v1-api.md)."""
    values = CONTEXT.decode(body)
    storage = values["storage"]

    def checked(spec: Body, found: dict[str, Any], key: str) -> str:
        # Absent, null and "" are one to the contract: each refused with the field's message.
        value: str = spec[key].check(found[key] or "")
        return value

    name = checked(CONTEXT, values, "name")
    namespace = checked(CONTEXT, values, "namespace")
    context_type = checked(CONTEXT, values, "type")
    checked(STORAGE, storage, "backend")  # "pvc", the one backend
    size = checked(STORAGE, storage, "size")
    access_mode = checked(STORAGE, storage, "accessMode")
    storage_class = checked(STORAGE, storage, "storageClass")
    return ContextRequest(name, namespace, context_type, size, access_mode, storage_class)


@dataclass(frozen=True)
class Shown:
    """A context as an answer shows it, with the create's note when there is one (its PVC
    not created yet: the service retries)."""

    context: ContextResource
    note: str = ""


def _status(context: ContextResource) -> str:
    if context.status == ContextResource.Status.FAILED:
        return "failed"
    return "ready" if context.status == ContextResource.Status.READY else "provisioning"


def _failed(shown: Shown) -> bool:
    return shown.context.status == ContextResource.Status.FAILED


# The answer, declared once for the body and the document.
STORAGE_SHOWN = Body(
    "ContextStorageShown",
    (
        Field.out("backend", lambda context: "pvc", schema={"enum": ["pvc"]}),
        Field.out("size", lambda context: context.size),
        Field.out("accessMode", lambda context: context.access_mode),
        Field.out_when_set("storageClass", lambda context: context.storage_class),
    ),
)
ATTACHMENT = Body(
    "Attachment",
    (
        Field.out("kind", lambda context: "pvc"),
        Field.out("claimName", lambda context: context_pvc_name(context.name)),
    ),
)
CONTEXT_SHOWN = Body(
    "Context",
    (
        Field.out("name", lambda shown: shown.context.name),
        Field.out("namespace", lambda shown: shown.context.namespace),
        Field.out("type", lambda shown: shown.context.type),
        Field.out(
            "status",
            lambda shown: _status(shown.context),
            schema={"enum": ["provisioning", "ready", "failed"]},
        ),
        Field.out("storage", lambda shown: shown.context, dict, body=STORAGE_SHOWN),
        Field.out("attachment", lambda shown: shown.context, dict, body=ATTACHMENT),
        Field.out(
            "message",
            lambda shown: shown.note or shown.context.message,
            shown=lambda shown: _failed(shown) or bool(shown.note),
            help="Why it failed, or that its PVC is not created yet (the service retries)",
        ),
    ),
)
CONTEXT_LIST = Body(
    "ContextList", (Field.out("items", lambda contexts: contexts, list, body=CONTEXT_SHOWN),)
)


def context_response(context: ContextResource, *, note: str = "") -> dict[str, Any]:
    return CONTEXT_SHOWN.render(Shown(context, note))

"""The v1 endpoints: thin views that parse, call a service or selector, and render."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from allocations import selectors, services, v1
from allocations.models import Allocation
from contextsvc.core import openapi
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.contract import read_json_object
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.models import Scope
from contextsvc.core.openapi import responses

_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


# One strategy per request, as the contract has it.
SandboxPoolRequest = PolymorphicProxySerializer(
    component_name="SandboxPoolRequest",
    serializers=[variant.serializer() for variant in v1.POOL_VARIANTS],
    resource_type_field_name=None,
)


class Workspace(serializers.Serializer):
    size = serializers.CharField(help_text="Empty for a warm-pool allocation")
    accessMode = serializers.CharField(help_text="Empty for a warm-pool allocation")
    storageClass = serializers.CharField(required=False)
    claimName = serializers.CharField(required=False)
    readOnly = serializers.BooleanField(required=False)


class Artifacts(serializers.Serializer):
    size = serializers.CharField()
    accessMode = serializers.CharField()
    storageClass = serializers.CharField(required=False)
    retain = serializers.BooleanField()
    claimName = serializers.CharField(help_text="The PVC (and, once retained, the context's)")


class PoolPhase(serializers.Serializer):
    phase = serializers.ChoiceField(
        choices=[
            "accepted",
            "objectsCreated",
            "volumesBound",
            "podsScheduled",
            "claimed",
            "claimsBound",
            "ready",
        ]
    )
    at = serializers.DateTimeField(allow_null=True, help_text="When it was first seen")
    seconds = serializers.FloatField(allow_null=True, help_text="Since the request")


class ClaimOrigins(serializers.Serializer):
    warm = serializers.IntegerField(help_text="Claims that took a warm Sandbox")
    cold = serializers.IntegerField(help_text="Claims whose Sandbox was started for them")


class SandboxPool(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["provisioning", "ready", "suspended", "failed"])
    replicas = serializers.IntegerField()
    readyReplicas = serializers.IntegerField()
    sandboxSelector = serializers.CharField()
    workspace = Workspace()
    warmPoolRef = serializers.CharField(required=False)
    message = serializers.CharField(required=False, help_text="Why it failed")
    profile = serializers.CharField(required=False)
    namespace = serializers.CharField(required=False, help_text="When not the default")
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
    expiresAt = serializers.DateTimeField(required=False, help_text="When it is released")
    artifacts = Artifacts(required=False)
    phases = PoolPhase(many=True, required=False, help_text="Only with ?detail=phases")
    claims = ClaimOrigins(
        required=False, help_text="Warm-pool allocations with ?detail=phases, once bound"
    )


class SandboxPoolList(serializers.Serializer):
    items = SandboxPool(many=True)


class ContextStorage(serializers.Serializer):
    backend = serializers.ChoiceField(choices=["pvc"])
    size = serializers.RegexField(openapi.POSITIVE_QUANTITY, max_length=64)
    accessMode = serializers.ChoiceField(choices=openapi.ACCESS_MODES)
    storageClass = serializers.RegexField(
        rf"^$|{openapi.DNS_SUBDOMAIN}", required=False, allow_blank=True
    )


class ContextRequest(serializers.Serializer):
    name = serializers.RegexField(_NAME_PATTERN, max_length=50)
    namespace = serializers.RegexField(_NAME_PATTERN, max_length=63)
    type = serializers.ChoiceField(choices=v1.CONTEXT_TYPES)
    storage = ContextStorage()


class Attachment(serializers.Serializer):
    kind = serializers.CharField()
    claimName = serializers.CharField()


class Context(serializers.Serializer):
    name = serializers.CharField()
    namespace = serializers.CharField()
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["provisioning", "ready", "failed"])
    storage = ContextStorage()
    attachment = Attachment()
    message = serializers.CharField(
        required=False,
        help_text="Why it failed, or that its PVC is not created yet (the service retries)",
    )


class ContextList(serializers.Serializer):
    items = Context(many=True)


# The v1 contract's own examples (v1-api.md).
_POOL_EXAMPLE = {
    "name": "shared-review",
    "status": "provisioning",
    "replicas": 3,
    "readyReplicas": 0,
    "sandboxSelector": "context.rossoctl.io/pool=shared-review",
    "workspace": {"size": "5Gi", "accessMode": "ReadWriteMany", "storageClass": "ibm-scale-csi"},
}
POOL_EXAMPLES = [
    OpenApiExample(
        "Shared workspace",
        request_only=True,
        value={
            "name": "shared-review",
            "replicas": 3,
            "workspace": {
                "size": "5Gi",
                "accessMode": "ReadWriteMany",
                "storageClass": "ibm-scale-csi",
            },
        },
    ),
    OpenApiExample(
        "Warm pool",
        request_only=True,
        value={"name": "fast-run", "replicas": 2, "warmPoolRef": "research-agents"},
    ),
    OpenApiExample("Provisioning", response_only=True, status_codes=["201"], value=_POOL_EXAMPLE),
]
_CONTEXT_EXAMPLE = {
    "name": "research-memory",
    "namespace": "team1",
    "type": "memory",
    "status": "provisioning",
    "storage": {
        "backend": "pvc",
        "size": "5Gi",
        "accessMode": "ReadWriteMany",
        "storageClass": "ibm-scale-csi",
    },
    "attachment": {"kind": "pvc", "claimName": "context-research-memory"},
}
CONTEXT_EXAMPLES = [
    OpenApiExample(
        "Memory",
        request_only=True,
        value={
            "name": "research-memory",
            "namespace": "team1",
            "type": "memory",
            "storage": {
                "backend": "pvc",
                "size": "5Gi",
                "accessMode": "ReadWriteMany",
                "storageClass": "ibm-scale-csi",
            },
        },
    ),
    OpenApiExample("Created", response_only=True, status_codes=["201"], value=_CONTEXT_EXAMPLE),
]


def _pool(allocation: Allocation, *, phases: bool = False) -> dict[str, object]:
    return v1.pool_response(allocation, default_namespace=settings.CS_NAMESPACE, phases=phases)


def _detail(request: Request) -> bool:
    """Whether the caller asked for the readiness phases (``?detail=phases``)."""
    detail = request.query_params.get("detail")
    if detail not in (None, "phases"):
        raise InvalidRequest('detail must be "phases"')
    return detail == "phases"


DETAIL_PARAMETER = OpenApiParameter(
    "detail",
    OpenApiTypes.STR,
    enum=["phases"],
    description="v1 extension: `phases` adds each pool's readiness phases (docs/api.md)",
)


class SandboxPoolCollectionApi(ServiceAPIView):
    """Sandbox pools (allocations): create one, or list the live ones."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_list",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=["provisioning", "ready", "failed"]),
            OpenApiParameter("namespace", OpenApiTypes.STR),
            DETAIL_PARAMETER,
        ],
        responses=responses({200: SandboxPoolList}),
        description=(
            "Every live pool (v1 extension), sorted by name. With `?watch=1[&since=CURSOR]` "
            "the answer is instead a stream of JSON lines (application/x-ndjson) of pool "
            'changes, resumable from a cursor (docs/api.md, "Readiness pushed").'
        ),
    )
    def get(self, request: Request) -> Response:
        phases = _detail(request)
        allocations = selectors.allocation_list_visible(
            status=request.query_params.get("status"),
            namespace=request.query_params.get("namespace"),
        )
        return Response({"items": [_pool(allocation, phases=phases) for allocation in allocations]})

    @extend_schema(
        operation_id="sandbox_pools_create",
        request=SandboxPoolRequest,
        responses=responses({201: SandboxPool}, 409),
        examples=POOL_EXAMPLES,
        description="Allocate sandboxes with a workspace topology (the v1 contract).",
    )
    def post(self, request: Request) -> Response:
        pool_request = v1.parse_pool_request(read_json_object(request._request))
        created = services.allocation_create(request=pool_request, actor=actor_of(request.user))
        body = _pool(created.allocation)
        if created.warnings:
            body["warnings"] = list(created.warnings)
        return Response(
            body, status=201, headers={"Location": f"/v1/sandbox-pools/{created.allocation.name}"}
        )


class SandboxPoolDetailApi(ServiceAPIView):
    """One sandbox pool: read it, or release it (never a caller's PVC)."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_get",
        parameters=[DETAIL_PARAMETER],
        responses=responses({200: SandboxPool}, 404),
        description=(
            "The pool. With `?wait=N` (seconds, at most 60) the answer waits until the pool "
            "as shown here changes, or is `ready` or `failed` (docs/api.md)."
        ),
    )
    def get(self, request: Request, name: str) -> Response:
        phases = _detail(request)
        return Response(_pool(selectors.allocation_get_visible(name=name), phases=phases))

    @extend_schema(
        operation_id="sandbox_pools_update",
        request=v1.POOL_UPDATE.serializer(),
        responses=responses({200: SandboxPool}, 404, 409),
        description=(
            "v1 extension: scale (replicas: Sandboxes added or removed from the highest "
            "index) and set, extend or clear the expiry."
        ),
    )
    def patch(self, request: Request, name: str) -> Response:
        update = v1.parse_pool_update(read_json_object(request._request))
        return Response(
            _pool(
                services.allocation_update(name=name, update=update, actor=actor_of(request.user))
            )
        )

    @extend_schema(operation_id="sandbox_pools_release", responses=responses({204: None}, 404))
    def delete(self, request: Request, name: str) -> Response:
        services.allocation_release(name=name, actor=actor_of(request.user))
        return Response(status=204)


class SandboxPoolSuspendApi(ServiceAPIView):
    """v1 extension: every Sandbox to Suspended (no Pods; PVCs and the name kept)."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_suspend",
        request=None,
        responses=responses({200: SandboxPool}, 404, 409),
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(_pool(services.allocation_suspend(name=name, actor=actor_of(request.user))))


class SandboxPoolResumeApi(ServiceAPIView):
    """v1 extension: Sandboxes back to Running; ready again when their new Pods are."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_resume",
        request=None,
        responses=responses({200: SandboxPool}, 404, 409),
    )
    def post(self, request: Request, name: str) -> Response:
        return Response(_pool(services.allocation_resume(name=name, actor=actor_of(request.user))))


class ContextCreateApi(ServiceAPIView):
    """Create a named context; its PVC exists in the cluster when the 201 is returned."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="contexts_create",
        request=ContextRequest,
        responses=responses({201: Context}, 409),
        examples=CONTEXT_EXAMPLES,
        description="Create a named context; its PVC exists when the 201 is returned.",
    )
    def post(self, request: Request) -> Response:
        context_request = v1.parse_context_request(read_json_object(request._request))
        created = services.context_create(request=context_request, actor=actor_of(request.user))
        body = v1.context_response(created.context)
        if created.message:
            body["message"] = created.message
        context = created.context
        return Response(
            body,
            status=201,
            headers={"Location": f"/v1/namespaces/{context.namespace}/contexts/{context.name}"},
        )


class ContextCollectionApi(ServiceAPIView):
    """The named contexts of a namespace."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="contexts_list",
        responses=responses({200: ContextList}, 404),
    )
    def get(self, request: Request, namespace: str) -> Response:
        contexts = selectors.context_list_visible(namespace=namespace)
        return Response({"items": [v1.context_response(context) for context in contexts]})


class ContextDetailApi(ServiceAPIView):
    """One named context: read it, or delete it with its PVC."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(operation_id="contexts_get", responses=responses({200: Context}, 404))
    def get(self, request: Request, namespace: str, name: str) -> Response:
        return Response(
            v1.context_response(selectors.context_get_visible(namespace=namespace, name=name))
        )

    @extend_schema(operation_id="contexts_delete", responses=responses({204: None}, 404))
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        services.context_delete(namespace=namespace, name=name, actor=actor_of(request.user))
        return Response(status=204)

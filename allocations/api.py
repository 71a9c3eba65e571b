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
from rest_framework.request import Request
from rest_framework.response import Response

from allocations import selectors, v1
from allocations.models import Allocation
from allocations.services.create import allocation_create
from allocations.services.lifecycle import allocation_resume, allocation_suspend, allocation_update
from allocations.services.release import allocation_release
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.models import Scope
from contextsvc.core.teams import reach_of, team_id_of
from contextsvc.infra.contract import read_json_object
from contextsvc.infra.errors import InvalidRequest
from contextsvc.infra.openapi import responses

# One strategy per request, as the contract has it.
SandboxPoolRequest = PolymorphicProxySerializer(
    component_name="SandboxPoolRequest",
    serializers=[variant.serializer() for variant in v1.POOL_VARIANTS],
    resource_type_field_name=None,
)


# The responses, from the declarations that render them.
SandboxPool = v1.POOL_SHOWN.serializer()
SandboxPoolList = v1.POOL_LIST.serializer()


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


def _pool(
    allocation: Allocation, *, phases: bool = False, warnings: tuple[str, ...] = ()
) -> dict[str, object]:
    return v1.pool_response(
        allocation, default_namespace=settings.CS_NAMESPACE, phases=phases, warnings=warnings
    )


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
            reach=reach_of(request.user),
            status=request.query_params.get("status"),
            namespace=request.query_params.get("namespace"),
        )
        return Response(
            v1.POOL_LIST.render(
                [v1.Shown(allocation, settings.CS_NAMESPACE, phases) for allocation in allocations]
            )
        )

    @extend_schema(
        operation_id="sandbox_pools_create",
        request=SandboxPoolRequest,
        responses=responses({201: SandboxPool}, 409),
        examples=POOL_EXAMPLES,
        description="Allocate sandboxes with a workspace topology (the v1 contract).",
    )
    def post(self, request: Request) -> Response:
        pool_request = v1.parse_pool_request(read_json_object(request._request))
        created = allocation_create(
            request=pool_request, actor=actor_of(request.user), team_id=team_id_of(request.user)
        )
        body = _pool(created.allocation, warnings=created.warnings)
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
        allocation = selectors.allocation_get_visible(name=name, reach=reach_of(request.user))
        return Response(_pool(allocation, phases=phases))

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
                allocation_update(
                    name=name,
                    update=update,
                    actor=actor_of(request.user),
                    reach=reach_of(request.user),
                )
            )
        )

    @extend_schema(operation_id="sandbox_pools_release", responses=responses({204: None}, 404))
    def delete(self, request: Request, name: str) -> Response:
        allocation_release(name=name, actor=actor_of(request.user), reach=reach_of(request.user))
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
        allocation = allocation_suspend(
            name=name, actor=actor_of(request.user), reach=reach_of(request.user)
        )
        return Response(_pool(allocation))


class SandboxPoolResumeApi(ServiceAPIView):
    """v1 extension: Sandboxes back to Running; ready again when their new Pods are."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_resume",
        request=None,
        responses=responses({200: SandboxPool}, 404, 409),
    )
    def post(self, request: Request, name: str) -> Response:
        allocation = allocation_resume(
            name=name, actor=actor_of(request.user), reach=reach_of(request.user)
        )
        return Response(_pool(allocation))

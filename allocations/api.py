"""The v1 endpoints: thin views that parse, call a service or selector, and render."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from allocations import selectors, services, v1
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.jsonbody import read_json_object
from contextsvc.core.models import Scope

_ERROR = inline_serializer(
    "Error", {"error": serializers.CharField(), "message": serializers.CharField()}
)
_WORKSPACE = inline_serializer(
    "Workspace",
    {
        "size": serializers.CharField(),
        "accessMode": serializers.ChoiceField(choices=v1.ACCESS_MODES),
        "storageClass": serializers.CharField(required=False),
        "claimName": serializers.CharField(required=False),
        "readOnly": serializers.BooleanField(required=False),
    },
)
_POOL_REQUEST = inline_serializer(
    "SandboxPoolRequest",
    {
        "name": serializers.CharField(max_length=50),
        "replicas": serializers.IntegerField(min_value=1, max_value=100),
        "warmPoolRef": serializers.CharField(required=False),
        "workspace": _WORKSPACE,
        "profile": serializers.CharField(required=False, help_text="v1 extension"),
        "namespace": serializers.CharField(required=False, help_text="v1 extension"),
    },
)
_POOL = inline_serializer(
    "SandboxPool",
    {
        "name": serializers.CharField(),
        "status": serializers.ChoiceField(choices=["provisioning", "ready", "failed"]),
        "replicas": serializers.IntegerField(),
        "readyReplicas": serializers.IntegerField(),
        "sandboxSelector": serializers.CharField(),
        "workspace": _WORKSPACE,
        "warmPoolRef": serializers.CharField(required=False),
        "message": serializers.CharField(required=False),
        "profile": serializers.CharField(required=False),
        "namespace": serializers.CharField(required=False),
        "warnings": serializers.ListField(child=serializers.CharField(), required=False),
    },
)
_CONTEXT_STORAGE = inline_serializer(
    "ContextStorage",
    {
        "backend": serializers.ChoiceField(choices=["pvc"]),
        "size": serializers.CharField(),
        "accessMode": serializers.ChoiceField(choices=v1.ACCESS_MODES),
        "storageClass": serializers.CharField(required=False),
    },
)
_CONTEXT_REQUEST = inline_serializer(
    "ContextRequest",
    {
        "name": serializers.CharField(max_length=50),
        "namespace": serializers.CharField(),
        "type": serializers.ChoiceField(choices=v1.CONTEXT_TYPES),
        "storage": _CONTEXT_STORAGE,
    },
)
_CONTEXT = inline_serializer(
    "Context",
    {
        "name": serializers.CharField(),
        "namespace": serializers.CharField(),
        "type": serializers.CharField(),
        "status": serializers.ChoiceField(choices=["provisioning", "ready", "failed"]),
        "storage": _CONTEXT_STORAGE,
        "attachment": inline_serializer(
            "Attachment", {"kind": serializers.CharField(), "claimName": serializers.CharField()}
        ),
    },
)
_ERRORS = {400: _ERROR, 401: _ERROR, 403: _ERROR, 404: _ERROR, 409: _ERROR, 500: _ERROR}


def _pool(allocation: object) -> dict[str, object]:
    return v1.pool_response(allocation, default_namespace=settings.CS_NAMESPACE)  # type: ignore[arg-type]


class SandboxPoolCollectionApi(ServiceAPIView):
    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="sandbox_pools_list",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=["provisioning", "ready", "failed"]),
            OpenApiParameter("namespace", OpenApiTypes.STR),
        ],
        responses={200: inline_serializer("SandboxPoolList", {"items": _POOL}), **_ERRORS},
    )
    def get(self, request: Request) -> Response:
        allocations = selectors.allocation_list_visible(
            status=request.query_params.get("status"),
            namespace=request.query_params.get("namespace"),
        )
        return Response({"items": [_pool(allocation) for allocation in allocations]})

    @extend_schema(
        operation_id="sandbox_pools_create",
        request=_POOL_REQUEST,
        responses={201: _POOL, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        pool_request = v1.parse_pool_request(read_json_object(request._request))
        created = services.allocation_create(request=pool_request, actor=actor_of(request.user))
        body = _pool(created.allocation)
        if created.warnings:
            body["warnings"] = list(created.warnings)
        return Response(body, status=201)


class SandboxPoolDetailApi(ServiceAPIView):
    write_scope = Scope.ALLOCATIONS

    @extend_schema(operation_id="sandbox_pools_get", responses={200: _POOL, **_ERRORS})
    def get(self, request: Request, name: str) -> Response:
        return Response(_pool(selectors.allocation_get_visible(name=name)))

    @extend_schema(operation_id="sandbox_pools_release", responses={204: None, **_ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        services.allocation_release(name=name, actor=actor_of(request.user))
        return Response(status=204)


class ContextCreateApi(ServiceAPIView):
    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="contexts_create",
        request=_CONTEXT_REQUEST,
        responses={201: _CONTEXT, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        context_request = v1.parse_context_request(read_json_object(request._request))
        context = services.context_create(request=context_request, actor=actor_of(request.user))
        return Response(v1.context_response(context), status=201)


class ContextCollectionApi(ServiceAPIView):
    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="contexts_list",
        responses={200: inline_serializer("ContextList", {"items": _CONTEXT}), **_ERRORS},
    )
    def get(self, request: Request, namespace: str) -> Response:
        contexts = selectors.context_list_visible(namespace=namespace)
        return Response({"items": [v1.context_response(context) for context in contexts]})


class ContextDetailApi(ServiceAPIView):
    write_scope = Scope.ALLOCATIONS

    @extend_schema(operation_id="contexts_get", responses={200: _CONTEXT, **_ERRORS})
    def get(self, request: Request, namespace: str, name: str) -> Response:
        return Response(
            v1.context_response(selectors.context_get_visible(namespace=namespace, name=name))
        )

    @extend_schema(operation_id="contexts_delete", responses={204: None, **_ERRORS})
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        services.context_delete(namespace=namespace, name=name, actor=actor_of(request.user))
        return Response(status=204)

"""The v1 endpoints of named contexts: thin views that parse, call a service or selector,
and render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from contexts import selectors, services, v1
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of
from contextsvc.core.models import Scope
from contextsvc.core.teams import reach_of, team_id_of
from contextsvc.infra.contract import read_json_object
from contextsvc.infra.openapi import responses

# The answers' documents, from the declarations that render them.
Context = v1.CONTEXT_SHOWN.serializer()
ContextList = v1.CONTEXT_LIST.serializer()


# The v1 contract's own example (v1-api.md).
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


class ContextCreateApi(ServiceAPIView):
    """Create a named context; its PVC exists in the cluster when the 201 is returned."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="contexts_create",
        request=v1.CONTEXT.serializer(),
        responses=responses({201: Context}, 409),
        examples=CONTEXT_EXAMPLES,
        description="Create a named context; its PVC exists when the 201 is returned.",
    )
    def post(self, request: Request) -> Response:
        context_request = v1.parse_context_request(read_json_object(request._request))
        created = services.context_create(
            request=context_request, actor=actor_of(request.user), team_id=team_id_of(request.user)
        )
        body = v1.context_response(created.context, note=created.message)
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
        contexts = selectors.context_list_visible(namespace=namespace, reach=reach_of(request.user))
        return Response(v1.CONTEXT_LIST.render([v1.Shown(context) for context in contexts]))


class ContextDetailApi(ServiceAPIView):
    """One named context: read it, or delete it with its PVC."""

    write_scope = Scope.ALLOCATIONS

    @extend_schema(operation_id="contexts_get", responses=responses({200: Context}, 404))
    def get(self, request: Request, namespace: str, name: str) -> Response:
        context = selectors.context_get_visible(
            namespace=namespace, name=name, reach=reach_of(request.user)
        )
        return Response(v1.context_response(context))

    @extend_schema(operation_id="contexts_delete", responses=responses({204: None}, 404))
    def delete(self, request: Request, namespace: str, name: str) -> Response:
        services.context_delete(
            namespace=namespace,
            name=name,
            actor=actor_of(request.user),
            reach=reach_of(request.user),
        )
        return Response(status=204)

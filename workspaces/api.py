"""``/v1/agent-workspaces``: agent workspaces, their contexts, and usage reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of, check_agent_type, principal_scopes
from contextsvc.core.models import Scope
from contextsvc.core.teams import reach_of, team_id_of
from contextsvc.infra import openapi
from contextsvc.infra.contract import Body, Field, Query, read_json_object
from contextsvc.infra.errors import Forbidden
from contextsvc.infra.openapi import responses
from contextsvc.quantity import MAX_LENGTH as MAX_QUANTITY_LENGTH
from contextsvc.quantity import format_bytes
from workspaces import selectors, services
from workspaces.models import AgentWorkspace, WorkspaceContext

READERS = (Scope.READ, Scope.AGENT, Scope.ALLOCATIONS)
# Readers of every agent type's workspaces; an agent's token reads only its own types'.
_READS_ALL = frozenset({Scope.READ, Scope.ALLOCATIONS, Scope.ADMIN})


def _check_reader(request: Request, agent_type: str) -> None:
    """An agent-only credential reads the workspaces (and contexts: other conversations'
    ids) of the agent types it was issued for, and no others."""
    if not principal_scopes(request.user) & _READS_ALL:
        check_agent_type(request.user, agent_type)


def _may_read(request: Request, agent_type: str) -> bool:
    try:
        _check_reader(request, agent_type)
    except Forbidden:
        return False
    return True


# A PostgreSQL bigint (schemathesis found that a larger one was a 500).
MAX_BYTES = 2**63 - 1


# The workspace as every endpoint shows it: the body and its document from one declaration.
WORKSPACE = Body(
    "AgentWorkspace",
    (
        Field.out("agentType", lambda w: w.agent_type),
        Field.out("namespace", lambda w: w.namespace),
        Field.out("pvcName", lambda w: w.pvc_name),
        Field.out("status", lambda w: w.status),
        Field.out("storageClass", lambda w: w.storage_class or None, nullable=True),
        Field.out("initialSize", lambda w: w.initial_size),
        Field.out("maxSize", lambda w: w.max_size),
        Field.out("size", lambda w: format_bytes(w.requested_bytes)),
        Field.out("capacityBytes", lambda w: w.capacity_bytes, int, nullable=True),
        Field.out("usageBytes", lambda w: w.usage_bytes, int, nullable=True),
        Field.out("expansion", lambda w: w.expansion_note or None, nullable=True),
        Field.out("adopted", lambda w: w.adopted, bool),
        Field.out("message", lambda w: w.message or None, nullable=True),
    ),
)
AgentWorkspaceSerializer = WORKSPACE.serializer()


WORKSPACE_LIST = Body(
    "AgentWorkspaceList",
    (Field.out("items", lambda workspaces: workspaces, list, body=WORKSPACE),),
)


def _z(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# The ``.context.json`` of seed 001, which the agent writes into /workspace/<context id>.
CONTEXT_JSON = Body(
    "ContextJson",
    (
        Field.out("context_id", lambda c: c.context_id),
        Field.out("agent", lambda c: c.workspace.agent_type),
        Field.out("namespace", lambda c: c.workspace.namespace),
        Field.out("created_at", lambda c: _z(c.created_at)),
        Field.out("last_accessed_at", lambda c: _z(c.last_accessed_at)),
        Field.out("ttl_days", lambda c: round(c.ttl_seconds / 86400, 2), float),
        Field.out("disk_usage_bytes", lambda c: c.disk_usage_bytes, int, nullable=True),
    ),
)
WORKSPACE_CONTEXT = Body(
    "WorkspaceContext",
    (
        Field.out("contextId", lambda c: c.context_id),
        Field.out("status", lambda c: c.status),
        Field.out("path", lambda c: f"/workspace/{c.context_id}"),
        Field.out("contextJson", lambda c: c, dict, body=CONTEXT_JSON),
        Field.out("cleanup", lambda c: c.cleanup_result or None, nullable=True),
    ),
)
WORKSPACE_CONTEXT_LIST = Body(
    "WorkspaceContextList",
    (Field.out("items", lambda contexts: contexts, list, body=WORKSPACE_CONTEXT),),
)
AgentWorkspaceList = WORKSPACE_LIST.serializer()
WorkspaceContextSerializer = WORKSPACE_CONTEXT.serializer()
WorkspaceContextList = WORKSPACE_CONTEXT_LIST.serializer()


# "": the service's default size.
_SIZE = {"pattern": f"^$|{openapi.POSITIVE_QUANTITY}", "maxLength": MAX_QUANTITY_LENGTH}

# The requests, declared once for the parser and the document (the service checks the
# values, with the messages docs/api.md lists).
ENSURE = Body(
    "AgentWorkspaceRequest",
    (
        Field("agentType", required=True, schema={"pattern": openapi.DNS_LABEL, "maxLength": 54}),
        Field("namespace", required=True, schema={"pattern": openapi.DNS_LABEL, "maxLength": 63}),
        Field("initialSize", schema=_SIZE, help="At most 8Ei"),
        Field("maxSize", schema=_SIZE, help="At most 8Ei, and not smaller than initialSize"),
        # "": the service's default storage class.
        Field("storageClass", schema={"pattern": rf"^$|{openapi.DNS_SUBDOMAIN}", "maxLength": 253}),
    ),
)
TOUCH = Body(
    "ContextTouchRequest",
    (
        Field("contextId", required=True, schema={"pattern": openapi.CONTEXT_ID}),
        Field.between("diskUsageBytes", 0, MAX_BYTES),
    ),
)
FORCE = Query("force", bool, help="Delete even with live contexts")
USAGE = Body("UsageRequest", (Field.between("usedBytes", 0, MAX_BYTES, required=True),))


def workspace_json(workspace: AgentWorkspace) -> dict[str, Any]:
    return WORKSPACE.render(workspace)


def context_response(context: WorkspaceContext) -> dict[str, Any]:
    return WORKSPACE_CONTEXT.render(context)


class WorkspaceCollectionApi(ServiceAPIView):
    """Agent workspaces (one RWX PVC per agent type and namespace): list, or ensure one."""

    read_scopes = READERS
    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="agent_workspaces_list",
        parameters=[OpenApiParameter("namespace", OpenApiTypes.STR)],
        responses=responses({200: AgentWorkspaceList}),
    )
    def get(self, request: Request) -> Response:
        found = selectors.workspace_list_live(
            namespace=request.query_params.get("namespace"), reach=reach_of(request.user)
        )
        # An agent's token lists only its own agent types' workspaces.
        items = [w for w in found if _may_read(request, w.agent_type)]
        return Response(WORKSPACE_LIST.render(items))

    @extend_schema(
        operation_id="agent_workspaces_ensure",
        request=ENSURE.serializer(),
        responses=responses(
            {
                200: OpenApiResponse(AgentWorkspaceSerializer, description="It existed already"),
                201: OpenApiResponse(AgentWorkspaceSerializer, description="Created"),
            },
            409,
        ),
    )
    def post(self, request: Request) -> Response:
        body = ENSURE.decode(read_json_object(request._request))
        workspace, created = services.workspace_ensure(
            agent_type=body["agentType"] or "",
            namespace=body["namespace"] or "",
            initial_size=body["initialSize"] or "",
            max_size=body["maxSize"] or "",
            storage_class=body["storageClass"] or "",
            actor=actor_of(request.user),
            team_id=team_id_of(request.user),
        )
        return Response(workspace_json(workspace), status=201 if created else 200)


class WorkspaceDetailApi(ServiceAPIView):
    """One agent workspace: read it, or delete it (``force`` with live contexts)."""

    read_scopes = READERS
    write_scope = Scope.ALLOCATIONS

    @extend_schema(
        operation_id="agent_workspaces_get",
        responses=responses({200: AgentWorkspaceSerializer}, 403, 404),
    )
    def get(self, request: Request, namespace: str, agent_type: str) -> Response:
        _check_reader(request, agent_type)
        workspace = selectors.workspace_get(
            namespace=namespace, agent_type=agent_type, reach=reach_of(request.user)
        )
        return Response(workspace_json(workspace))

    @extend_schema(
        operation_id="agent_workspaces_delete",
        parameters=[FORCE.parameter()],
        responses=responses({204: None}, 404, 409),
    )
    def delete(self, request: Request, namespace: str, agent_type: str) -> Response:
        force = FORCE.read(request.query_params, False)
        services.workspace_delete(
            namespace=namespace,
            agent_type=agent_type,
            force=force,
            actor=actor_of(request.user),
            reach=reach_of(request.user),
        )
        return Response(status=204)


class WorkspaceContextsApi(ServiceAPIView):
    """The contexts of an agent workspace: list, or register/touch one."""

    read_scopes = READERS
    write_scope = Scope.AGENT

    @extend_schema(
        operation_id="workspace_contexts_list",
        responses=responses({200: WorkspaceContextList}, 403, 404),
    )
    def get(self, request: Request, namespace: str, agent_type: str) -> Response:
        _check_reader(request, agent_type)
        workspace = selectors.workspace_get(
            namespace=namespace, agent_type=agent_type, reach=reach_of(request.user)
        )
        return Response(WORKSPACE_CONTEXT_LIST.render(list(workspace.contexts.all())))

    @extend_schema(
        operation_id="workspace_contexts_touch",
        request=TOUCH.serializer(),
        responses=responses(
            {
                200: OpenApiResponse(WorkspaceContextSerializer, description="Touched"),
                201: OpenApiResponse(WorkspaceContextSerializer, description="Registered"),
            },
            404,
            409,
        ),
        description="Register a context id or touch it (refreshes its TTL).",
    )
    def post(self, request: Request, namespace: str, agent_type: str) -> Response:
        check_agent_type(request.user, agent_type)
        body = TOUCH.decode(read_json_object(request._request))
        context, created = services.context_touch(
            namespace=namespace,
            agent_type=agent_type,
            context_id=body["contextId"] or "",
            disk_usage_bytes=TOUCH["diskUsageBytes"].check(body["diskUsageBytes"]),
            actor=actor_of(request.user),
            reach=reach_of(request.user),
        )
        return Response(context_response(context), status=201 if created else 200)


class WorkspaceUsageApi(ServiceAPIView):
    """An agent reports its workspace usage; the service grows the PVC when needed."""

    write_scope = Scope.AGENT

    @extend_schema(
        operation_id="agent_workspaces_usage",
        request=USAGE.serializer(),
        responses=responses({200: AgentWorkspaceSerializer}, 404, 409),
    )
    def post(self, request: Request, namespace: str, agent_type: str) -> Response:
        check_agent_type(request.user, agent_type)
        body = USAGE.open(read_json_object(request._request))
        workspace = services.workspace_report_usage(
            namespace=namespace,
            agent_type=agent_type,
            used_bytes=USAGE["usedBytes"].count(body),
            actor=actor_of(request.user),
            reach=reach_of(request.user),
        )
        return Response(workspace_json(workspace))

"""The approval queue API (v1 additions). Agents submit operations with their own tokens
(scope ``agent``) and see only their own requests; deciding needs ``approver``."""

from __future__ import annotations

from uuid import UUID

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
)
from rest_framework.request import Request
from rest_framework.response import Response

from approvals import access, contract, selectors, shapes
from approvals.services import check, decisions, grants, lifecycle, runs
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of, check_agent_type, principal_scopes
from contextsvc.core.models import Scope
from contextsvc.core.teams import reach_of, team_id_of
from contextsvc.infra.contract import read_json_object
from contextsvc.infra.errors import Forbidden, InvalidRequest, NotFound
from contextsvc.infra.openapi import responses

# The answers' documents, from the declarations that render them.
Approval = shapes.APPROVAL.serializer()
ApprovalList = shapes.APPROVAL_LIST.serializer()
GrantList = shapes.GRANT_LIST.serializer()
Verdict = contract.VERDICT.serializer()
Similar = contract.SIMILAR.serializer()
Run = contract.RUN_SHOWN.serializer()


def _own_only(request: Request) -> str | None:
    return access.own_requests_only(
        actor=actor_of(request.user), scopes=principal_scopes(request.user)
    )


class ApprovalCollectionApi(ServiceAPIView):
    """Operation checks: rules decide at once, or a human decides later."""

    read_scopes = (Scope.READ, Scope.AGENT, Scope.APPROVER)
    write_scope = Scope.AGENT

    @extend_schema(
        operation_id="approvals_check",
        request=contract.CHECK.serializer(),
        responses=responses(
            {
                200: OpenApiResponse(Verdict, description="A rule decided at once"),
                202: OpenApiResponse(Approval, description="Queued for a human"),
            }
        ),
        description="Decide an operation now (200 allow/deny) or queue it for a human (202).",
    )
    def post(self, request: Request) -> Response:
        spec = contract.CHECK
        body = spec.open(read_json_object(request._request))
        operation = spec["operation"].read(body)
        if operation is None:  # absent or null: the message a wrong type gets
            raise InvalidRequest(spec["operation"].message)
        agent_type = spec["agentType"].text(body)
        check_agent_type(request.user, agent_type)
        result = check.approval_check(
            operation=operation,
            context_id=spec["contextId"].text(body),
            agent_type=agent_type,
            agent_instance=spec["agentInstance"].text(body, checked=True),
            allocation=spec["allocation"].text(body, checked=True),
            namespace=spec["namespace"].text(body, checked=True),
            # Its bounds are the service's (with the same message).
            deadline_seconds=spec["deadlineSeconds"].read(body),
            actor=actor_of(request.user),
            team_id=team_id_of(request.user),
        )
        if result.request is None:
            return Response(contract.VERDICT.render(result))
        return Response(
            shapes.approval_json(result.request),
            status=202,
            headers={"Location": f"/v1/approvals/{result.request.pk}"},
        )

    @extend_schema(
        operation_id="approvals_list",
        parameters=[
            query.parameter()
            for query in (
                contract.LIST_STATUS,
                *contract.LIST_FILTERS,
                contract.LIMIT,
                contract.OFFSET,
            )
        ],
        responses=responses({200: ApprovalList}),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        found = selectors.approval_list(
            reach=reach_of(request.user),
            status=params.get("status"),
            agent_type=params.get("agentType"),
            context_id=params.get("contextId"),
            allocation=params.get("allocation"),
            requested_by=_own_only(request),
        )
        try:
            limit = min(max(int(params.get("limit", 100)), 1), 500)
            offset = max(int(params.get("offset", 0)), 0)
        except ValueError:
            raise InvalidRequest("limit and offset must be integers") from None
        # PostgreSQL's OFFSET is a bigint: a larger one was a database error (a 500).
        contract.OFFSET.check(offset)
        page = found.select_related("grant").prefetch_related("signoffs")[offset : offset + limit]
        return Response(shapes.APPROVAL_LIST.render(shapes.Page(list(page), found.count())))


class ApprovalDetailApi(ServiceAPIView):
    """GET without ``wait``; with ``?wait=N`` the request is served by the long-poll
    consumer (approvals/consumers.py), which answers in this same shape."""

    read_scopes = (Scope.READ, Scope.AGENT, Scope.APPROVER)

    @extend_schema(
        operation_id="approvals_get",
        parameters=[contract.WAIT.parameter()],
        responses=responses({200: Approval}, 404),
    )
    def get(self, request: Request, request_id: str) -> Response:
        parsed = selectors.parse_request_id(request_id)
        found = selectors.approval_get(
            request_id=parsed, reach=reach_of(request.user), requested_by=_own_only(request)
        )
        return Response(shapes.approval_json(found))


class ApprovalDecisionApi(ServiceAPIView):
    """Approve, deny, or approve and allow similar (approvers)."""

    write_scope = Scope.APPROVER

    @extend_schema(
        operation_id="approvals_decide",
        request=contract.DECISION.serializer(),
        responses=responses({200: Approval}, 403, 404, 409),
    )
    def post(self, request: Request, request_id: str) -> Response:
        parsed = selectors.parse_request_id(request_id)
        # Another team's request is absent for this approver (its team never changes, so
        # the decision's own locked read finds the same one).
        selectors.approval_get(request_id=parsed, reach=reach_of(request.user))
        decision = contract.parse_decision(read_json_object(request._request))
        decided = decisions.approval_decide(
            request_id=parsed, actor=actor_of(request.user), **decision.arguments()
        )
        return Response(shapes.approval_json(decided))


class ApprovalCancelApi(ServiceAPIView):
    """The agent no longer needs a pending request; or an approver withdraws it."""

    write_scopes = (Scope.AGENT, Scope.APPROVER)

    @extend_schema(
        operation_id="approvals_cancel",
        request=None,
        responses=responses({200: Approval}, 403, 404, 409),
    )
    def post(self, request: Request, request_id: str) -> Response:
        parsed = selectors.parse_request_id(request_id)
        actor = actor_of(request.user)
        # Agents see only their own (the lookup 404s otherwise); one that may read every
        # request still cancels only its own.
        found = selectors.approval_get(
            request_id=parsed, reach=reach_of(request.user), requested_by=_own_only(request)
        )
        own = access.own_cancellable_only(actor=actor, scopes=principal_scopes(request.user))
        if own is not None and found.requested_by != own:
            raise Forbidden(
                f"{actor} may cancel only the requests it asked: withdrawing another's needs "
                "the approver scope"
            )
        cancelled = lifecycle.approval_cancel(request_id=parsed, actor=actor)
        return Response(shapes.approval_json(cancelled))


class ApprovalSimilarApi(ServiceAPIView):
    """What "approve and allow similar" would grant, and how much it would have matched."""

    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(
        operation_id="approvals_similar",
        parameters=[contract.SIMILAR_RULE.parameter(), contract.SIMILAR_SCOPE.parameter()],
        responses=responses({200: Similar}, 404),
    )
    def get(self, request: Request, request_id: str) -> Response:
        found = selectors.approval_get(
            request_id=selectors.parse_request_id(request_id), reach=reach_of(request.user)
        )
        similar = grants.approval_similar(
            found,
            rule=contract.SIMILAR_RULE.read(request.query_params),
            scope=contract.SIMILAR_SCOPE.read(request.query_params, "agent_type"),
        )
        return Response(contract.SIMILAR.render(similar))


class GrantCollectionApi(ServiceAPIView):
    """Rules granted by "approve and allow similar"."""

    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(
        operation_id="grants_list",
        parameters=[contract.GRANTS_ACTIVE.parameter()],
        responses=responses({200: GrantList}),
    )
    def get(self, request: Request) -> Response:
        active = contract.GRANTS_ACTIVE.read(request.query_params, False)
        return Response(
            shapes.GRANT_LIST.render(
                list(selectors.grant_list(reach=reach_of(request.user), active=active))
            )
        )


class GrantDetailApi(ServiceAPIView):
    """Revoke a grant."""

    write_scope = Scope.APPROVER

    @extend_schema(operation_id="grants_revoke", responses=responses({204: None}, 404, 409))
    def delete(self, request: Request, grant_id: int) -> Response:
        grants.grant_revoke(
            grant_id=grant_id, actor=actor_of(request.user), reach=reach_of(request.user)
        )
        return Response(status=204)


class RunCollectionApi(ServiceAPIView):
    """An agent's executor reports what it ran for an allowed operation (docs/agent-client.md)."""

    write_scope = Scope.AGENT

    @extend_schema(
        operation_id="runs_report",
        request=contract.RUN.serializer(),
        responses=responses({201: Run}, 404, 409),
        description="Once per allowed operation; the command must be the one judged.",
    )
    def post(self, request: Request) -> Response:
        spec = contract.RUN
        body = spec.open(read_json_object(request._request))
        raw_request_id = spec["requestId"].text(body)
        run = runs.run_record(
            context_id=spec["contextId"].text(body),
            request_id=selectors.parse_request_id(raw_request_id) if raw_request_id else None,
            check_id=spec["checkId"].integer(body),
            # Required, but may be empty (what ran must be what was judged).
            command=spec["command"].need(spec["command"].read(body)),
            outcome=spec["outcome"].text(body),
            exit_status=spec["exitStatus"].integer(body),
            signal=spec["signal"].integer(body),
            duration_ms=spec["durationMs"].count(body),
            stdout_bytes=spec["stdoutBytes"].count(body),
            stderr_bytes=spec["stderrBytes"].count(body),
            truncated=spec["truncated"].need(spec["truncated"].read(body)),
            # Their entries are checked by the service (with their index in the message).
            refused_effects=spec["refusedEffects"].read(body) or [],
            sandbox=spec["sandbox"].read(body) or {},
            actor=actor_of(request.user),
            team_id=team_id_of(request.user),
        )
        return Response(
            contract.run_json(run), status=201, headers={"Location": f"/v1/runs/{run.pk}"}
        )


class RunDetailApi(ServiceAPIView):
    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(operation_id="runs_get", responses=responses({200: Run}, 404))
    def get(self, request: Request, run_id: str) -> Response:
        try:
            parsed = UUID(run_id)
        except ValueError:
            raise NotFound(f'run "{run_id}" not found') from None
        run = selectors.run_get(run_id=parsed, reach=reach_of(request.user))
        return Response(contract.run_json(run))

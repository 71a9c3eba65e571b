"""The approval queue API (v1 additions). Agents submit operations with their own tokens
(scope ``agent``) and see only their own requests; deciding needs ``approver``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from approvals import access, selectors, services
from contextsvc.core import openapi
from contextsvc.core.api import ServiceAPIView
from contextsvc.core.auth import actor_of, check_agent_type, principal_scopes
from contextsvc.core.contract import (
    field,
    integer,
    read_json_object,
    reject_unknown_fields,
    text,
)
from contextsvc.core.errors import Forbidden, InvalidRequest, NotFound
from contextsvc.core.models import Scope
from contextsvc.core.openapi import responses
from rules.model import MAX_OPERATION_TEXT

CHECK_FIELDS = frozenset(
    {
        "contextId",
        "agentType",
        "agentInstance",
        "allocation",
        "namespace",
        "operation",
        "deadlineSeconds",
    }
)
DECISION_FIELDS = frozenset(
    {"decision", "reason", "scope", "expiresInSeconds", "rule", "operation", "version"}
)


# One serializer per kind of operation, so that the document says what each one needs
# (rules.model.operation_from_dict is the parser).
_NOT_BLANK = r"\S"


# The largest list offset taken (far past any real list; keeps OFFSET inside a bigint).
MAX_OFFSET = 1_000_000_000


class ShellOperation(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["shell"])
    command = serializers.CharField(
        allow_blank=True, trim_whitespace=False, max_length=MAX_OPERATION_TEXT
    )


class FileOperation(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["file"])
    action = serializers.ChoiceField(choices=["read", "write", "delete"])
    path = serializers.CharField(trim_whitespace=False, max_length=MAX_OPERATION_TEXT)


class _NetworkOperationBase(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["network"])
    direction = serializers.ChoiceField(choices=["outbound", "inbound"], required=False)


class NetworkHostOperation(_NetworkOperationBase):
    host = serializers.RegexField(_NOT_BLANK, max_length=MAX_OPERATION_TEXT)


class NetworkUrlOperation(_NetworkOperationBase):
    url = serializers.RegexField(
        r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*@)?[^/?#@:]",
        help_text="An absolute URL",
        max_length=MAX_OPERATION_TEXT,
    )
    host = serializers.RegexField(
        _NOT_BLANK,
        required=False,
        help_text="If given, the url's host",
        max_length=MAX_OPERATION_TEXT,
    )


Operation = PolymorphicProxySerializer(
    component_name="Operation",
    serializers=[ShellOperation, FileOperation, NetworkHostOperation, NetworkUrlOperation],
    resource_type_field_name=None,
)


class ApprovalCheckRequest(serializers.Serializer):
    contextId = serializers.RegexField(openapi.CONTEXT_ID)
    agentType = serializers.RegexField(openapi.DNS_LABEL)
    agentInstance = serializers.CharField(required=False)
    allocation = serializers.CharField(required=False)
    namespace = serializers.CharField(required=False)
    operation = Operation
    deadlineSeconds = serializers.IntegerField(
        required=False, min_value=1, max_value=settings.CS_APPROVAL_MAX_DEADLINE_SECONDS
    )


class Effects(serializers.Serializer):
    """What a shell command was judged to do: the executor holds it to this (Landlock).
    Absolute paths; ``D/**`` is everything below D."""

    read = serializers.ListField(child=serializers.CharField())
    write = serializers.ListField(child=serializers.CharField())
    delete = serializers.ListField(child=serializers.CharField())
    network = serializers.ListField(
        child=serializers.CharField(), help_text="Hosts; * one only known at run time"
    )
    programs = serializers.ListField(child=serializers.CharField())
    hidden = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="What the deny rules forbid reading: left out of everything granted",
    )


class Execution(serializers.Serializer):
    """How the agent's executor runs what is allowed (the profile's, when it was judged)."""

    isolation = serializers.ChoiceField(choices=["namespaces", "none"])
    runtimeClass = serializers.CharField(allow_null=True, help_text="The Pod's, e.g. gvisor")
    timeLimitSeconds = serializers.IntegerField(allow_null=True)
    memoryLimitMb = serializers.IntegerField(allow_null=True)
    workspace = serializers.CharField(help_text="The context's directory the rules judged")
    network = serializers.ChoiceField(
        choices=["pod", "none"], help_text="none: commands never get the Pod's network"
    )
    effects = Effects(required=False, help_text="A shell command's judged effects")


class Verdict(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["allow", "deny"])
    evaluation = serializers.DictField(help_text="Which rule decided each part")
    operation = serializers.DictField(help_text="The operation as judged: what may run")
    checkId = serializers.IntegerField(help_text="This decision's audit entry (for /v1/runs)")
    execution = Execution()


class Grant(serializers.Serializer):
    id = serializers.IntegerField()
    rule = serializers.CharField()
    scope = serializers.ChoiceField(choices=["context", "agent_type"])
    agentType = serializers.CharField()
    contextId = serializers.CharField(allow_null=True)
    expiresAt = serializers.DateTimeField(allow_null=True)
    createdAt = serializers.DateTimeField()
    createdBy = serializers.CharField()
    revokedAt = serializers.DateTimeField(allow_null=True)
    revokedBy = serializers.CharField(allow_null=True)


class GrantList(serializers.Serializer):
    items = Grant(many=True)


class Edit(serializers.Serializer):
    """A reviewer's version of the operation, approved instead of the one asked."""

    operation = serializers.DictField(help_text="What the agent runs instead")
    normalised = serializers.CharField()
    evaluation = serializers.DictField(help_text="The rules' judgement of the edit")
    risk = serializers.ChoiceField(choices=["low", "medium", "high"])
    riskNotes = serializers.ListField(child=serializers.CharField())
    by = serializers.CharField()
    at = serializers.DateTimeField()


class Signoff(serializers.Serializer):
    by = serializers.CharField()
    at = serializers.DateTimeField()


class Approval(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(
        choices=["pending", "approved", "denied", "expired", "cancelled"]
    )
    decision = serializers.ChoiceField(
        choices=["allow", "allow_edited", "deny"],
        allow_null=True,
        help_text="What the agent must do: allow; allow_edited (run edit.operation, not the "
        "operation asked); deny; null while pending",
    )
    contextId = serializers.CharField()
    agentType = serializers.CharField()
    agentInstance = serializers.CharField(allow_null=True)
    allocation = serializers.CharField(allow_null=True)
    operation = serializers.DictField()
    normalised = serializers.CharField()
    evaluation = serializers.DictField()
    risk = serializers.CharField()
    requestedBy = serializers.CharField()
    createdAt = serializers.DateTimeField()
    deadline = serializers.DateTimeField()
    decidedAt = serializers.DateTimeField(allow_null=True)
    decidedBy = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    grant = Grant(allow_null=True)
    execution = Execution()
    riskNotes = serializers.ListField(
        child=serializers.CharField(), help_text="What it touches in its sandbox's topology"
    )
    edit = Edit(allow_null=True)
    approvalsRequired = serializers.IntegerField(
        min_value=1, max_value=2, help_text="Two under the profile's two-person rule"
    )
    approvals = Signoff(many=True, help_text="Who approved it so far")
    escalatedAt = serializers.DateTimeField(allow_null=True)
    version = serializers.CharField(
        help_text="A digest of the operation as shown (the edit, and who made it) and the "
        "approvals so far: send it with a decision (docs/approvals.md, Versioned decisions)"
    )


class ApprovalList(serializers.Serializer):
    items = Approval(many=True)
    count = serializers.IntegerField()


class DecisionRequest(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=["approve", "deny", "approve_edited", "approve_similar"]
    )
    reason = serializers.CharField(required=False)
    scope = serializers.ChoiceField(
        choices=["context", "agent_type"], required=False, help_text="With approve_similar"
    )
    expiresInSeconds = serializers.IntegerField(required=False, min_value=1, max_value=315360000)
    rule = serializers.CharField(required=False, help_text="With approve_similar")
    operation = PolymorphicProxySerializer(
        component_name="EditedOperation",
        serializers=[ShellOperation, FileOperation, NetworkHostOperation, NetworkUrlOperation],
        resource_type_field_name=None,
        required=False,
        help_text="With approve_edited: the operation to approve instead (same kind)",
    )
    version = serializers.CharField(
        required=False,
        help_text="The request's version as the decider saw it (a decision on another "
        "version is a 409); required to approve a request a reviewer edited",
    )


class Similar(serializers.Serializer):
    rule = serializers.CharField(allow_null=True)
    scope = serializers.CharField()
    matches = serializers.IntegerField()


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
        request=ApprovalCheckRequest,
        responses=responses(
            {
                200: OpenApiResponse(Verdict, description="A rule decided at once"),
                202: OpenApiResponse(Approval, description="Queued for a human"),
            }
        ),
        description="Decide an operation now (200 allow/deny) or queue it for a human (202).",
    )
    def post(self, request: Request) -> Response:
        body = read_json_object(request._request)
        reject_unknown_fields(body, CHECK_FIELDS)
        operation = field(body, "operation", dict)
        if operation is None:  # absent or null: the message a wrong type gets
            raise InvalidRequest("operation must be an object")
        agent_type = text(body, "agentType", required=True)
        check_agent_type(request.user, agent_type)
        result = services.approval_check(
            operation=operation,
            context_id=text(body, "contextId", required=True),
            agent_type=agent_type,
            agent_instance=text(body, "agentInstance"),
            allocation=text(body, "allocation"),
            namespace=text(body, "namespace"),
            deadline_seconds=integer(body, "deadlineSeconds"),
            actor=actor_of(request.user),
        )
        if result.request is None:
            return Response(
                {
                    "decision": result.decision,
                    "evaluation": result.evaluation,
                    "operation": result.operation,
                    "checkId": result.check_id,
                    "execution": result.execution,
                }
            )
        return Response(
            selectors.approval_json(result.request),
            status=202,
            headers={"Location": f"/v1/approvals/{result.request.pk}"},
        )

    @extend_schema(
        operation_id="approvals_list",
        parameters=[
            OpenApiParameter(name, OpenApiTypes.STR)
            for name in ("status", "agentType", "contextId", "allocation")
        ]
        + [
            OpenApiParameter("limit", OpenApiTypes.INT),
            OpenApiParameter(
                "offset",
                {"type": "integer", "maximum": MAX_OFFSET},
                description="Items to skip (at most 1,000,000,000)",
            ),
        ],
        responses=responses({200: ApprovalList}),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        found = selectors.approval_list(
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
        if offset > MAX_OFFSET:
            # PostgreSQL's OFFSET is a bigint: a larger one was a database error (a 500).
            raise InvalidRequest(f"offset must be at most {MAX_OFFSET}")
        page = found.select_related("grant").prefetch_related("signoffs")[offset : offset + limit]
        return Response(
            {"items": [selectors.approval_json(item) for item in page], "count": found.count()}
        )


class ApprovalDetailApi(ServiceAPIView):
    """GET without ``wait``; with ``?wait=N`` the request is served by the long-poll
    consumer (approvals/consumers.py), which answers in this same shape."""

    read_scopes = (Scope.READ, Scope.AGENT, Scope.APPROVER)

    @extend_schema(
        operation_id="approvals_get",
        parameters=[
            OpenApiParameter(
                "wait",
                OpenApiTypes.INT,
                description="long-poll: seconds (max 60) to wait for a decision",
            )
        ],
        responses=responses({200: Approval}, 404),
    )
    def get(self, request: Request, request_id: str) -> Response:
        parsed = selectors.parse_request_id(request_id)
        services.expire_if_due(parsed)
        found = selectors.approval_get(request_id=parsed, requested_by=_own_only(request))
        return Response(selectors.approval_json(found))


class ApprovalDecisionApi(ServiceAPIView):
    """Approve, deny, or approve and allow similar (approvers)."""

    write_scope = Scope.APPROVER

    @extend_schema(
        operation_id="approvals_decide",
        request=DecisionRequest,
        responses=responses({200: Approval}, 403, 404, 409),
    )
    def post(self, request: Request, request_id: str) -> Response:
        parsed = selectors.parse_request_id(request_id)
        body = read_json_object(request._request)
        reject_unknown_fields(body, DECISION_FIELDS)
        decided = services.approval_decide(
            request_id=parsed,
            actor=actor_of(request.user),
            decision=text(body, "decision", required=True),
            reason=text(body, "reason"),
            scope=text(body, "scope") or None,
            expires_in_seconds=integer(body, "expiresInSeconds"),
            rule=text(body, "rule") or None,
            operation=body.get("operation"),
            version=text(body, "version") or None,
        )
        return Response(selectors.approval_json(decided))


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
        found = selectors.approval_get(request_id=parsed, requested_by=_own_only(request))
        own = access.own_cancellable_only(actor=actor, scopes=principal_scopes(request.user))
        if own is not None and found.requested_by != own:
            raise Forbidden(
                f"{actor} may cancel only the requests it asked: withdrawing another's needs "
                "the approver scope"
            )
        cancelled = services.approval_cancel(request_id=parsed, actor=actor)
        return Response(selectors.approval_json(cancelled))


class ApprovalSimilarApi(ServiceAPIView):
    """What "approve and allow similar" would grant, and how much it would have matched."""

    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(
        operation_id="approvals_similar",
        parameters=[
            OpenApiParameter("rule", OpenApiTypes.STR),
            OpenApiParameter("scope", OpenApiTypes.STR, enum=["context", "agent_type"]),
        ],
        responses=responses({200: Similar}, 404),
    )
    def get(self, request: Request, request_id: str) -> Response:
        found = selectors.approval_get(request_id=selectors.parse_request_id(request_id))
        return Response(
            services.approval_similar(
                found,
                rule=request.query_params.get("rule"),
                scope=request.query_params.get("scope", "agent_type"),
            )
        )


class GrantCollectionApi(ServiceAPIView):
    """Rules granted by "approve and allow similar"."""

    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(
        operation_id="grants_list",
        parameters=[OpenApiParameter("active", OpenApiTypes.BOOL)],
        responses=responses({200: GrantList}),
    )
    def get(self, request: Request) -> Response:
        active = request.query_params.get("active") in ("1", "true", "yes")
        return Response(
            {"items": [selectors.grant_json(g) for g in selectors.grant_list(active=active)]}
        )


class GrantDetailApi(ServiceAPIView):
    """Revoke a grant."""

    write_scope = Scope.APPROVER

    @extend_schema(operation_id="grants_revoke", responses=responses({204: None}, 404, 409))
    def delete(self, request: Request, grant_id: int) -> Response:
        services.grant_revoke(grant_id=grant_id, actor=actor_of(request.user))
        return Response(status=204)


RUN_FIELDS = frozenset(
    {
        "refusedEffects",
        "sandbox",
        "requestId",
        "checkId",
        "contextId",
        "command",
        "outcome",
        "exitStatus",
        "signal",
        "durationMs",
        "stdoutBytes",
        "stderrBytes",
        "truncated",
    }
)
MAX_BYTES = 2**63 - 1


class RefusedEffect(serializers.Serializer):
    """One thing the sandbox refused the command, as the program reported it."""

    action = serializers.ChoiceField(choices=list(services.REFUSED_ACTIONS))
    path = serializers.CharField(allow_blank=True, max_length=services.MAX_REFUSED_PATH)
    error = serializers.CharField(max_length=200)


class Sandbox(serializers.Serializer):
    network = serializers.ChoiceField(choices=["pod", "none"])
    memory = serializers.ChoiceField(choices=["cgroup", "rlimit"])
    processes = serializers.ChoiceField(choices=["cgroup", "rlimit"])


class RunReport(serializers.Serializer):
    requestId = serializers.UUIDField(required=False, help_text="A queued request's id")
    checkId = serializers.IntegerField(required=False, help_text="An immediate allow's checkId")
    contextId = serializers.RegexField(openapi.CONTEXT_ID)
    command = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="What ran: must be what was judged"
    )
    outcome = serializers.ChoiceField(choices=["exited", "timed_out", "memory", "killed", "error"])
    exitStatus = serializers.IntegerField(
        allow_null=True, required=False, min_value=0, max_value=255
    )
    signal = serializers.IntegerField(allow_null=True, required=False, min_value=1, max_value=64)
    durationMs = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    stdoutBytes = serializers.IntegerField(min_value=0, max_value=MAX_BYTES)
    stderrBytes = serializers.IntegerField(min_value=0, max_value=MAX_BYTES)
    truncated = serializers.BooleanField()
    refusedEffects = RefusedEffect(many=True, required=False)
    sandbox = Sandbox(required=False)


class Run(serializers.Serializer):
    id = serializers.UUIDField()
    requestId = serializers.UUIDField(allow_null=True)
    checkId = serializers.IntegerField(allow_null=True)
    contextId = serializers.CharField()
    agentType = serializers.CharField()
    command = serializers.CharField()
    outcome = serializers.CharField()
    exitStatus = serializers.IntegerField(allow_null=True)
    signal = serializers.IntegerField(allow_null=True)
    durationMs = serializers.IntegerField()
    stdoutBytes = serializers.IntegerField()
    stderrBytes = serializers.IntegerField()
    truncated = serializers.BooleanField()
    refusedEffects = RefusedEffect(many=True)
    sandbox = serializers.DictField()
    reportedBy = serializers.CharField()
    reportedAt = serializers.DateTimeField()


def _count(body: dict[str, Any], key: str, maximum: int) -> int:
    value = integer(body, key, required=True, minimum=0, maximum=maximum)
    assert value is not None  # required=True
    return value


class RunCollectionApi(ServiceAPIView):
    """An agent's executor reports what it ran for an allowed operation (docs/agent-client.md)."""

    write_scope = Scope.AGENT

    @extend_schema(
        operation_id="runs_report",
        request=RunReport,
        responses=responses({201: Run}, 404, 409),
        description="Once per allowed operation; the command must be the one judged.",
    )
    def post(self, request: Request) -> Response:
        body = read_json_object(request._request)
        reject_unknown_fields(body, RUN_FIELDS)
        raw_request_id = text(body, "requestId")
        run = services.run_record(
            context_id=text(body, "contextId", required=True),
            request_id=selectors.parse_request_id(raw_request_id) if raw_request_id else None,
            check_id=integer(body, "checkId", minimum=1, maximum=MAX_BYTES),
            command=field(body, "command", str, required=True),
            outcome=text(body, "outcome", required=True),
            exit_status=integer(body, "exitStatus", minimum=0, maximum=255),
            signal=integer(body, "signal", minimum=1, maximum=64),
            duration_ms=_count(body, "durationMs", 2**31 - 1),
            stdout_bytes=_count(body, "stdoutBytes", MAX_BYTES),
            stderr_bytes=_count(body, "stderrBytes", MAX_BYTES),
            truncated=field(body, "truncated", bool, required=True),
            refused_effects=field(body, "refusedEffects", list) or [],
            sandbox=field(body, "sandbox", dict) or {},
            actor=actor_of(request.user),
        )
        return Response(
            selectors.run_json(run), status=201, headers={"Location": f"/v1/runs/{run.pk}"}
        )


class RunDetailApi(ServiceAPIView):
    read_scopes = (Scope.READ, Scope.APPROVER)

    @extend_schema(operation_id="runs_get", responses=responses({200: Run}, 404))
    def get(self, request: Request, run_id: str) -> Response:
        try:
            parsed = UUID(run_id)
        except ValueError:
            raise NotFound(f'run "{run_id}" not found') from None
        return Response(selectors.run_json(selectors.run_get(run_id=parsed)))

"""The approval API's requests, each declared once: the views in approvals/api.py read
bodies and query parameters through these, and the OpenAPI document is made from them.

Operations themselves are judged by ``rules.model.operation_from_dict`` (its messages name
the field); the operation objects below are its shape in the document.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from approvals import shapes
from approvals.models import DECISION_KIND_MESSAGE, DecisionKind, OperationRun, Status
from approvals.services.decisions import ReviewerDecision
from approvals.services.grants import MAX_GRANT_SECONDS
from approvals.services.runs import (
    MAX_REFUSED,
    MAX_REFUSED_PATH,
    REFUSED_ACTIONS,
    REPORTED_BY,
    SANDBOX_NETWORKS,
)
from approvals.shapes import when
from contextsvc.infra import openapi
from contextsvc.infra.contract import Body, Field, Query
from rules.model import MAX_OPERATION_TEXT

# Not empty, not only whitespace (as operation_from_dict refuses).
_NOT_BLANK = {"pattern": r"\S", "maxLength": MAX_OPERATION_TEXT}
_KIND = "kind"


def _operation(component: str, kind: str, *fields: Field) -> Body:
    return Body(component, (Field(_KIND, required=True, schema={"enum": [kind]}), *fields))


SHELL = _operation("ShellOperation", "shell", Field("command", required=True, schema=_NOT_BLANK))
FILE = _operation(
    "FileOperation",
    "file",
    Field("action", required=True, schema={"enum": ["read", "write", "delete"]}),
    Field("path", required=True, schema=_NOT_BLANK),
)
_DIRECTION = Field("direction", schema={"enum": ["outbound", "inbound"]})
NETWORK_HOST = _operation(
    "NetworkHostOperation", "network", _DIRECTION, Field("host", required=True, schema=_NOT_BLANK)
)
NETWORK_URL = _operation(
    "NetworkUrlOperation",
    "network",
    _DIRECTION,
    Field(
        "url",
        required=True,
        schema={
            "pattern": r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*@)?[^/?#@:]",
            "maxLength": MAX_OPERATION_TEXT,
        },
        help="An absolute URL",
    ),
    Field("host", schema=_NOT_BLANK, help="If given, the url's host"),
)
OPERATIONS = (SHELL, FILE, NETWORK_HOST, NETWORK_URL)


def _operation_document(component: str, **options: Any) -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(
        component_name=component,
        serializers=[operation.serializer() for operation in OPERATIONS],
        resource_type_field_name=None,
        **options,
    )


def _longest(name: str, length: int) -> Field:
    return Field(
        name, schema={"maxLength": length}, message=f"{name} must be at most {length} characters"
    )


CHECK = Body(
    "ApprovalCheckRequest",
    (
        Field("contextId", required=True, schema={"pattern": openapi.CONTEXT_ID}),
        Field("agentType", required=True, schema={"pattern": openapi.DNS_LABEL}),
        # Their columns' lengths (a longer one was a database error: a 500).
        _longest("agentInstance", 253),
        _longest("allocation", 50),
        _longest("namespace", 63),
        # absent or null: the message a wrong type gets
        Field(
            "operation",
            dict,
            required=True,
            message="operation must be an object",
            document=_operation_document("Operation"),
        ),
        Field(
            "deadlineSeconds",
            int,
            schema={"minimum": 1, "maximum": settings.CS_APPROVAL_MAX_DEADLINE_SECONDS},
        ),
    ),
)

# What the agent is told with a denial: a sentence or two, as the dashboard's box says.
MAX_REASON = 1000
REASON = _longest("reason", MAX_REASON)

# selectors.approval_version: the first 32 hexadecimal digits of a SHA-256.
VERSION_PATTERN = "^[0-9a-f]{32}$"

DECISION = Body(
    "DecisionRequest",
    (
        Field(
            "decision",
            required=True,
            schema={"enum": DecisionKind.values},
            message=DECISION_KIND_MESSAGE,
        ),
        REASON,
        Field(
            "scope",
            schema={"enum": ["context", "agent_type"]},
            help="With approve_similar",
        ),
        Field("expiresInSeconds", int, schema={"minimum": 1, "maximum": MAX_GRANT_SECONDS}),
        Field("rule", help="With approve_similar"),
        Field(
            "operation",
            dict,
            document=_operation_document(
                "EditedOperation",
                required=False,
                allow_null=True,
                help_text="With approve_edited: the operation to approve instead (same kind)",
            ),
        ),
        Field(
            "version",
            help="The request's version as the decider saw it (a decision on another "
            "version is a 409); required to approve a request a reviewer edited",
            schema={"pattern": VERSION_PATTERN},
            message="version must be a request's version as the API shows it "
            "(32 hexadecimal characters), or absent",
        ),
    ),
    # The service's rules: "operation goes only with approve_edited" (and is required with
    # it); "scope is required" with approve_similar.
    when=(
        ("decision", "approve_edited", ("operation",), True),
        ("decision", "approve_similar", ("scope",), False),
    ),
)


def parse_decision(body: dict[str, Any]) -> ReviewerDecision:
    """A decision from the API's body, or the dashboard's form as that body: unknown
    fields, then each field's type, its own constraints, and the service's rules in the
    service (scope with approve_similar, operation only with approve_edited)."""
    spec = DECISION
    spec.open(body)
    decision = spec["decision"].text(body)
    reason = spec["reason"].text(body)
    scope = spec["scope"].text(body) or None
    # Its bounds are the service's (a link's decision takes them too).
    expires_in_seconds = spec["expiresInSeconds"].read(body)
    rule = spec["rule"].text(body) or None
    # Read as an object; judged by the service (as the edited operation, with the rules'
    # messages).
    operation = body.get("operation")
    # Checked even when empty: "" is a malformed version, not "no version".
    version = spec["version"].check(spec["version"].read(body))
    spec["decision"].check(decision)
    REASON.check(reason)
    return ReviewerDecision(decision, reason, scope, expires_in_seconds, rule, operation, version)


MAX_BYTES = 2**63 - 1

REFUSED_EFFECT = Body(
    "RefusedEffect",
    (
        Field("action", required=True, schema={"enum": list(REFUSED_ACTIONS)}),
        Field("path", required=True, schema={"maxLength": MAX_REFUSED_PATH}),
        Field("error", required=True, schema={"maxLength": 200}),
        Field(
            "reportedBy",
            schema={"enum": list(REPORTED_BY)},
            help="executor: the executor's own record (its egress proxy); program (the "
            "default): read from the program's error output",
        ),
    ),
    "One thing the sandbox refused the command.",
)
_LIMIT = {"enum": ["cgroup", "rlimit"]}
# Each key optional, none null (the service's _sandbox).
SANDBOX = Body(
    "Sandbox",
    (
        Field("network", schema={"enum": list(SANDBOX_NETWORKS)}),
        Field("memory", schema=_LIMIT),
        Field("processes", schema=_LIMIT),
    ),
    null_is_absent=False,
)
RUN = Body(
    "RunReport",
    (
        Field("requestId", schema={"format": "uuid"}, help="A queued request's id"),
        Field.between("checkId", 1, MAX_BYTES, help="An immediate allow's checkId"),
        Field("contextId", required=True, schema={"pattern": openapi.CONTEXT_ID}),
        Field("command", required=True, help="What ran: must be what was judged"),
        Field(
            "outcome",
            required=True,
            schema={"enum": ["exited", "timed_out", "memory", "killed", "error"]},
        ),
        Field.between("exitStatus", 0, 255),
        Field.between("signal", 1, 64),
        Field.between("durationMs", 0, 2**31 - 1, required=True),
        Field.between("stdoutBytes", 0, MAX_BYTES, required=True),
        Field.between("stderrBytes", 0, MAX_BYTES, required=True),
        Field("truncated", bool, required=True),
        Field(
            "refusedEffects",
            list,
            document=serializers.ListField(
                child=REFUSED_EFFECT.serializer()(),
                max_length=MAX_REFUSED,
                required=False,
                allow_null=True,
            ),
        ),
        Field("sandbox", dict, document=SANDBOX.serializer()(required=False, allow_null=True)),
    ),
    # The service refuses the report otherwise ("give exactly one of requestId and checkId").
    exactly_one=("requestId", "checkId"),
)

# What a check a rule decided at once is answered with (200).
VERDICT = Body(
    "Verdict",
    (
        Field.out("decision", lambda r: r.decision, schema={"enum": ["allow", "deny"]}),
        Field.out("evaluation", lambda r: r.evaluation, dict, help="Which rule decided each part"),
        Field.out(
            "operation", lambda r: r.operation, dict, help="The operation as judged: what may run"
        ),
        Field.out(
            "checkId", lambda r: r.check_id, int, help="This decision's audit entry (for /v1/runs)"
        ),
        Field.out("execution", lambda r: r.execution, dict, body=shapes.EXECUTION),
    ),
)
# What "approve and allow similar" would grant (services/grants.approval_similar).
SIMILAR = Body(
    "Similar",
    (
        Field.out("rule", lambda s: s["rule"], nullable=True),
        Field.out("scope", lambda s: s["scope"]),
        Field.out("matches", lambda s: s["matches"], int),
    ),
)

# What a run's report is answered with (and GET /v1/runs/{id}).
RUN_SHOWN = Body(
    "Run",
    (
        Field.out("id", lambda run: str(run.pk), schema={"format": "uuid"}),
        Field.out(
            "requestId",
            lambda run: str(run.request_id) if run.request_id else None,
            nullable=True,
            schema={"format": "uuid"},
        ),
        Field.out("checkId", lambda run: run.check_entry_id, int, nullable=True),
        Field.out("contextId", lambda run: run.context_id),
        Field.out("agentType", lambda run: run.agent_type),
        Field.out("command", lambda run: run.command),
        Field.out("outcome", lambda run: run.outcome),
        Field.out("exitStatus", lambda run: run.exit_status, int, nullable=True),
        Field.out("signal", lambda run: run.signal, int, nullable=True),
        Field.out("durationMs", lambda run: run.duration_ms, int),
        Field.out("stdoutBytes", lambda run: run.stdout_bytes, int),
        Field.out("stderrBytes", lambda run: run.stderr_bytes, int),
        Field.out("truncated", lambda run: run.truncated, bool),
        Field.out(
            "refusedEffects",
            lambda run: run.refused_effects,
            list,
            document=REFUSED_EFFECT.serializer()(many=True),
        ),
        Field.out("sandbox", lambda run: run.sandbox, dict),
        Field.out("reportedBy", lambda run: run.reported_by),
        when("reportedAt", lambda run: run.reported_at),
    ),
)


def run_json(run: OperationRun) -> dict[str, Any]:
    return RUN_SHOWN.render(run)


# --- Query parameters ------------------------------------------------------------------------

# The largest list offset taken (far past any real list; keeps OFFSET inside a bigint).
MAX_OFFSET = 1_000_000_000

LIST_STATUS = Query(
    "status",
    schema={"enum": ["", *Status.values]},
    message=f"status must be one of {', '.join(Status.values)}",
    help="Empty: any",
)
LIST_FILTERS = tuple(Query(name) for name in ("agentType", "contextId", "allocation"))
LIMIT = Query("limit", int, help="At most 500 are given (fewer than 1: 1)")
OFFSET = Query(
    "offset",
    int,
    schema={"maximum": MAX_OFFSET},
    message=f"offset must be at most {MAX_OFFSET}",
    help="Items to skip (at most 1,000,000,000)",
)
WAIT = Query("wait", int, help="long-poll: seconds (max 60) to wait for a decision")
SIMILAR_RULE = Query("rule")
SIMILAR_SCOPE = Query(
    "scope",
    schema={"enum": ["context", "agent_type"]},
    message="scope must be context or agent_type",
)
GRANTS_ACTIVE = Query("active", bool)

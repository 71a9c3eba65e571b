"""What the approvals API answers, declared once: each ``Body`` renders the JSON and is the
OpenAPI component (contextsvc/infra/contract.py), so the two cannot disagree.

Below the services (approvals.live and the notifications render a request too, and the
services import those), and so apart from the request contract, approvals/contract.py.
Execution, Effects and Edit are documents the service stores with a request and answers as
stored: their bodies describe them for the document and render nothing; a row written by
an earlier version may lack a key added since, so they are documented open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from approvals.models import ApprovalRequest, Delivery, Grant, Status
from approvals.selectors import approval_as_read, approval_version
from contextsvc.infra.contract import Body, Field

_DATE_TIME = {"format": "date-time"}
_STRINGS = {"items": {"type": "string"}}


def _at(read: Callable[[Any], datetime | None]) -> Callable[[Any], str | None]:
    """A time as the API has always written it (``isoformat``; null when unset)."""

    def value(obj: Any) -> str | None:
        moment = read(obj)
        return moment.isoformat() if moment else None

    return value


def when(name: str, read: Callable[[Any], datetime | None], **options: Any) -> Field:
    return Field.out(name, _at(read), schema=_DATE_TIME, **options)


def _strings(name: str, **options: Any) -> Field:
    return Field(name, list, schema=_STRINGS, **options)


# --- Stored documents (described, answered as stored) -------------------------------------

EFFECTS = Body(
    "Effects",
    (
        _strings("read", required=True),
        _strings("write", required=True),
        _strings("delete", required=True),
        _strings("network", required=True, help="Hosts; * one only known at run time"),
        _strings("programs", required=True),
        _strings(
            "hidden", help="What the deny rules forbid reading: left out of everything granted"
        ),
    ),
    "What a shell command was judged to do: the executor holds it to this (Landlock). "
    "Absolute paths; ``D/**`` is everything below D.",
    null_is_absent=False,
    closed=False,
)
EGRESS = Body(
    "Egress",
    (
        _strings("hosts", required=True, help="Where a contained run may connect"),
        _strings("blocked", required=True, help="Domains never reached"),
        Field("ports", list, required=True, schema={"items": {"type": "integer"}}),
    ),
    "The agent type's egress ceiling, for the executor's proxy (rules.effects.egress_ceiling).",
    null_is_absent=False,
    closed=False,
)
EXECUTION = Body(
    "Execution",
    (
        Field("isolation", required=True, schema={"enum": ["namespaces", "none"]}),
        Field("runtimeClass", required=True, nullable=True, help="The Pod's, e.g. gvisor"),
        Field("timeLimitSeconds", int, required=True, nullable=True),
        Field("memoryLimitMb", int, required=True, nullable=True),
        Field("workspace", required=True, help="The context's directory the rules judged"),
        Field(
            "network",
            required=True,
            schema={"enum": ["pod", "none"]},
            help="none: commands never get the Pod's network",
        ),
        Field("egress", dict, body=EGRESS),
        Field("effects", dict, body=EFFECTS, help="A shell command's judged effects"),
    ),
    "How the agent's executor runs what is allowed (the profile's, when it was judged).",
    null_is_absent=False,
    closed=False,
)
EDIT = Body(
    "Edit",
    (
        Field("operation", dict, required=True, help="What the agent runs instead"),
        Field("normalised", required=True),
        Field("evaluation", dict, required=True, help="The rules' judgement of the edit"),
        Field("risk", required=True, schema={"enum": ["low", "medium", "high"]}),
        _strings("riskNotes", required=True),
        Field("effects", dict, body=EFFECTS, help="What the executor holds the edit to"),
        Field("by", required=True),
        Field("at", required=True, schema=_DATE_TIME),
    ),
    "A reviewer's version of the operation, approved instead of the one asked.",
    null_is_absent=False,
    closed=False,
)


# --- Answers ---------------------------------------------------------------------------------

GRANT = Body(
    "Grant",
    (
        Field.out("id", lambda g: g.pk, int),
        Field.out("rule", lambda g: g.rule),
        Field.out("scope", lambda g: g.scope, schema={"enum": Grant.Scope.values}),
        Field.out("agentType", lambda g: g.agent_type),
        Field.out("contextId", lambda g: g.context_id or None, nullable=True),
        when("expiresAt", lambda g: g.expires_at, nullable=True),
        when("createdAt", lambda g: g.created_at),
        Field.out("createdBy", lambda g: g.created_by),
        when("revokedAt", lambda g: g.revoked_at, nullable=True),
        Field.out("revokedBy", lambda g: g.revoked_by or None, nullable=True),
    ),
)
GRANT_LIST = Body("GrantList", (Field.out("items", lambda grants: grants, list, body=GRANT),))
SIGNOFF = Body(
    "Signoff",
    (Field.out("by", lambda s: s.actor), when("at", lambda s: s.at)),
)

DECISION = {
    Status.APPROVED: "allow",
    Status.DENIED: "deny",
    Status.EXPIRED: "deny",
    Status.CANCELLED: "deny",
}


def decision_of(request: ApprovalRequest) -> str | None:
    """What the agent must do. An approved edit is ``allow_edited``: run the edit's
    operation, not the one asked (a client that knows only ``allow`` refuses it)."""
    if request.status == Status.APPROVED and request.edit:
        return "allow_edited"
    return DECISION.get(Status(request.status))


def execution_of(request: ApprovalRequest) -> dict[str, Any]:
    """How the executor runs what was decided: an approved edit runs held to the effects
    of the edit, not of the command asked."""
    if request.edit and "effects" in request.edit:
        return {**request.execution, "effects": request.edit["effects"]}
    return dict(request.execution)


APPROVAL = Body(
    "Approval",
    (
        Field.out("id", lambda r: str(r.pk), schema={"format": "uuid"}),
        Field.out("status", lambda r: r.status, schema={"enum": Status.values}),
        Field.out(
            "decision",
            decision_of,
            nullable=True,
            schema={"enum": ["allow", "allow_edited", "deny"]},
            help="What the agent must do: allow; allow_edited (run edit.operation, not the "
            "operation asked); deny; null while pending",
        ),
        Field.out("contextId", lambda r: r.context_id),
        Field.out("agentType", lambda r: r.agent_type),
        Field.out("agentInstance", lambda r: r.agent_instance or None, nullable=True),
        Field.out("allocation", lambda r: r.allocation or None, nullable=True),
        Field.out("operation", lambda r: r.operation, dict),
        Field.out("normalised", lambda r: r.normalised),
        Field.out("evaluation", lambda r: r.evaluation, dict),
        Field.out("risk", lambda r: r.risk),
        Field.out("requestedBy", lambda r: r.requested_by),
        when("createdAt", lambda r: r.created_at),
        when("deadline", lambda r: r.deadline),
        when("decidedAt", lambda r: r.decided_at, nullable=True),
        Field.out("decidedBy", lambda r: r.decided_by or None, nullable=True),
        Field.out("reason", lambda r: r.reason or None, nullable=True),
        Field.out("grant", lambda r: r.grant, dict, body=GRANT, nullable=True),
        Field.out("execution", execution_of, dict, body=EXECUTION),
        Field.out(
            "riskNotes",
            lambda r: r.risk_notes,
            list,
            schema=_STRINGS,
            help="What it touches in its sandbox's topology",
        ),
        Field.out("edit", lambda r: r.edit, dict, body=EDIT, nullable=True),
        Field.out(
            "approvalsRequired",
            lambda r: r.approvals_required,
            int,
            schema={"minimum": 1, "maximum": 2},
            help="Two under the profile's two-person rule",
        ),
        Field.out(
            "approvals",
            lambda r: list(r.signoffs.all()),
            list,
            body=SIGNOFF,
            help="Who approved it so far",
        ),
        when("escalatedAt", lambda r: r.escalated_at, nullable=True),
        Field.out(
            "version",
            approval_version,
            help="A digest of the operation as shown (the edit, and who made it) and the "
            "approvals so far: send it with a decision (docs/approvals.md, Versioned "
            "decisions)",
        ),
    ),
)


@dataclass(frozen=True)
class Page:
    """A page of requests, and how many the filters found."""

    items: list[ApprovalRequest]
    count: int


APPROVAL_LIST = Body(
    "ApprovalList",
    (
        Field.out(
            "items", lambda page: [approval_as_read(r) for r in page.items], list, body=APPROVAL
        ),
        Field.out("count", lambda page: page.count, int),
    ),
)


def approval_json(request: ApprovalRequest) -> dict[str, Any]:
    """What agents and reviewers see of a request, as of now (``approval_as_read``).
    ``decision`` is what the agent must do: null while pending, allow when approved
    (allow_edited: run ``edit.operation``), deny otherwise (an expired request is denied)."""
    return APPROVAL.render(approval_as_read(request))


def grant_json(grant: Grant) -> dict[str, Any]:
    return GRANT.render(grant)


DELIVERY = Body(
    "DeliverySummary",
    (
        Field.out("event", lambda d: d.event),
        Field.out("medium", lambda d: d.medium),
        Field.out("target", lambda d: d.target),
        Field.out("status", lambda d: d.status),
        Field.out("attempts", lambda d: d.attempts, int),
        when("at", lambda d: d.created_at),
        when("deliveredAt", lambda d: d.delivered_at, nullable=True),
    ),
)


def delivery_summary(delivery: Delivery) -> dict[str, Any]:
    return DELIVERY.render(delivery)


def approval_review_json(request: ApprovalRequest) -> dict[str, Any]:
    """The request as reviewers see it: as the API shows it, and whom it was sent to (for
    the card's "notified" and "escalated" lines; agents are not told who reviews them)."""
    deliveries = sorted(request.deliveries.all(), key=lambda d: (d.created_at, d.target))
    return {
        **approval_json(request),
        "notifications": [delivery_summary(delivery) for delivery in deliveries],
    }

"""Reads for approval requests and grants (PostgreSQL only)."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import Case, CharField, Count, F, Min, Q, QuerySet, Value, When
from django.utils import timezone

from approvals.models import (
    EXPIRY_REASON,
    SYSTEM_ACTOR,
    ApprovalRequest,
    Delivery,
    Grant,
    NotificationChannel,
    NotificationEvent,
    OperationRun,
    RuleDecisionCount,
    Status,
)
from contextsvc.core.retention import Kept, kept
from contextsvc.core.tallies import with_retired
from contextsvc.core.teams import Reach
from contextsvc.infra.errors import InvalidRequest, NotFound


def parse_request_id(raw: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f'approval request "{raw}" not found') from None


def approval_get(
    *, request_id: UUID, reach: Reach, requested_by: str | None = None
) -> ApprovalRequest:
    """The request a caller reaches (another team's was never there); ``requested_by``
    limits the lookup to one caller's own requests (agents)."""
    found = reach.narrow(
        ApprovalRequest.objects.select_related("grant")
        .prefetch_related("signoffs")
        .filter(pk=request_id)
    )
    if requested_by is not None:
        found = found.filter(requested_by=requested_by)
    request = found.first()
    if request is None:
        raise NotFound(f'approval request "{request_id}" not found')
    return request


def approval_list(
    *,
    reach: Reach,
    status: str | None = None,
    agent_type: str | None = None,
    context_id: str | None = None,
    allocation: str | None = None,
    requested_by: str | None = None,
) -> QuerySet[ApprovalRequest]:
    found = reach.narrow(ApprovalRequest.objects.all())
    if status:
        if status not in Status.values:
            raise InvalidRequest(f"status must be one of {', '.join(Status.values)}")
        found = found.filter(status=status)
    for field, value in (
        ("agent_type", agent_type),
        ("context_id", context_id),
        ("allocation", allocation),
        ("requested_by", requested_by),
    ):
        if value:
            found = found.filter(**{field: value})
    return found.order_by("-created_at")


def approval_list_pending(*, reach: Reach) -> QuerySet[ApprovalRequest]:
    """The reviewers' queue: what waits for a decision, the nearest deadline first."""
    return (
        reach.narrow(ApprovalRequest.objects.filter(status=Status.PENDING))
        .select_related("grant")
        .prefetch_related("signoffs", "deliveries")
        .order_by("deadline")
    )


def grant_list(*, reach: Reach, active: bool | None = None) -> QuerySet[Grant]:
    grants = Grant.objects.active() if active else Grant.objects.all()
    return reach.narrow(grants).order_by("-created_at")


def grant_list_active_for(
    *, agent_type: str, context_id: str, team_id: int | None
) -> QuerySet[Grant]:
    """The active grants that apply to an operation of ``team_id``'s agent: the agent
    type's, and this context's, granted on that team's requests."""
    if team_id is None:
        return Grant.objects.none()  # (rows always have a team: fails closed if not)
    return Grant.objects.active().filter(
        Q(scope=Grant.Scope.AGENT_TYPE) | Q(scope=Grant.Scope.CONTEXT, context_id=context_id),
        agent_type=agent_type,
        team_id=team_id,
    )


def approval_version(request: ApprovalRequest) -> str:
    """What a decider saw, as one short digest: the operation as shown (the reviewer's edit
    once there is one, and who made it) and who approved it so far. A decision that names
    another version decides something else than the request now is (services/decisions.py,
    ``_decide``)."""
    signoffs = sorted(request.signoffs.all(), key=lambda signoff: (signoff.at, signoff.pk))
    shown = {
        "operation": request.effective_operation,
        "editedBy": (request.edit or {}).get("by"),
        "approvals": [signoff.actor for signoff in signoffs],
    }
    return operation_digest(shown)[:32]


def approval_as_read(request: ApprovalRequest) -> ApprovalRequest:
    """The request as a reader sees it now, and nothing is written. One still pending past
    its deadline has expired, whether or not beat's task (services/expiry.py) has written
    that yet: it reads as expired by the system, "deadline passed", decided at its
    deadline — an unsaved copy; the row is left to the task."""
    if request.status != Status.PENDING or request.deadline > timezone.now():
        return request
    # A shallow copy shares the prefetched signoffs and the grant: only these fields differ.
    expired = copy.copy(request)
    expired.status = Status.EXPIRED
    expired.decided_at = request.deadline
    expired.decided_by = SYSTEM_ACTOR
    expired.reason = EXPIRY_REASON
    return expired


def approval_pending_summary(*, reach: Reach, near_seconds: int = 60) -> dict[str, Any]:
    """How many requests wait, since when, and which are about to expire."""
    pending = reach.narrow(ApprovalRequest.objects.all()).filter(status=Status.PENDING)
    summary = pending.aggregate(count=Count("id"), oldest=Min("created_at"))
    near = list(
        pending.filter(deadline__lte=timezone.now() + timedelta(seconds=near_seconds)).order_by(
            "deadline"
        )[:20]
    )
    return {"count": summary["count"], "oldest": summary["oldest"], "near_deadline": near}


# --- Metrics (approvals/metrics.py) ------------------------------------------------------


def approvals_pending_count(*, team_id: int | None = None) -> int:
    """What waits for a decision (a team's, when given: what its quota counts)."""
    found = ApprovalRequest.objects.filter(status=Status.PENDING)
    return (found if team_id is None else found.filter(team_id=team_id)).count()


def approvals_decided() -> QuerySet[ApprovalRequest]:
    """Every request a human approved or denied (``created_at`` → ``decided_at``)."""
    return ApprovalRequest.objects.filter(status__in=[Status.APPROVED, Status.DENIED])


def approvals_decided_since(since: datetime) -> QuerySet[ApprovalRequest]:
    """The human decisions made from ``since`` on (``created_at`` → ``decided_at``)."""
    return approvals_decided().filter(decided_at__gte=since)


# --- Runs --------------------------------------------------------------------------------------


def operation_digest(operation: dict[str, Any]) -> str:
    """SHA-256 of an operation in canonical JSON: what was judged, compared with what ran."""
    canonical = json.dumps(operation, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def run_of_request(*, request: ApprovalRequest) -> OperationRun | None:
    return OperationRun.objects.filter(request=request).first()


def run_get(*, run_id: UUID, reach: Reach) -> OperationRun:
    run = reach.narrow(OperationRun.objects.filter(pk=run_id)).first()
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


# --- Notifications -----------------------------------------------------------------------------


def channels_for(*, agent_type: str, event: str) -> list[NotificationChannel]:
    """The enabled channels that want ``event`` for this agent type."""
    return [
        channel
        for channel in NotificationChannel.objects.filter(enabled=True).order_by("name")
        if event in channel.events
        and ("*" in channel.agent_types or agent_type in channel.agent_types)
    ]


def delivery_list(*, status: str | None = None, limit: int = 200) -> QuerySet[Delivery]:
    """The delivery log, newest first."""
    found = Delivery.objects.select_related("request", "channel").prefetch_related("attempt_log")
    if status:
        if status not in Delivery.Status.values:
            raise InvalidRequest(f"status must be one of {', '.join(Delivery.Status.values)}")
        found = found.filter(status=status)
    return found.order_by("-created_at")[:limit]


def deliveries_due(*, now: datetime) -> list[UUID]:
    return list(
        Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:500]
    )


def events_wanted() -> list[str]:
    """The events a channel may subscribe to."""
    return [event for event in NotificationEvent.values if event != NotificationEvent.TEST]


# --- Analytics (the dashboard's and /metrics') -------------------------------------------------

OUTCOMES = ("approved", "approved_edited", "denied", "expired", "cancelled")


def outcome_counts(
    *, since: datetime | None = None, rows: QuerySet[ApprovalRequest] | None = None
) -> list[tuple[str, str, int]]:
    """(agent type, outcome, count) of the requests people finished (or let expire), of
    ``rows`` only when given; ``approved_edited``: approved as a reviewer rewrote it. Rows
    retention removed are not counted here (``outcome_counts_all`` adds them)."""
    found = (ApprovalRequest.objects.all() if rows is None else rows).exclude(status=Status.PENDING)
    if since is not None:
        found = found.filter(created_at__gte=since)
    counted = (
        found.annotate(
            outcome=Case(
                When(status=Status.APPROVED, edit__isnull=False, then=Value("approved_edited")),
                default=F("status"),
                output_field=CharField(),
            )
        )
        .values_list("agent_type", "outcome")
        .annotate(count=Count("pk"))
        .order_by("agent_type", "outcome")
    )
    return [(agent_type, outcome, count) for agent_type, outcome, count in counted]


def rule_decision_counts(*, limit: int | None = None) -> QuerySet[RuleDecisionCount]:
    """Immediate decisions by rule and agent type, the most frequent first."""
    found = RuleDecisionCount.objects.order_by("-count", "agent_type", "rule")
    return found[:limit] if limit else found


def grants_by_hits(*, reach: Reach, limit: int | None = None) -> QuerySet[Grant]:
    """Grants that allowed something, the busiest first."""
    found = reach.narrow(Grant.objects.filter(hits__gt=0)).order_by("-hits", "pk")
    return found[:limit] if limit else found


def escalation_counts(rows: QuerySet[ApprovalRequest] | None = None) -> list[tuple[str, int]]:
    """(agent type, count) of the requests escalated (of ``rows`` only, when given)."""
    found = (
        (ApprovalRequest.objects.all() if rows is None else rows)
        .filter(escalated_at__isnull=False)
        .values_list("agent_type")
        .annotate(count=Count("pk"))
        .order_by("agent_type")
    )
    return [(agent_type, count) for agent_type, count in found]


def refused_effect_counts(
    requests: QuerySet[ApprovalRequest] | None = None,
) -> list[tuple[str, str, str, int]]:
    """(agent type, action, reported by, count) of the effects executors' sandboxes refused
    (in the runs of ``requests`` only, when given): counted in the database (a jsonb array
    per run), so a scrape reads one row per group. A refusal reported before executors
    said who reported it was read from the program's output."""
    ids = None if requests is None else [str(pk) for pk in requests.values_list("pk", flat=True)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT agent_type, effect->>'action', coalesce(effect->>'reportedBy', 'program'),"
            " count(*)"
            " FROM approvals_operationrun, jsonb_array_elements(refused_effects) AS effect"
            " WHERE %s::uuid[] IS NULL OR request_id = ANY(%s::uuid[])"
            " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
            [ids, ids],
        )
        return [(agent, action, by, count) for agent, action, by, count in cursor.fetchall()]


# The /metrics series that count from request and run rows, and what retention folds into
# their tallies before it removes rows (core.tallies): the all-time numbers survive it.
DECISION_LATENCY = "contextsvc_approval_decision_latency_seconds"
OUTCOME_COUNTS = "contextsvc_approval_outcomes"
ESCALATIONS = "contextsvc_approval_escalations"
REFUSED_EFFECTS = "contextsvc_executor_refused_effects"
DELIVERIES = "contextsvc_notification_deliveries"
DECISION_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600)


def outcome_counts_all() -> list[tuple[str, str, int]]:
    """``outcome_counts`` over every request ever, removed ones included."""
    kept = (((agent, outcome), count) for agent, outcome, count in outcome_counts())
    return [
        (agent, outcome, int(count))
        for (agent, outcome), count in with_retired(OUTCOME_COUNTS, kept)
    ]


def escalation_counts_all() -> list[tuple[str, int]]:
    """``escalation_counts`` over every request ever, removed ones included."""
    kept = (((agent,), count) for agent, count in escalation_counts())
    return [(agent, int(count)) for (agent,), count in with_retired(ESCALATIONS, kept)]


def refused_effect_counts_all() -> list[tuple[str, str, str, int]]:
    """``refused_effect_counts`` over every run ever, removed ones included."""
    kept = (((agent, action, by), n) for agent, action, by, n in refused_effect_counts())
    return [
        (agent, action, by, int(count))
        for (agent, action, by), count in with_retired(REFUSED_EFFECTS, kept)
    ]


def delivery_counts(
    requests: QuerySet[ApprovalRequest] | None = None,
) -> list[tuple[str, str, int]]:
    """(medium, status, count) of every delivery (of ``requests`` only, when given)."""
    found = (
        Delivery.objects.all()
        if requests is None
        else Delivery.objects.filter(request__in=requests)
    )
    rows = (
        found.values_list("medium", "status")
        .annotate(count=Count("pk"))
        .order_by("medium", "status")
    )
    return [(medium, status, count) for medium, status, count in rows]


def delivery_counts_all() -> list[tuple[str, str, int]]:
    """``delivery_counts`` over every delivery ever, removed ones included (retention never
    removes a request with a delivery still pending: they are all delivered or failed)."""
    kept = (((medium, status), count) for medium, status, count in delivery_counts())
    return [
        (medium, status, int(count)) for (medium, status), count in with_retired(DELIVERIES, kept)
    ]


def retention_kept() -> list[Kept]:
    """What the approvals' tables hold, as retention sees them (the Cluster page)."""
    days = settings.CS_RETENTION_APPROVALS_DAYS
    finished = ApprovalRequest.objects.exclude(status=Status.PENDING)
    return [
        kept(ApprovalRequest, finished, "decided_at", days),
        kept(OperationRun, None, "reported_at", days),
    ]

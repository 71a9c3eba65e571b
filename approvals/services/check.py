"""An agent's check of an operation: the rules allow or deny it at once (the decision is
recorded), or it is queued for a human (a request, announced and notified)."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from approvals import live, notifications
from approvals.models import ApprovalRequest, Grant, NotificationEvent
from approvals.risk import risk_notes, surroundings
from approvals.selectors import approvals_pending_count, operation_digest
from approvals.services.policy import Policy, policy_for
from contextsvc.core.auth import Role
from contextsvc.core.limits import PENDING_APPROVALS
from contextsvc.core.models import default_team_pk
from contextsvc.core.services import audit_record
from contextsvc.core.teams import quota_check, team_lock
from contextsvc.core.users import people_with_role
from contextsvc.infra.errors import InvalidRequest
from rules import (
    Decision,
    Evaluation,
    Operation,
    OperationError,
    egress_ceiling,
    evaluate,
    operation_from_dict,
)
from rules.model import check_context_id
from rules.risk import assess


@dataclass(frozen=True)
class CheckResult:
    decision: str  # allow | deny | ask
    evaluation: dict[str, Any]
    request: ApprovalRequest | None = None
    # For a rule's immediate decision: the operation as judged, the audit entry that
    # records it (what a run report refers to), and how to run it.
    operation: dict[str, Any] = dataclasses.field(default_factory=dict)
    check_id: int | None = None
    execution: dict[str, Any] = dataclasses.field(default_factory=dict)


def _deadline_seconds(requested: int | None) -> int:
    if requested is None:
        return int(settings.CS_APPROVAL_DEADLINE_SECONDS)
    if not 1 <= requested <= settings.CS_APPROVAL_MAX_DEADLINE_SECONDS:
        raise InvalidRequest(
            f"deadlineSeconds must be between 1 and {settings.CS_APPROVAL_MAX_DEADLINE_SECONDS}"
        )
    return requested


def _count_rule_decision(*, agent_type: str, decision: str, rule: str | None) -> None:
    """One more immediate decision by ``rule`` (an upsert: no read-modify-write)."""
    text = rule or ""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO approvals_ruledecisioncount"
            " (agent_type, decision, rule_sha256, rule, count, last_at)"
            " VALUES (%s, %s, %s, %s, 1, now())"
            " ON CONFLICT (agent_type, decision, rule_sha256) DO UPDATE"
            " SET count = approvals_ruledecisioncount.count + 1, last_at = now()",
            [agent_type, decision, hashlib.sha256(text.encode()).hexdigest(), text],
        )


def _grants_hit(policy: Policy, evaluation: Evaluation) -> list[int]:
    """The grants whose rule allowed a part of this operation."""
    return sorted(
        {
            policy.grants[part.rule]
            for part in evaluation.parts
            if part.decision == Decision.ALLOW and part.rule in policy.grants
        }
    )


def _execution(policy: Policy, workspace: str, evaluation: Evaluation) -> dict[str, Any]:
    """How the executor runs what is allowed: the profile's settings, the directory the
    rules judged paths against (it runs there or not at all), the agent type's egress
    ceiling (where any run of it may connect, through the executor's proxy) and, for a
    shell command, the effects it was judged to have, which it is held to
    (rules.effects)."""
    execution = {
        **policy.execution,
        "workspace": workspace,
        "egress": egress_ceiling(policy.rules, policy.sources),
    }
    if evaluation.effects is not None:
        execution["effects"] = evaluation.effects
    return execution


@dataclass(frozen=True)
class _Judged:
    """An operation as the agent type's rules judged it in one context: what both steps of
    a check (a rule's decision, or a request for a human) start from."""

    operation: Operation
    evaluation: Evaluation
    policy: Policy
    context_id: str
    agent_type: str
    workspace: str
    execution: dict[str, Any]
    team_id: int


def approval_check(
    *,
    operation: dict[str, Any],
    context_id: str,
    agent_type: str,
    agent_instance: str = "",
    allocation: str = "",
    namespace: str = "",
    deadline_seconds: int | None = None,
    actor: str,
    team_id: int | None = None,
) -> CheckResult:
    """Allow or deny at once when a rule decides; otherwise queue it for a human (a request
    of the caller's team, the default team's without one, within its quota)."""
    # Problems name the API's fields (contextId, operation.kind…), not the engine's.
    try:
        check_context_id(context_id)
    except OperationError as exc:
        raise InvalidRequest(f"contextId{str(exc).removeprefix(exc.field)}") from None
    try:
        parsed = operation_from_dict(operation)
    except OperationError as exc:
        raise InvalidRequest(f"operation.{exc}") from None
    seconds = _deadline_seconds(deadline_seconds)
    team_id = team_id if team_id is not None else default_team_pk()
    policy = policy_for(agent_type=agent_type, context_id=context_id, team_id=team_id)
    workspace = policy.rules.workspace(context_id)
    evaluation = evaluate(
        parsed,
        rules=policy.rules,
        sources=policy.sources,
        context_id=context_id,
        contained=policy.contained,
    )
    judged = _Judged(
        operation=parsed,
        evaluation=evaluation,
        policy=policy,
        context_id=context_id,
        agent_type=agent_type,
        workspace=workspace,
        execution=_execution(policy, workspace, evaluation),
        team_id=team_id,
    )
    if evaluation.decision in (Decision.ALLOW, Decision.DENY):
        return _record_rule_decision(judged, actor=actor)
    return _queue_for_human(
        judged,
        agent_instance=agent_instance,
        allocation=allocation,
        namespace=namespace,
        seconds=seconds,
        actor=actor,
        team_id=team_id,
    )


def _record_rule_decision(judged: _Judged, *, actor: str) -> CheckResult:
    """A rule allowed or denied the operation: its audit entry (what a run report refers
    to), the rule's count and the hits of the grants that allowed it, in one transaction."""
    evaluation = judged.evaluation
    # Allows too: after an incident the question is which rule let the agent do it.
    allowed = evaluation.decision == Decision.ALLOW
    hit = _grants_hit(judged.policy, evaluation) if allowed else []
    payload: dict[str, Any] = {
        "agent_type": judged.agent_type,
        "operation": evaluation.normalised,
        "rule": evaluation.rule,
        "sources_entry": evaluation.sources_entry,
        # What a run report is held to: exactly this operation (runs.run_record).
        "judged_sha256": operation_digest(judged.operation.to_dict()),
    }
    if evaluation.contained:
        # Allowed because the executor contains it, not because it was understood.
        payload["contained"] = True
    if hit:
        payload["grants"] = hit
    with transaction.atomic():
        entry = audit_record(
            actor=actor,
            team_id=judged.team_id,
            action="approval.allow" if allowed else "approval.refuse",
            target_type="context",
            target=judged.context_id,
            payload=payload,
        )
        _count_rule_decision(
            agent_type=judged.agent_type,
            decision=evaluation.decision.value,
            rule=evaluation.rule or evaluation.sources_entry,
        )
        if hit:
            Grant.objects.filter(pk__in=hit).update(hits=F("hits") + 1, last_hit_at=timezone.now())
    return CheckResult(
        "allow" if allowed else "deny",
        evaluation.to_dict(),
        operation=judged.operation.to_dict(),
        check_id=entry.pk,
        execution=judged.execution,
    )


def _queue_for_human(
    judged: _Judged,
    *,
    agent_instance: str,
    allocation: str,
    namespace: str,
    seconds: int,
    actor: str,
    team_id: int,
) -> CheckResult:
    """No rule decided: a request for a human, with its audit entry and the notifications
    it causes in one transaction, announced after commit. A team at its limit of pending
    requests is refused (403), with nothing written."""
    parsed, evaluation, policy = judged.operation, judged.evaluation, judged.policy
    explanation = evaluation.to_dict()
    risk = assess(parsed, evaluation, judged.workspace).value
    around = surroundings(allocation=allocation, namespace=namespace, agent_type=judged.agent_type)
    now = timezone.now()
    after = policy.approval.escalate_after
    with transaction.atomic():
        team = team_lock(team_id)
        if PENDING_APPROVALS.of(team) is not None:
            pending = approvals_pending_count(team_id=team.pk)
            quota_check(team, PENDING_APPROVALS, in_use=pending, more=1)
        request = ApprovalRequest.objects.create(
            team=team,
            context_id=judged.context_id,
            agent_type=judged.agent_type,
            agent_instance=agent_instance,
            allocation=allocation,
            namespace=namespace,
            operation=parsed.to_dict(),
            kind=parsed.kind.value,
            normalised=evaluation.normalised,
            evaluation=explanation,
            risk=risk,
            risk_notes=risk_notes(parsed, evaluation, workspace=judged.workspace, around=around),
            approvals_required=policy.approval.approvals_required(risk),
            execution=judged.execution,
            requested_by=actor,
            deadline=now + timedelta(seconds=seconds),
            escalate_at=now + timedelta(seconds=seconds * after) if after else None,
        )
        audit_record(
            actor=actor,
            team_id=request.team_id,
            action="approval.request",
            target_type="approval",
            target=str(request.pk),
            payload={
                "agent_type": judged.agent_type,
                "context_id": judged.context_id,
                "operation": evaluation.normalised,
            },
        )
        approvers = (
            people_with_role(Role.APPROVER)
            if policy.approval.emails_approvers(risk)
            else User.objects.none()
        )
        notifications.notify(request, NotificationEvent.CREATED, people=approvers)
        live.announce(request, live.CREATED)
    return CheckResult("ask", explanation, request)

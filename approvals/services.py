"""Operation checks, the approval queue, and grants. Every request, decision, expiry,
cancellation, grant and revocation is written with its audit entry in one transaction and
announced after commit (to the dashboard and to the agent waiting on the request)."""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals.models import ApprovalRequest, Grant, OperationRun, RunOutcome, Status
from approvals.selectors import approval_json, grant_list_active_for, operation_digest
from contextsvc.core import events
from contextsvc.core.errors import Conflict, InvalidRequest, NotFound
from contextsvc.core.models import AuditEntry
from contextsvc.core.services import audit_record
from profiles.models import SandboxProfile
from profiles.selectors import profile_execution
from rules import (
    Decision,
    Evaluation,
    FileOperation,
    NetworkOperation,
    Operation,
    OperationError,
    RuleSet,
    RuleSyntaxError,
    Sources,
    evaluate,
    operation_from_dict,
    parse_rule,
    parse_settings,
    parse_sources,
    propose_allow_rule,
    rule_matches,
)
from rules.model import check_context_id

SYSTEM_ACTOR = "system:approvals"


def request_group(request_id: UUID) -> str:
    return f"approval.{request_id}"


# --- Policy ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    rules: RuleSet
    sources: Sources | None
    # How the agent's executor runs what is allowed (profiles.selectors.profile_execution).
    execution: dict[str, Any] = dataclasses.field(default_factory=dict)


def policy_for(*, agent_type: str, context_id: str) -> Policy:
    """The agent type's settings.json and sources.json, plus its active grants as extra
    allow rules (a deny still wins over them)."""
    profile = SandboxProfile.objects.filter(name=agent_type, enabled=True).first()
    if profile is None:
        raise InvalidRequest(f'agent type "{agent_type}" has no enabled profile')
    rules = parse_settings(profile.rules) if profile.rules else RuleSet()
    sources = parse_sources(profile.sources) if profile.sources else None
    granted = tuple(
        parse_rule(grant.rule)
        for grant in grant_list_active_for(agent_type=agent_type, context_id=context_id)
    )
    if granted:
        rules = dataclasses.replace(rules, allow=rules.allow + granted)
    return Policy(rules, sources, profile_execution(profile))


def risk_of(operation: Operation, evaluation: Evaluation, workspace: str) -> str:
    """A reviewer's first hint: network and anything outside the workspace is high."""
    if isinstance(operation, NetworkOperation) or "\\u" in evaluation.normalised:
        return "high"
    if isinstance(operation, FileOperation):
        path = posixpath.normpath(posixpath.join(workspace, operation.path))
        inside = path == workspace or path.startswith(workspace + "/")
        if not inside:
            return "high"
        return "low" if operation.action.value == "read" else "medium"
    return "medium"


# --- Check -------------------------------------------------------------------------------------


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


# Ten years: longer than any grant is meant to live, and far from timedelta's limit.
MAX_GRANT_SECONDS = 10 * 365 * 24 * 3600


def _deadline_seconds(requested: int | None) -> int:
    if requested is None:
        return int(settings.CS_APPROVAL_DEADLINE_SECONDS)
    if not 1 <= requested <= settings.CS_APPROVAL_MAX_DEADLINE_SECONDS:
        raise InvalidRequest(
            f"deadlineSeconds must be between 1 and {settings.CS_APPROVAL_MAX_DEADLINE_SECONDS}"
        )
    return requested


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
) -> CheckResult:
    """Allow or deny at once when a rule decides; otherwise queue it for a human."""
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
    policy = policy_for(agent_type=agent_type, context_id=context_id)
    # The directory the rules judged paths against: the executor runs there or not at all.
    execution = {**policy.execution, "workspace": policy.rules.workspace(context_id)}
    evaluation = evaluate(parsed, rules=policy.rules, sources=policy.sources, context_id=context_id)
    explanation = evaluation.to_dict()
    if evaluation.decision in (Decision.ALLOW, Decision.DENY):
        # Allows too: after an incident the question is which rule let the agent do it.
        allowed = evaluation.decision == Decision.ALLOW
        entry = audit_record(
            actor=actor,
            action="approval.allow" if allowed else "approval.refuse",
            target_type="context",
            target=context_id,
            payload={
                "agent_type": agent_type,
                "operation": evaluation.normalised,
                "rule": evaluation.rule,
                "sources_entry": evaluation.sources_entry,
                # What a run report is held to: exactly this operation (run_record).
                "judged_sha256": operation_digest(parsed.to_dict()),
            },
        )
        return CheckResult(
            "allow" if allowed else "deny",
            explanation,
            operation=parsed.to_dict(),
            check_id=entry.pk,
            execution=execution,
        )
    with transaction.atomic():
        request = ApprovalRequest.objects.create(
            context_id=context_id,
            agent_type=agent_type,
            agent_instance=agent_instance,
            allocation=allocation,
            namespace=namespace,
            operation=parsed.to_dict(),
            kind=parsed.kind.value,
            normalised=evaluation.normalised,
            evaluation=explanation,
            risk=risk_of(parsed, evaluation, policy.rules.workspace(context_id)),
            execution=execution,
            requested_by=actor,
            deadline=timezone.now() + timedelta(seconds=seconds),
        )
        audit_record(
            actor=actor,
            action="approval.request",
            target_type="approval",
            target=str(request.pk),
            payload={
                "agent_type": agent_type,
                "context_id": context_id,
                "operation": evaluation.normalised,
            },
        )
        _announce(request, "approval.created")
    return CheckResult("ask", explanation, request)


# --- Decisions ---------------------------------------------------------------------------------


def _announce(request: ApprovalRequest, event_type: str) -> None:
    """To every reviewer's queue and to the agents waiting on this request. The event
    carries the request as the API shows it, so a waiting agent needs no second read."""
    events.publish(
        events.APPROVALS,
        request_group(request.pk),
        event_type=event_type,
        data=approval_json(request),
    )


def _not_pending(request_id: UUID) -> Exception:
    current = ApprovalRequest.objects.filter(pk=request_id).first()
    if current is None:
        return NotFound(f'approval request "{request_id}" not found')
    return Conflict(f"approval request {request_id} is already {current.status}")


def _finish(
    request_id: UUID, *, status: str, actor: str, reason: str = "", action: str
) -> ApprovalRequest:
    """Move a pending request to ``status``, exactly once. Must run inside a transaction."""
    now = timezone.now()
    finishing = ApprovalRequest.objects.filter(pk=request_id, status=Status.PENDING)
    if status != Status.EXPIRED:
        finishing = finishing.filter(deadline__gt=now)
    # A conditional UPDATE: of two deciders racing, exactly one changes the row.
    if not finishing.update(status=status, decided_at=now, decided_by=actor, reason=reason):
        raise _not_pending(request_id)
    request = ApprovalRequest.objects.get(pk=request_id)
    audit_record(
        actor=actor,
        action=action,
        target_type="approval",
        target=str(request.pk),
        payload={"status": status, "reason": reason, "operation": request.normalised},
    )
    _announce(request, "approval.decided")
    return request


def _decide(
    request_id: UUID, *, status: str, actor: str, reason: str, action: str
) -> ApprovalRequest:
    try:
        with transaction.atomic():
            return _finish(request_id, status=status, actor=actor, reason=reason, action=action)
    except Conflict:
        # Still pending but past its deadline: it expires now, and the answer says so.
        if expire_if_due(request_id):
            raise Conflict(f"approval request {request_id} is already expired") from None
        raise


def approval_deny(*, request_id: UUID, actor: str, reason: str) -> ApprovalRequest:
    return _decide(
        request_id, status=Status.DENIED, actor=actor, reason=reason, action="approval.deny"
    )


def approval_approve(*, request_id: UUID, actor: str, reason: str = "") -> ApprovalRequest:
    return _decide(
        request_id, status=Status.APPROVED, actor=actor, reason=reason, action="approval.approve"
    )


def approval_decide(
    *,
    request_id: UUID,
    actor: str,
    decision: str,
    reason: str = "",
    scope: str | None = None,
    expires_in_seconds: int | None = None,
    rule: str | None = None,
) -> ApprovalRequest:
    """A reviewer's decision, from the API or the dashboard: approve, deny, or approve and
    allow similar (which alone reads ``scope``, ``expires_in_seconds`` and ``rule``)."""
    if decision == "approve":
        return approval_approve(request_id=request_id, actor=actor, reason=reason)
    if decision == "deny":
        return approval_deny(request_id=request_id, actor=actor, reason=reason)
    if decision == "approve_similar":
        if not scope:
            raise InvalidRequest("scope is required")
        decided, _ = approval_approve_similar(
            request_id=request_id,
            actor=actor,
            scope=scope,
            expires_in_seconds=expires_in_seconds,
            rule=rule,
            reason=reason,
        )
        return decided
    raise InvalidRequest("decision must be approve, deny or approve_similar")


def approval_approve_similar(
    *,
    request_id: UUID,
    actor: str,
    scope: str,
    expires_in_seconds: int | None = None,
    rule: str | None = None,
    reason: str = "",
) -> tuple[ApprovalRequest, Grant]:
    """Approve, and allow operations like this one from now on: the proposed narrow rule
    (or one the reviewer wrote, which must match this operation), for this context or this
    agent type, optionally until a time."""
    if scope not in Grant.Scope.values:
        raise InvalidRequest("scope must be context or agent_type")
    if expires_in_seconds is not None and not 1 <= expires_in_seconds <= MAX_GRANT_SECONDS:
        raise InvalidRequest(f"expiresInSeconds must be between 1 and {MAX_GRANT_SECONDS}")
    if expire_if_due(request_id):
        raise Conflict(f"approval request {request_id} is already expired")
    with transaction.atomic():
        request = _finish(
            request_id,
            status=Status.APPROVED,
            actor=actor,
            reason=reason,
            action="approval.approve",
        )
        chosen = rule or proposed_rule(request)
        if chosen is None:
            raise InvalidRequest("no narrower rule can allow this operation; approve it once")
        _check_grant_rule(chosen, request)
        grant = Grant.objects.create(
            rule=chosen,
            scope=scope,
            agent_type=request.agent_type,
            context_id=request.context_id if scope == Grant.Scope.CONTEXT else "",
            expires_at=timezone.now() + timedelta(seconds=expires_in_seconds)
            if expires_in_seconds
            else None,
            created_by=actor,
            source=request,
        )
        ApprovalRequest.objects.filter(pk=request.pk).update(grant=grant)
        audit_record(
            actor=actor,
            action="grant.create",
            target_type="grant",
            target=str(grant.pk),
            payload={
                "rule": chosen,
                "scope": scope,
                "agent_type": grant.agent_type,
                "context_id": grant.context_id,
                "expires_at": grant.expires_at.isoformat() if grant.expires_at else None,
            },
        )
    request.refresh_from_db()
    return request, grant


def _workspace_template(agent_type: str) -> str | None:
    profile = SandboxProfile.objects.filter(name=agent_type).first()
    rules = (profile.rules or {}) if profile else {}
    template = rules.get("context_workspace")
    return template if isinstance(template, str) else None


def _check_grant_rule(rule: str, request: ApprovalRequest) -> None:
    try:
        parsed = parse_rule(rule)
    except RuleSyntaxError as exc:
        raise InvalidRequest(str(exc)) from None
    if parsed.pattern is None or not parsed.pattern.strip("*/: "):
        # A grant answers one request; "allow everything" is a change to the profile.
        raise InvalidRequest(
            f"rule {rule!r} would allow every {parsed.kind.value} operation; a grant must "
            "name what it allows"
        )
    matches = rule_matches(
        rule,
        operation_from_dict(request.operation),
        request.context_id,
        context_workspace=_workspace_template(request.agent_type),
    )
    if not matches:
        raise InvalidRequest(f"rule {rule!r} does not match the operation it would approve")


def approval_cancel(*, request_id: UUID, actor: str) -> ApprovalRequest:
    with transaction.atomic():
        return _finish(request_id, status=Status.CANCELLED, actor=actor, action="approval.cancel")


def expire_if_due(request_id: UUID) -> bool:
    """Expire one request whose deadline has passed (expiry means deny)."""
    due = ApprovalRequest.objects.filter(
        pk=request_id, status=Status.PENDING, deadline__lte=timezone.now()
    ).exists()
    if not due:
        return False
    with transaction.atomic():
        try:
            _finish(
                request_id,
                status=Status.EXPIRED,
                actor=SYSTEM_ACTOR,
                reason="deadline passed",
                action="approval.expire",
            )
        except (Conflict, NotFound):
            return False  # somebody else finished it first
    return True


def expire_due() -> int:
    ids = list(
        ApprovalRequest.objects.filter(
            status=Status.PENDING, deadline__lte=timezone.now()
        ).values_list("pk", flat=True)[:500]
    )
    return sum(expire_if_due(request_id) for request_id in ids)


# --- Grants ------------------------------------------------------------------------------------


def proposed_rule(request: ApprovalRequest) -> str | None:
    policy = policy_for(agent_type=request.agent_type, context_id=request.context_id)
    return propose_allow_rule(
        operation_from_dict(request.operation),
        rules=policy.rules,
        sources=policy.sources,
        context_id=request.context_id,
    )


def approval_similar(
    request: ApprovalRequest,
    *,
    rule: str | None = None,
    scope: str = "agent_type",
    limit: int = 1000,
) -> dict[str, Any]:
    """The rule "approve and allow similar" would grant (the proposal, unless the reviewer
    wrote one) and how many of the ``limit`` newest earlier requests in that scope it would
    have matched — the reviewer's measure of how much they are about to allow."""
    if scope not in Grant.Scope.values:
        raise InvalidRequest("scope must be context or agent_type")
    chosen = rule or proposed_rule(request)
    if not chosen:
        return {"rule": None, "scope": scope, "matches": 0}
    try:
        parsed = parse_rule(chosen)
    except RuleSyntaxError as exc:
        raise InvalidRequest(str(exc)) from None
    past = ApprovalRequest.objects.filter(agent_type=request.agent_type).exclude(pk=request.pk)
    if scope == Grant.Scope.CONTEXT:
        past = past.filter(context_id=request.context_id)
    workspace = _workspace_template(request.agent_type)
    recent = past.order_by("-created_at").values_list("operation", "context_id")[:limit]
    matches = sum(
        1
        for operation, context_id in recent
        if rule_matches(
            parsed, operation_from_dict(operation), context_id, context_workspace=workspace
        )
    )
    return {"rule": chosen, "scope": scope, "matches": matches}


def grant_revoke(*, grant_id: int, actor: str) -> Grant:
    with transaction.atomic():
        grant = Grant.objects.select_for_update().filter(pk=grant_id).first()
        if grant is None:
            raise NotFound(f"grant {grant_id} not found")
        if grant.revoked_at is not None:
            raise Conflict(f"grant {grant_id} is already revoked")
        grant.revoked_at = timezone.now()
        grant.revoked_by = actor
        grant.save(update_fields=["revoked_at", "revoked_by"])
        audit_record(
            actor=actor,
            action="grant.revoke",
            target_type="grant",
            target=str(grant.pk),
            payload={"rule": grant.rule},
        )
    return grant


# --- Runs --------------------------------------------------------------------------------------


def _allowed_operation(
    *, request_id: UUID | None, check_id: int | None, actor: str, context_id: str
) -> tuple[ApprovalRequest | None, AuditEntry | None, str, str]:
    """The decision a run report refers to: (request, check entry, agent type, digest of
    the operation it allowed). Only the credential that asked may report, and only an
    allowed operation in the context it was asked for."""
    if (request_id is None) == (check_id is None):
        raise InvalidRequest("give exactly one of requestId and checkId")
    if request_id is not None:
        request = ApprovalRequest.objects.filter(pk=request_id, requested_by=actor).first()
        if request is None:
            raise NotFound(f"approval request {request_id} not found")
        if request.status != Status.APPROVED:
            raise Conflict(f"approval request {request_id} is {request.status}, not approved")
        if request.context_id != context_id:
            raise InvalidRequest(f"contextId: approval request {request_id} is for another context")
        return request, None, request.agent_type, operation_digest(request.operation)
    assert check_id is not None  # exactly one of the two was given
    entry = AuditEntry.objects.filter(pk=check_id, actor=actor).first()
    if entry is None or entry.action not in ("approval.allow", "approval.refuse"):
        raise NotFound(f"check {check_id} not found")
    if entry.action != "approval.allow":
        raise Conflict(f"check {check_id} was denied")
    if entry.target != context_id:
        raise InvalidRequest(f"contextId: check {check_id} is for another context")
    return (
        None,
        entry,
        str(entry.payload.get("agent_type", "")),
        str(entry.payload.get("judged_sha256", "")),
    )


def run_record(
    *,
    context_id: str,
    request_id: UUID | None,
    check_id: int | None,
    command: str,
    outcome: str,
    exit_status: int | None,
    signal: int | None,
    duration_ms: int,
    stdout_bytes: int,
    stderr_bytes: int,
    truncated: bool,
    actor: str,
) -> OperationRun:
    """Keep what an executor ran next to the decision that allowed it. The command must be
    the one judged: a report of anything else is refused, and the refusal is audited (an
    executor that runs something else than it asked about is what approvals exist to
    catch)."""
    if outcome not in RunOutcome.values:
        raise InvalidRequest(f"outcome must be one of {', '.join(RunOutcome.values)}")
    request, entry, agent_type, judged = _allowed_operation(
        request_id=request_id, check_id=check_id, actor=actor, context_id=context_id
    )
    target = str(request.pk) if request is not None else str(check_id)
    target_type = "approval" if request is not None else "check"
    if operation_digest({"kind": "shell", "command": command}) != judged:
        audit_record(
            actor=actor,
            action="operation.run_mismatch",
            target_type=target_type,
            target=target,
            payload={"context_id": context_id, "reported": command[:2000]},
        )
        raise Conflict("the command reported is not the command that was judged")
    try:
        with transaction.atomic():
            run = OperationRun.objects.create(
                request=request,
                check_entry=entry,
                context_id=context_id,
                agent_type=agent_type,
                command=command,
                outcome=outcome,
                exit_status=exit_status,
                signal=signal,
                duration_ms=duration_ms,
                stdout_bytes=stdout_bytes,
                stderr_bytes=stderr_bytes,
                truncated=truncated,
                reported_by=actor,
            )
            audit_record(
                actor=actor,
                action="operation.run",
                target_type=target_type,
                target=target,
                payload={
                    "run": str(run.pk),
                    "context_id": context_id,
                    "outcome": outcome,
                    "exit_status": exit_status,
                    "signal": signal,
                    "duration_ms": duration_ms,
                    "truncated": truncated,
                },
            )
    except IntegrityError:
        # One run per decision: the database's unique key, not a check that could race.
        raise Conflict(f"the run of {target_type} {target} was already reported") from None
    return run

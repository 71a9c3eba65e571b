"""Operation checks, the approval queue, and grants. Every request, decision, expiry,
cancellation, escalation, grant and revocation is written with its audit entry in one
transaction and announced after commit (to the dashboard and to the agent waiting on the
request); the notifications it causes are written in the same transaction and sent after
it (approvals/notifications.py)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from approvals import links, live, notifications
from approvals.models import (
    ApprovalRequest,
    ApprovalSignoff,
    Grant,
    NotificationEvent,
    OperationRun,
    RunOutcome,
    Status,
)
from approvals.risk import risk_notes, surroundings
from approvals.selectors import approval_version, grant_list_active_for, operation_digest
from contextsvc.core.auth import Role
from contextsvc.core.errors import Conflict, Forbidden, InvalidRequest, NotFound
from contextsvc.core.models import ApiClient, AuditEntry
from contextsvc.core.services import audit_record
from contextsvc.core.users import people_with_role
from profiles.approvalpolicy import ApprovalPolicy
from profiles.models import SandboxProfile
from profiles.selectors import profile_approval_policy, profile_execution
from rules import (
    Decision,
    Evaluation,
    FileOperation,
    NetworkOperation,
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
from rules.risk import assess

SYSTEM_ACTOR = "system:approvals"
request_group = live.request_group


# --- Policy ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    rules: RuleSet
    sources: Sources | None
    # How the agent's executor runs what is allowed (profiles.selectors.profile_execution).
    execution: dict[str, Any] = dataclasses.field(default_factory=dict)
    approval: ApprovalPolicy = dataclasses.field(default_factory=ApprovalPolicy)
    # Rule text → the grant that added it (only rules the profile does not have itself:
    # an allow by those is the profile's, not the grant's).
    grants: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def contained(self) -> bool:
        """The agent's executor holds each command to its judged effects (bubblewrap and
        Landlock: cs_agent refuses to run a namespaces profile without them), so an
        explicitly allowed interpreter runs contained instead of being asked about."""
        return self.execution.get("isolation") == "namespaces"


def policy_for(*, agent_type: str, context_id: str) -> Policy:
    """The agent type's settings.json and sources.json, plus its active grants as extra
    allow rules (a deny still wins over them)."""
    profile = SandboxProfile.objects.filter(name=agent_type, enabled=True).first()
    if profile is None:
        raise InvalidRequest(f'agent type "{agent_type}" has no enabled profile')
    rules = parse_settings(profile.rules) if profile.rules else RuleSet()
    sources = parse_sources(profile.sources) if profile.sources else None
    own = {rule.text for rule in rules.allow}
    # This context's grants before the agent type's: a hit is counted on the narrower one.
    active = sorted(
        grant_list_active_for(agent_type=agent_type, context_id=context_id),
        key=lambda grant: (grant.scope != Grant.Scope.CONTEXT, grant.pk),
    )
    granted = tuple(parse_rule(grant.rule) for grant in active)
    if granted:
        rules = dataclasses.replace(rules, allow=rules.allow + granted)
    grants: dict[str, int] = {}
    for grant in active:
        if grant.rule not in own:
            grants.setdefault(grant.rule, grant.pk)
    return Policy(
        rules, sources, profile_execution(profile), profile_approval_policy(profile), grants
    )


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
    rules judged paths against (it runs there or not at all) and, for a shell command,
    the effects it was judged to have, which it is held to (rules.effects)."""
    execution = {**policy.execution, "workspace": workspace}
    if evaluation.effects is not None:
        execution["effects"] = evaluation.effects
    return execution


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
    workspace = policy.rules.workspace(context_id)
    evaluation = evaluate(
        parsed,
        rules=policy.rules,
        sources=policy.sources,
        context_id=context_id,
        contained=policy.contained,
    )
    execution = _execution(policy, workspace, evaluation)
    explanation = evaluation.to_dict()
    if evaluation.decision in (Decision.ALLOW, Decision.DENY):
        # Allows too: after an incident the question is which rule let the agent do it.
        allowed = evaluation.decision == Decision.ALLOW
        hit = _grants_hit(policy, evaluation) if allowed else []
        payload: dict[str, Any] = {
            "agent_type": agent_type,
            "operation": evaluation.normalised,
            "rule": evaluation.rule,
            "sources_entry": evaluation.sources_entry,
            # What a run report is held to: exactly this operation (run_record).
            "judged_sha256": operation_digest(parsed.to_dict()),
        }
        if evaluation.contained:
            # Allowed because the executor contains it, not because it was understood.
            payload["contained"] = True
        if hit:
            payload["grants"] = hit
        with transaction.atomic():
            entry = audit_record(
                actor=actor,
                action="approval.allow" if allowed else "approval.refuse",
                target_type="context",
                target=context_id,
                payload=payload,
            )
            _count_rule_decision(
                agent_type=agent_type,
                decision=evaluation.decision.value,
                rule=evaluation.rule or evaluation.sources_entry,
            )
            if hit:
                Grant.objects.filter(pk__in=hit).update(
                    hits=F("hits") + 1, last_hit_at=timezone.now()
                )
        return CheckResult(
            "allow" if allowed else "deny",
            explanation,
            operation=parsed.to_dict(),
            check_id=entry.pk,
            execution=execution,
        )
    risk = assess(parsed, evaluation, workspace).value
    around = surroundings(allocation=allocation, namespace=namespace, agent_type=agent_type)
    now = timezone.now()
    after = policy.approval.escalate_after
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
            risk=risk,
            risk_notes=risk_notes(parsed, evaluation, workspace=workspace, around=around),
            approvals_required=policy.approval.approvals_required(risk),
            execution=execution,
            requested_by=actor,
            deadline=now + timedelta(seconds=seconds),
            escalate_at=now + timedelta(seconds=seconds * after) if after else None,
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
        approvers = (
            people_with_role(Role.APPROVER)
            if policy.approval.emails_approvers(risk)
            else User.objects.none()
        )
        notifications.notify(request, NotificationEvent.CREATED, people=approvers)
        live.announce(request, live.CREATED)
    return CheckResult("ask", explanation, request)


# --- Decisions ---------------------------------------------------------------------------------


def _not_pending(request_id: UUID) -> Exception:
    current = ApprovalRequest.objects.filter(pk=request_id).first()
    if current is None:
        return NotFound(f'approval request "{request_id}" not found')
    if current.status == Status.PENDING:
        return Conflict(f"approval request {request_id} is past its deadline")
    return Conflict(f"approval request {request_id} is already {current.status}")


def _finish(
    request_id: UUID,
    *,
    status: str,
    actor: str,
    reason: str = "",
    action: str,
    details: dict[str, Any] | None = None,
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
        payload={
            "status": status,
            "reason": reason,
            "operation": request.normalised,
            **(details or {}),
        },
    )
    notifications.notify(request, NotificationEvent.DECIDED)
    live.announce(request, live.DECIDED)
    return request


def _pending_locked(request_id: UUID) -> ApprovalRequest:
    """The request, locked for this transaction, if it may still be decided."""
    request = ApprovalRequest.objects.select_for_update(of=("self",)).filter(pk=request_id).first()
    if request is None or request.status != Status.PENDING or request.deadline <= timezone.now():
        raise _not_pending(request_id)
    return request


def _check_version(request: ApprovalRequest, version: str | None, *, approving: bool) -> None:
    """A decision decides the request as its decider saw it. One that names an older
    version — the request was edited, or approved by someone, since — is refused and told
    what it now is. Approving a request a reviewer edited must name the version: under the
    two-person rule the second approver approves the edited text explicitly, never the
    agent's original that an old page or an e-mail showed. Denying needs none: a denial is
    safe whatever was seen."""
    current = approval_version(request)
    if version == current or (version is None and (not approving or not request.edit)):
        return
    signoffs = request.signoffs.count()
    shown = request.edit["normalised"] if request.edit else request.normalised
    edited = f", edited by {request.edit['by']}" if request.edit else ""
    state = (
        f"it now reads {shown!r}{edited}, with {signoffs} of {request.approvals_required} "
        f"approvals (version {current})"
    )
    if version is None:
        raise Conflict(
            f"approval request {request.pk} was edited since it was asked: {state}; "
            "approve it again naming that version"
        )
    raise Conflict(f"approval request {request.pk} changed since version {version}: {state}")


def _decide(
    request_id: UUID,
    work: Callable[[ApprovalRequest], ApprovalRequest],
    *,
    version: str | None = None,
    approving: bool = True,
) -> ApprovalRequest:
    """``work`` on the locked pending request, in one transaction, if it is still the
    version the decider saw (:func:`_check_version`). Concurrent deciders take turns on
    the row lock; the second finds the request decided (409)."""
    try:
        with transaction.atomic():
            request = _pending_locked(request_id)
            _check_version(request, version, approving=approving)
            return work(request)
    except Conflict:
        # Still pending but past its deadline: it expires now, and the answer says so.
        if expire_if_due(request_id):
            raise Conflict(f"approval request {request_id} is already expired") from None
        raise


def _person(actor: str) -> str:
    """Who stands behind an actor: an API client a person created is that person (its
    token is theirs to use), anything else itself."""
    if actor.startswith("api:"):
        creator = (
            ApiClient.objects.filter(name=actor.removeprefix("api:"))
            .values_list("created_by__username", flat=True)
            .first()
        )
        if creator:
            return f"user:{creator}"
    return actor


def _refuse_own(request: ApprovalRequest, actor: str) -> None:
    # An agent's token that also holds the approver scope, or a person who asked through the
    # API: the one who asks never approves, and never counts as one of two approvers — nor
    # does the person who created the asking client, or a client they created.
    if actor == request.requested_by:
        raise Forbidden(f"{actor} asked for this operation and cannot approve it")
    person = _person(actor)
    if person == _person(request.requested_by):
        raise Forbidden(
            f"{actor} is {person}, who asked for this operation (as {request.requested_by}), "
            "and cannot approve it"
        )


def _approve(request: ApprovalRequest, *, actor: str, reason: str, via: str) -> ApprovalRequest:
    """One approver's approval of the locked pending request: it is approved when it has
    as many distinct approvers as it requires — distinct people: a person and an API
    client they created are one — and waits for the next one otherwise."""
    person = _person(actor)
    for earlier in ApprovalSignoff.objects.filter(request=request).values_list("actor", flat=True):
        if earlier != actor and _person(earlier) == person:
            raise Conflict(
                f"{actor} is {person}, who has already approved approval request "
                f"{request.pk} as {earlier}: it needs another approver"
            )
    try:
        with transaction.atomic():
            ApprovalSignoff.objects.create(request=request, actor=actor, reason=reason)
    except IntegrityError:
        raise Conflict(
            f"{actor} has already approved approval request {request.pk}: it needs another approver"
        ) from None
    approvers = list(
        ApprovalSignoff.objects.filter(request=request)
        .order_by("at", "id")
        .values_list("actor", flat=True)
    )
    edited = {"edited": request.edit["normalised"]} if request.edit else {}
    if len(approvers) < request.approvals_required:
        audit_record(
            actor=actor,
            action="approval.signoff",
            target_type="approval",
            target=str(request.pk),
            payload={
                "approvals": len(approvers),
                "required": request.approvals_required,
                "operation": request.normalised,
                "via": via,
                **edited,
            },
        )
        live.announce(ApprovalRequest.objects.get(pk=request.pk), live.CHANGED)
        return request
    return _finish(
        request.pk,
        status=Status.APPROVED,
        actor=actor,
        reason=reason,
        action="approval.approve",
        details={"approvers": approvers, "via": via, **edited},
    )


def approval_deny(
    *, request_id: UUID, actor: str, reason: str, via: str = "api", version: str | None = None
) -> ApprovalRequest:
    return _decide(
        request_id,
        lambda request: _finish(
            request.pk,
            status=Status.DENIED,
            actor=actor,
            reason=reason,
            action="approval.deny",
            details={"via": via},
        ),
        version=version,
        approving=False,
    )


def approval_approve(
    *,
    request_id: UUID,
    actor: str,
    reason: str = "",
    via: str = "api",
    version: str | None = None,
) -> ApprovalRequest:
    def work(request: ApprovalRequest) -> ApprovalRequest:
        _refuse_own(request, actor)
        return _approve(request, actor=actor, reason=reason, via=via)

    return _decide(request_id, work, version=version)


def _judge_edit(request: ApprovalRequest, raw: Any) -> tuple[dict[str, Any], Policy]:
    """The reviewer's edit judged by the agent type's rules now, exactly as an agent's
    request is: a deny (a deny rule, sources.json) refuses the edit, since an edit can
    never allow what the rules forbid."""
    if not isinstance(raw, dict):
        raise InvalidRequest("operation must be an object: the operation to approve instead")
    try:
        edited = operation_from_dict(raw)
    except OperationError as exc:
        raise InvalidRequest(f"operation.{exc}") from None
    asked = operation_from_dict(request.operation)
    if edited.kind != asked.kind:
        raise InvalidRequest(f"an edit keeps the operation's kind ({asked.kind.value})")
    if isinstance(asked, FileOperation) and edited.action != asked.action:  # type: ignore[union-attr]
        raise InvalidRequest(f"an edit keeps a file operation's action ({asked.action.value})")
    if isinstance(asked, NetworkOperation) and edited.direction != asked.direction:  # type: ignore[union-attr]
        raise InvalidRequest(
            f"an edit keeps a network operation's direction ({asked.direction.value})"
        )
    if edited.to_dict() == asked.to_dict():
        raise InvalidRequest("the edit is the operation as asked: approve it instead")
    policy = policy_for(agent_type=request.agent_type, context_id=request.context_id)
    evaluation = evaluate(
        edited,
        rules=policy.rules,
        sources=policy.sources,
        context_id=request.context_id,
        contained=policy.contained,
    )
    if evaluation.decision == Decision.DENY:
        raise InvalidRequest(
            f"the edited operation is denied by {evaluation.rule or evaluation.sources_entry}: "
            "an edit cannot allow what the rules deny"
        )
    workspace = policy.rules.workspace(request.context_id)
    around = surroundings(
        allocation=request.allocation, namespace=request.namespace, agent_type=request.agent_type
    )
    edit = {
        "operation": edited.to_dict(),
        "normalised": evaluation.normalised,
        "evaluation": evaluation.to_dict(),
        "risk": assess(edited, evaluation, workspace).value,
        "riskNotes": risk_notes(edited, evaluation, workspace=workspace, around=around),
    }
    if evaluation.effects is not None:
        # What the executor holds the edited command to (approval_json sends these).
        edit["effects"] = evaluation.effects
    return edit, policy


def approval_edit_check(*, request_id: UUID, operation: Any) -> dict[str, Any]:
    """How the rules judge a reviewer's edit, before it is approved (nothing is written):
    the edit as ``edit`` would hold it, or the refusal approving it would get."""
    found = ApprovalRequest.objects.filter(pk=request_id).first()
    if found is None:
        raise NotFound(f'approval request "{request_id}" not found')
    edit, _ = _judge_edit(found, operation)
    return edit


def approval_approve_edited(
    *,
    request_id: UUID,
    actor: str,
    operation: Any,
    reason: str = "",
    via: str = "api",
    version: str | None = None,
) -> ApprovalRequest:
    """Approve the reviewer's version of the operation instead of the agent's: the agent
    is told to run the edit (decision ``allow_edited``); the request keeps both."""
    found = ApprovalRequest.objects.filter(pk=request_id).first()
    if found is None:
        raise NotFound(f'approval request "{request_id}" not found')
    edit, policy = _judge_edit(found, operation)

    def work(request: ApprovalRequest) -> ApprovalRequest:
        _refuse_own(request, actor)
        given = ApprovalSignoff.objects.filter(request=request).count()
        if given:
            raise Conflict(
                f"approval request {request_id} already has {given} of "
                f"{request.approvals_required} approvals: approve it as it stands, or deny it"
            )
        request.edit = {**edit, "by": actor, "at": timezone.now().isoformat()}
        # An edit never lowers what the asked operation required: a reviewer alone cannot
        # turn a two-person operation into a one-person one by rewriting it.
        request.approvals_required = max(
            request.approvals_required, policy.approval.approvals_required(edit["risk"])
        )
        request.save(update_fields=["edit", "approvals_required"])
        audit_record(
            actor=actor,
            action="approval.edit",
            target_type="approval",
            target=str(request.pk),
            payload={
                "operation": request.normalised,
                "edited": edit["normalised"],
                "edited_operation": edit["operation"],
                "risk": edit["risk"],
            },
        )
        return _approve(request, actor=actor, reason=reason, via=via)

    return _decide(request_id, work, version=version)


def approval_decide(
    *,
    request_id: UUID,
    actor: str,
    decision: str,
    reason: str = "",
    scope: str | None = None,
    expires_in_seconds: int | None = None,
    rule: str | None = None,
    operation: Any = None,
    via: str = "api",
    version: str | None = None,
) -> ApprovalRequest:
    """A reviewer's decision, from the API, the dashboard or an e-mail link: approve, deny,
    approve an edited operation (which alone reads ``operation``), or approve and allow
    similar (which alone reads ``scope``, ``expires_in_seconds`` and ``rule``). ``version``:
    the request as the decider saw it (:func:`_check_version`)."""
    if operation is not None and decision != "approve_edited":
        raise InvalidRequest("operation goes only with approve_edited")
    if decision == "approve":
        return approval_approve(
            request_id=request_id, actor=actor, reason=reason, via=via, version=version
        )
    if decision == "deny":
        return approval_deny(
            request_id=request_id, actor=actor, reason=reason, via=via, version=version
        )
    if decision == "approve_edited":
        if operation is None:
            raise InvalidRequest("operation is required with approve_edited")
        return approval_approve_edited(
            request_id=request_id,
            actor=actor,
            operation=operation,
            reason=reason,
            via=via,
            version=version,
        )
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
            via=via,
            version=version,
        )
        return decided
    raise InvalidRequest("decision must be approve, deny, approve_edited or approve_similar")


def approval_decide_by_link(
    *, token: str, request_id: UUID, user: User, reason: str = "", version: str | None = None
) -> ApprovalRequest:
    """The decision an e-mail's link names, confirmed by the person it was sent to, signed
    in, on the version of the request the confirmation page showed; the link is used up
    with it (in one transaction)."""
    try:
        with transaction.atomic():
            link = links.link_open(token=token, request_id=request_id, user=user, for_update=True)
            link.used_at = timezone.now()
            link.save(update_fields=["used_at"])
            return approval_decide(
                request_id=request_id,
                actor=f"user:{user.get_username()}",
                decision=link.decision,
                reason=reason,
                via="email link",
                version=version,
            )
    except Conflict:
        if expire_if_due(request_id):
            raise Conflict(f"approval request {request_id} is already expired") from None
        raise


def approval_approve_similar(
    *,
    request_id: UUID,
    actor: str,
    scope: str,
    expires_in_seconds: int | None = None,
    rule: str | None = None,
    reason: str = "",
    via: str = "api",
    version: str | None = None,
) -> tuple[ApprovalRequest, Grant]:
    """Approve, and allow operations like this one from now on: the proposed narrow rule
    (or one the reviewer wrote, which must match this operation), for this context or this
    agent type, optionally until a time."""
    if scope not in Grant.Scope.values:
        raise InvalidRequest("scope must be context or agent_type")
    if expires_in_seconds is not None and not 1 <= expires_in_seconds <= MAX_GRANT_SECONDS:
        raise InvalidRequest(f"expiresInSeconds must be between 1 and {MAX_GRANT_SECONDS}")
    made: list[Grant] = []

    def work(request: ApprovalRequest) -> ApprovalRequest:
        _refuse_own(request, actor)
        if request.approvals_required > 1:
            # A grant would let the next such operation through with no approver at all.
            raise InvalidRequest(
                "an operation that needs two approvers is approved once, never allowed as similar"
            )
        chosen = rule or proposed_rule(request)
        if chosen is None:
            raise InvalidRequest("no narrower rule can allow this operation; approve it once")
        _check_grant_rule(chosen, request)
        decided = _approve(request, actor=actor, reason=reason, via=via)
        grant = Grant.objects.create(
            rule=chosen,
            scope=scope,
            agent_type=decided.agent_type,
            context_id=decided.context_id if scope == Grant.Scope.CONTEXT else "",
            expires_at=timezone.now() + timedelta(seconds=expires_in_seconds)
            if expires_in_seconds
            else None,
            created_by=actor,
            source=decided,
        )
        ApprovalRequest.objects.filter(pk=decided.pk).update(grant=grant)
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
        made.append(grant)
        return decided

    decided = _decide(request_id, work, version=version)
    decided.refresh_from_db()
    return decided, made[0]


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


# --- Escalation --------------------------------------------------------------------------------


def escalate_if_due(request_id: UUID) -> bool:
    """Tell the agent type's escalation group (e-mail, and the channels that want
    escalations) about a request still undecided past its profile's ``escalateAfter``.
    Once per request."""
    now = timezone.now()
    with transaction.atomic():
        due = ApprovalRequest.objects.filter(
            pk=request_id,
            status=Status.PENDING,
            escalated_at__isnull=True,
            escalate_at__lte=now,
            deadline__gt=now,
        )
        if not due.update(escalated_at=now):
            return False
        request = ApprovalRequest.objects.get(pk=request_id)
        policy = profile_approval_policy(
            SandboxProfile.objects.filter(name=request.agent_type).first()
        )
        group = people_with_role(Role.APPROVER).filter(username__in=policy.escalate_to)
        made = notifications.notify(request, NotificationEvent.ESCALATED, people=group)
        audit_record(
            actor=SYSTEM_ACTOR,
            action="approval.escalate",
            target_type="approval",
            target=str(request.pk),
            payload={
                "emailed": sorted(d.target for d in made if d.medium == d.Medium.EMAIL),
                "channels": sorted(d.target for d in made if d.medium != d.Medium.EMAIL),
                "operation": request.normalised,
            },
        )
        live.announce(request, live.CHANGED)
    return True


def escalate_due() -> int:
    now = timezone.now()
    ids = list(
        ApprovalRequest.objects.filter(
            status=Status.PENDING, escalated_at__isnull=True, escalate_at__lte=now
        ).values_list("pk", flat=True)[:500]
    )
    return sum(escalate_if_due(request_id) for request_id in ids)


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
        return request, None, request.agent_type, operation_digest(request.effective_operation)
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


REFUSED_ACTIONS = ("read", "write", "delete", "network")
MAX_REFUSED = 20
MAX_REFUSED_PATH = 4096
_SANDBOX_VALUES = {"network": ("pod", "none"), "memory": ("cgroup", "rlimit"),
                   "processes": ("cgroup", "rlimit")}  # fmt: skip


def _refused_effects(items: list[Any]) -> list[dict[str, str]]:
    if len(items) > MAX_REFUSED:
        raise InvalidRequest(f"refusedEffects holds at most {MAX_REFUSED} items")
    checked = []
    for index, item in enumerate(items):
        where = f"refusedEffects[{index}]"
        if not isinstance(item, dict) or set(item) != {"action", "path", "error"}:
            raise InvalidRequest(f"{where} must be an object with action, path and error")
        if item["action"] not in REFUSED_ACTIONS:
            raise InvalidRequest(f"{where}.action must be one of {', '.join(REFUSED_ACTIONS)}")
        for key, limit in (("path", MAX_REFUSED_PATH), ("error", 200)):
            if not isinstance(item[key], str) or len(item[key]) > limit:
                raise InvalidRequest(f"{where}.{key} must be a string of at most {limit}")
        checked.append({key: str(item[key]) for key in ("action", "path", "error")})
    return checked


def _sandbox(given: dict[str, Any]) -> dict[str, str]:
    unknown = sorted(set(given) - set(_SANDBOX_VALUES))
    if unknown:
        raise InvalidRequest(f"sandbox.{unknown[0]} is not a field of a run's sandbox")
    for key, value in given.items():
        if value not in _SANDBOX_VALUES[key]:
            raise InvalidRequest(f"sandbox.{key} must be one of {', '.join(_SANDBOX_VALUES[key])}")
    return {key: str(value) for key, value in given.items()}


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
    refused_effects: list[Any] | None = None,
    sandbox: dict[str, Any] | None = None,
) -> OperationRun:
    """Keep what an executor ran next to the decision that allowed it. The command must be
    the one judged: a report of anything else is refused, and the refusal is audited (an
    executor that runs something else than it asked about is what approvals exist to
    catch)."""
    if outcome not in RunOutcome.values:
        raise InvalidRequest(f"outcome must be one of {', '.join(RunOutcome.values)}")
    refused = _refused_effects(refused_effects or [])
    contained = _sandbox(sandbox or {})
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
                refused_effects=refused,
                sandbox=contained,
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
                    "refused_effects": refused,
                    "sandbox": contained,
                },
            )
    except IntegrityError:
        # One run per decision: the database's unique key, not a check that could race.
        raise Conflict(f"the run of {target_type} {target} was already reported") from None
    if request is not None:
        live.announce(request, live.RAN)
    return run

"""A human's decision on a pending request, from the API, the dashboard or an e-mail
link: approve (one of the approvers it needs), deny, approve an edited operation, or
approve and allow similar (a grant). Each decides the request as its decider saw it (its
version), on the row locked for the transaction; one that comes after the deadline
expires the request instead (approvals/services/expiry.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals import links, live
from approvals.models import (
    DECISION_KIND_MESSAGE,
    ApprovalRequest,
    ApprovalSignoff,
    DecisionKind,
    Grant,
    Status,
)
from approvals.risk import risk_notes, surroundings
from approvals.selectors import approval_version
from approvals.services.expiry import expire_if_due
from approvals.services.grants import (
    MAX_GRANT_SECONDS,
    check_grant_rule,
    grant_create,
    proposed_rule,
)
from approvals.services.lifecycle import finish, not_pending
from approvals.services.policy import Policy, policy_for
from contextsvc.core.models import ApiClient
from contextsvc.core.services import audit_record
from contextsvc.infra.errors import Conflict, Forbidden, InvalidRequest, NotFound
from rules import (
    Decision,
    FileOperation,
    NetworkOperation,
    OperationError,
    evaluate,
    operation_from_dict,
)
from rules.risk import assess


def _pending_locked(request_id: UUID) -> ApprovalRequest:
    """The request, locked for this transaction, if it may still be decided."""
    request = ApprovalRequest.objects.select_for_update(of=("self",)).filter(pk=request_id).first()
    if request is None or request.status != Status.PENDING or request.deadline <= timezone.now():
        raise not_pending(request_id)
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
            team_id=request.team_id,
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
    return finish(
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
        lambda request: finish(
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
    policy = policy_for(
        agent_type=request.agent_type, context_id=request.context_id, team_id=request.team_id
    )
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
        # What the executor holds the edited command to (shapes.execution_of answers these).
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
            team_id=request.team_id,
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


@dataclass(frozen=True)
class ReviewerDecision:
    """A reviewer's decision as the API's body and the dashboard's form give it, parsed by
    one declaration (approvals/contract.parse_decision); its attributes are
    :func:`approval_decide`'s arguments."""

    decision: str
    reason: str = ""
    scope: str | None = None
    expires_in_seconds: int | None = None
    rule: str | None = None
    operation: Any = None
    version: str | None = None

    def arguments(self) -> dict[str, Any]:
        return asdict(self)


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
    if operation is not None and decision != DecisionKind.APPROVE_EDITED:
        raise InvalidRequest("operation goes only with approve_edited")
    if decision == DecisionKind.APPROVE:
        return approval_approve(
            request_id=request_id, actor=actor, reason=reason, via=via, version=version
        )
    if decision == DecisionKind.DENY:
        return approval_deny(
            request_id=request_id, actor=actor, reason=reason, via=via, version=version
        )
    if decision == DecisionKind.APPROVE_EDITED:
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
    if decision == DecisionKind.APPROVE_SIMILAR:
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
    raise InvalidRequest(DECISION_KIND_MESSAGE)


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
        check_grant_rule(chosen, request)
        decided = _approve(request, actor=actor, reason=reason, via=via)
        grant = grant_create(
            source=decided,
            rule=chosen,
            scope=scope,
            expires_in_seconds=expires_in_seconds,
            actor=actor,
        )
        made.append(grant)
        return decided

    decided = _decide(request_id, work, version=version)
    decided.refresh_from_db()
    return decided, made[0]

"""Grants: the narrow allow rules "approve and allow similar" adds (what would be proposed,
how much it would have matched, the grant made from a request, its rule's check), and
their revocation. The check counts their hits (approvals/services/check.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals.models import ApprovalRequest, Grant
from approvals.services.policy import policy_for
from contextsvc.core.services import audit_record
from contextsvc.core.teams import Reach
from contextsvc.infra.errors import Conflict, InvalidRequest, NotFound
from profiles.models import SandboxProfile
from rules import RuleSyntaxError, operation_from_dict, parse_rule, propose_allow_rule, rule_matches

# Ten years: longer than any grant is meant to live, and far from timedelta's limit.
MAX_GRANT_SECONDS = 10 * 365 * 24 * 3600


def _workspace_template(agent_type: str) -> str | None:
    profile = SandboxProfile.objects.filter(name=agent_type).first()
    rules = (profile.rules or {}) if profile else {}
    template = rules.get("context_workspace")
    return template if isinstance(template, str) else None


def check_grant_rule(rule: str, request: ApprovalRequest) -> None:
    """A rule a grant may hold: it parses, names what it allows, and matches the operation
    of the request it would approve."""
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


def proposed_rule(request: ApprovalRequest) -> str | None:
    policy = policy_for(
        agent_type=request.agent_type, context_id=request.context_id, team_id=request.team_id
    )
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
    # What it would have matched of its own team's past requests (a grant allows no other's).
    past = ApprovalRequest.objects.filter(agent_type=request.agent_type, team=request.team).exclude(
        pk=request.pk
    )
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


def grant_create(
    *, source: ApprovalRequest, rule: str, scope: str, expires_in_seconds: int | None, actor: str
) -> Grant:
    """The grant that approving ``source`` as similar makes, linked to it, with its audit
    entry: inside that decision's transaction (decisions.approval_approve_similar)."""
    grant = Grant.objects.create(
        rule=rule,
        scope=scope,
        agent_type=source.agent_type,
        context_id=source.context_id if scope == Grant.Scope.CONTEXT else "",
        expires_at=timezone.now() + timedelta(seconds=expires_in_seconds)
        if expires_in_seconds
        else None,
        created_by=actor,
        source=source,
        team_id=source.team_id,
    )
    ApprovalRequest.objects.filter(pk=source.pk).update(grant=grant)
    audit_record(
        actor=actor,
        team_id=grant.team_id,
        action="grant.create",
        target_type="grant",
        target=str(grant.pk),
        payload={
            "rule": rule,
            "scope": scope,
            "agent_type": grant.agent_type,
            "context_id": grant.context_id,
            "expires_at": grant.expires_at.isoformat() if grant.expires_at else None,
        },
    )
    return grant


def grant_revoke(*, grant_id: int, actor: str, reach: Reach) -> Grant:
    with transaction.atomic():
        grant = reach.narrow(Grant.objects.select_for_update().filter(pk=grant_id)).first()
        if grant is None:
            raise NotFound(f"grant {grant_id} not found")
        if grant.revoked_at is not None:
            raise Conflict(f"grant {grant_id} is already revoked")
        grant.revoked_at = timezone.now()
        grant.revoked_by = actor
        grant.save(update_fields=["revoked_at", "revoked_by"])
        audit_record(
            actor=actor,
            team_id=grant.team_id,
            action="grant.revoke",
            target_type="grant",
            target=str(grant.pk),
            payload={"rule": grant.rule},
        )
    return grant

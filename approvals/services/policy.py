"""What applies to an agent type's operations: its profile's rules and sources, how its
executor runs what is allowed, its approval policy, and its active grants as extra allow
rules. The check, an edit's judgement and a grant's proposal all read it here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from approvals.models import Grant
from approvals.selectors import grant_list_active_for
from contextsvc.infra.errors import InvalidRequest
from profiles.approvalpolicy import ApprovalPolicy
from profiles.models import SandboxProfile
from profiles.selectors import profile_approval_policy, profile_execution
from rules import RuleSet, Sources, parse_rule, parse_settings, parse_sources


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


def policy_for(*, agent_type: str, context_id: str, team_id: int | None) -> Policy:
    """The agent type's settings.json and sources.json, plus the active grants of
    ``team_id``'s requests as extra allow rules (a deny still wins over them)."""
    profile = SandboxProfile.objects.filter(name=agent_type, enabled=True).first()
    if profile is None:
        raise InvalidRequest(f'agent type "{agent_type}" has no enabled profile')
    rules = parse_settings(profile.rules) if profile.rules else RuleSet()
    sources = parse_sources(profile.sources) if profile.sources else None
    own = {rule.text for rule in rules.allow}
    # This context's grants before the agent type's: a hit is counted on the narrower one.
    active = sorted(
        grant_list_active_for(agent_type=agent_type, context_id=context_id, team_id=team_id),
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

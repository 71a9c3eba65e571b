"""An agent type's approval policy (the profile's ``approvals`` field): who must decide its
operations and who hears of them.

```json
{"twoPersonRule": true, "escalateAfter": 0.5, "escalateTo": ["bob", "carol"], "email": "high"}
```

- ``twoPersonRule``: a high-risk operation (rules/risk.py) needs two distinct approvers,
  neither of them the requester.
- ``escalateAfter``: the fraction of a request's deadline after which, still undecided, it
  is escalated to ``escalateTo`` (people with the approver role, by username).
- ``email``: which new requests e-mail the approvers: ``all`` (the default), ``high``
  (high-risk ones only) or ``none``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FIELDS = frozenset({"twoPersonRule", "escalateAfter", "escalateTo", "email"})
EMAIL_CHOICES = ("all", "high", "none")


class PolicyError(ValueError):
    """The policy is malformed; the message names the field."""


@dataclass(frozen=True)
class ApprovalPolicy:
    two_person_rule: bool = False
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()
    email: str = "all"

    def approvals_required(self, risk: str) -> int:
        return 2 if self.two_person_rule and risk == "high" else 1

    def emails_approvers(self, risk: str) -> bool:
        return self.email == "all" or (self.email == "high" and risk == "high")


def parse_approval_policy(raw: Any) -> ApprovalPolicy:
    if raw in (None, {}):
        return ApprovalPolicy()
    if not isinstance(raw, dict):
        raise PolicyError("must be an object")
    unknown = sorted(set(raw) - FIELDS)
    if unknown:
        raise PolicyError(f"{unknown[0]} is not a field (use {', '.join(sorted(FIELDS))})")
    two_person = raw.get("twoPersonRule", False)
    if not isinstance(two_person, bool):
        raise PolicyError("twoPersonRule must be a boolean")
    after = raw.get("escalateAfter")
    if after is not None and (
        isinstance(after, bool) or not isinstance(after, int | float) or not 0 < after < 1
    ):
        raise PolicyError(
            "escalateAfter must be a number between 0 and 1 (a share of the deadline)"
        )
    to = raw.get("escalateTo", [])
    if not isinstance(to, list) or not all(isinstance(name, str) and name for name in to):
        raise PolicyError("escalateTo must be a list of usernames")
    if len(set(to)) != len(to):
        raise PolicyError("escalateTo names someone twice")
    if (after is None) != (not to):
        raise PolicyError("escalateAfter and escalateTo go together")
    email = raw.get("email", "all")
    if email not in EMAIL_CHOICES:
        raise PolicyError(f"email must be one of {', '.join(EMAIL_CHOICES)}")
    return ApprovalPolicy(
        two_person_rule=two_person,
        escalate_after=float(after) if after is not None else None,
        escalate_to=tuple(to),
        email=email,
    )

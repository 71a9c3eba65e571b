"""Who sees which approval requests: the one rule the API and the long-poll consumer share."""

from __future__ import annotations

from collections.abc import Set

from contextsvc.core.models import Scope

# Reviewers, dashboards and admins see every request; a credential with none of these
# scopes can only be an agent's.
SEES_EVERY_REQUEST = frozenset({Scope.READ, Scope.APPROVER, Scope.ADMIN})


def own_requests_only(*, actor: str, scopes: Set[str]) -> str | None:
    """The ``requested_by`` an agent-only credential is limited to (its own requests, which
    are all it may see and cancel), or None when it may see every request."""
    if scopes & SEES_EVERY_REQUEST:
        return None
    return actor


# Who may withdraw a request that is not theirs: reviewers (a reader sees every request
# but decides nothing, and withdrawing one is a decision).
CANCELS_ANY_REQUEST = frozenset({Scope.APPROVER, Scope.ADMIN})


def own_cancellable_only(*, actor: str, scopes: Set[str]) -> str | None:
    """The ``requested_by`` a credential may cancel requests of (its own), or None when it
    may cancel any: a token with the agent and read scopes sees every request, yet
    withdraws only what it asked."""
    if scopes & CANCELS_ANY_REQUEST:
        return None
    return actor

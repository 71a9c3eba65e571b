"""approvals/access.py: who sees and cancels which requests."""

from __future__ import annotations

import pytest

from approvals.access import own_requests_only
from contextsvc.core.models import Scope


@pytest.mark.parametrize(
    ("scopes", "limited_to"),
    [
        ({Scope.AGENT}, "api:agent-1"),
        ({Scope.AGENT, Scope.ALLOCATIONS}, "api:agent-1"),
        (set(), "api:agent-1"),
        ({Scope.READ}, None),
        ({Scope.APPROVER}, None),
        ({Scope.ADMIN}, None),
        ({Scope.AGENT, Scope.APPROVER}, None),
    ],
)
def test_agent_only_credentials_see_their_own_requests(
    scopes: set[str], limited_to: str | None
) -> None:
    assert own_requests_only(actor="api:agent-1", scopes=frozenset(scopes)) == limited_to

"""Fixtures for the approvals tests: the agent type whose rules decide, and API clients
with real tokens for an agent and a reviewer."""

from __future__ import annotations

import pytest

from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token

# data-agent's settings.json: ls, git status and reading the workspace are allowed, curl and
# sudo denied; anything else (pip install…) waits for a human.
RULES = {
    "permissions": {
        "allow": ["shell(ls:*)", "shell(git status:*)", "file(read:${WORKSPACE}/**)"],
        "deny": ["shell(curl:*)", "shell(sudo:*)"],
    }
}


@pytest.fixture
def data_agent() -> SandboxProfile:
    return SandboxProfileFactory.create(name="data-agent", rules=RULES)


@pytest.fixture
def agent() -> ApiClient:
    return ApiClient(issue_token("agent-1", ["agent"]))


@pytest.fixture
def approver() -> ApiClient:
    return ApiClient(issue_token("alice", ["approver"]))

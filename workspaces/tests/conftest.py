"""Fixtures of the workspace tests: the two callers, a platform (allocations scope) and an
agent of the type the tests use."""

from __future__ import annotations

import pytest

from tests.support.api import ApiClient
from tests.support.workspaces import agent_client, platform_client


@pytest.fixture
def rossoctl() -> ApiClient:
    return platform_client()


@pytest.fixture
def agent() -> ApiClient:
    return agent_client()

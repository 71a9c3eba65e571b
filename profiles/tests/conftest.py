"""Fixtures of the profile tests: an admin (who writes profiles) and a caller (who
allocates with them)."""

from __future__ import annotations

import pytest

from tests.support.api import ApiClient, issue_token


@pytest.fixture
def admin() -> ApiClient:
    return ApiClient(issue_token("platform-admin", ["admin"]))


@pytest.fixture
def caller() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))

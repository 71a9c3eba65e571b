"""The v1 request rules: every validation error with its exact message, in contract order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from allocations.requests import PoolRequest
from allocations.v1 import parse_pool_request
from contextsvc.infra.errors import InvalidRequest
from tests.support.v1_messages import (
    POOL_ERRORS,
    pool,
)

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


def refused(body: dict[str, Any]) -> str:
    with pytest.raises(InvalidRequest) as excinfo:
        parse_pool_request(body)
    return excinfo.value.message


@pytest.mark.parametrize(("body", "message"), POOL_ERRORS)
def test_pool_request_errors(body: dict[str, Any], message: str) -> None:
    assert refused(body) == message


def test_strategies_follow_from_the_request() -> None:
    assert parse_pool_request(pool()) == PoolRequest(
        "shared-review", 3, "shared", workspace_size="5Gi", workspace_access_mode="ReadWriteMany"
    )
    assert parse_pool_request(
        pool(workspace={"size": "1Gi", "accessMode": "ReadWriteOnce", "storageClass": "fast"})
    ) == PoolRequest(
        "shared-review",
        3,
        "dedicated",
        workspace_size="1Gi",
        workspace_access_mode="ReadWriteOnce",
        workspace_storage_class="fast",
    )
    assert parse_pool_request(
        pool(workspace={"claimName": "data.set", "readOnly": False})
    ) == PoolRequest("shared-review", 3, "existing", claim_name="data.set", read_only=False)
    assert parse_pool_request(pool(warmPoolRef="warm", workspace={})) == PoolRequest(
        "shared-review", 3, "warmpool", warm_pool="warm"
    )
    # A warm pool needs no workspace at all; null counts as absent.
    assert parse_pool_request(
        {"name": "w", "replicas": 1, "warmPoolRef": "warm", "workspace": None}
    ) == (PoolRequest("w", 1, "warmpool", warm_pool="warm"))
    # What every strategy carries: the namespace and the profile, the lifecycle additions.
    assert parse_pool_request(
        pool(namespace="team-a", profile="fast", ttlSeconds=600), now=NOW
    ) == PoolRequest(
        "shared-review",
        3,
        "shared",
        workspace_size="5Gi",
        workspace_access_mode="ReadWriteMany",
        profile_name="fast",
        namespace="team-a",
        expires_at=NOW + timedelta(seconds=600),
    )
    assert parse_pool_request(
        pool(
            namespace="team-b",
            warmPoolRef="warm",
            workspace={},
            expiresAt="2026-12-06T12:00:00Z",
        ),
        now=NOW,
    ) == PoolRequest(
        "shared-review",
        3,
        "warmpool",
        warm_pool="warm",
        namespace="team-b",
        expires_at=datetime(2026, 12, 6, 12, tzinfo=UTC),
    )
    assert parse_pool_request(
        pool(
            artifacts={"size": "2Gi", "accessMode": "ReadWriteMany", "retain": True},
        )
    ) == PoolRequest(
        "shared-review",
        3,
        "shared",
        workspace_size="5Gi",
        workspace_access_mode="ReadWriteMany",
        artifacts_size="2Gi",
        artifacts_access_mode="ReadWriteMany",
        artifacts_retain=True,
    )


def test_names_at_the_limits_are_accepted() -> None:
    assert parse_pool_request(pool(name="a" * 50)).name == "a" * 50
    assert parse_pool_request(pool(name="0")).name == "0"
    assert parse_pool_request(pool(replicas=1)).replicas == 1
    assert parse_pool_request(pool(replicas=100)).replicas == 100


PROFILE_MESSAGE = "profile must be a lowercase Kubernetes name (a profile's name)"


@pytest.mark.parametrize("profile", ["Fast", "fast_1", "-fast", "a" * 64, "fast\u00e9"])
def test_a_profile_no_profile_can_be_named_is_refused_in_its_own_words(profile: str) -> None:
    assert refused(pool(profile=profile)) == PROFILE_MESSAGE
    # After the contract's name and replicas, before the workspace's checks.
    assert refused(pool(name="Bad", profile=profile)).startswith("name must be")
    assert refused(pool(profile=profile, workspace={"size": "x"})) == PROFILE_MESSAGE


def test_a_profile_at_the_limit_is_taken_as_given() -> None:
    assert parse_pool_request(pool(profile="a" * 63)).profile_name == "a" * 63
    assert parse_pool_request(pool(profile="")).profile_name == ""
    assert parse_pool_request(pool()).profile_name == ""

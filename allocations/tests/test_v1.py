"""The v1 request rules: every validation error with its exact message, in contract order."""

from __future__ import annotations

from typing import Any

import pytest

from allocations.v1 import PoolRequest, parse_context_request, parse_pool_request
from contextsvc.core.errors import InvalidRequest

RWX = {"size": "5Gi", "accessMode": "ReadWriteMany"}


def pool(**fields: Any) -> dict[str, Any]:
    return {"name": "shared-review", "replicas": 3, "workspace": dict(RWX), **fields}


def refused(body: dict[str, Any]) -> str:
    with pytest.raises(InvalidRequest) as excinfo:
        parse_pool_request(body)
    return excinfo.value.message


NAME = "name must be a lowercase Kubernetes name no longer than 50 characters"
REPLICAS = "replicas must be between 1 and 100"


# Shared with the HTTP tests in test_api_input.py, which send each body for real.
POOL_ERRORS: list[tuple[dict[str, Any], str]] = [
    # 1. name
    (pool(name=""), NAME),
    ({"replicas": 1, "workspace": RWX}, NAME),
    (pool(name="a" * 51), NAME),
    (pool(name="Upper"), NAME),
    (pool(name="-lead"), NAME),
    (pool(name="trail-"), NAME),
    (pool(name="dot.ted"), NAME),
    (pool(name="ünïcode"), NAME),
    (pool(name="a\u200bb"), NAME),
    # Python's "$" also matches before a final newline; the check must not
    (pool(name="abc\n"), NAME),
    # name is checked before replicas
    (pool(name="BAD", replicas=0), NAME),
    # 2. replicas
    (pool(replicas=0), REPLICAS),
    (pool(replicas=101), REPLICAS),
    (pool(replicas=-1), REPLICAS),
    ({"name": "x", "workspace": RWX}, REPLICAS),
    (pool(replicas=10**30), REPLICAS),
    # 3. warmPoolRef
    (pool(warmPoolRef="Bad_Pool", workspace={}), "warmPoolRef must be a DNS-1123 subdomain"),
    (pool(warmPoolRef="warm"), "warmPoolRef cannot be combined with workspace settings"),
    (
        pool(warmPoolRef="warm", workspace={"readOnly": False}),
        "warmPoolRef cannot be combined with workspace settings",
    ),
    (
        pool(warmPoolRef="warm", workspace={"claimName": "data"}),
        "warmPoolRef cannot be combined with workspace settings",
    ),
    # 4. claimName
    (
        pool(workspace={"claimName": "Bad!", "readOnly": True}),
        "workspace.claimName must be a DNS-1123 subdomain",
    ),
    (
        pool(workspace={"claimName": "data", "size": "1Gi", "readOnly": True}),
        "workspace.size, workspace.accessMode and workspace.storageClass must be empty with "
        "workspace.claimName",
    ),
    (
        pool(workspace={"claimName": "data", "storageClass": "x", "readOnly": True}),
        "workspace.size, workspace.accessMode and workspace.storageClass must be empty with "
        "workspace.claimName",
    ),
    (
        pool(workspace={"claimName": "data"}),
        "workspace.readOnly is required with workspace.claimName",
    ),
    # 5. managed workspace
    (
        pool(workspace={**RWX, "readOnly": True}),
        "workspace.readOnly requires workspace.claimName",
    ),
    (pool(workspace={"accessMode": "ReadWriteOnce"}), "workspace.size is required"),
    (pool(workspace={}), "workspace.size is required"),
    ({"name": "x", "replicas": 1}, "workspace.size is required"),
    (
        pool(workspace={"size": "0", "accessMode": "ReadWriteOnce"}),
        "workspace.size must be a positive Kubernetes quantity",
    ),
    (
        pool(workspace={"size": "-5Gi", "accessMode": "ReadWriteOnce"}),
        "workspace.size must be a positive Kubernetes quantity",
    ),
    (
        pool(workspace={"size": "5 GB", "accessMode": "ReadWriteOnce"}),
        "workspace.size must be a positive Kubernetes quantity",
    ),
    (
        pool(workspace={"size": "5Gi"}),
        "workspace.accessMode must be ReadWriteOnce or ReadWriteMany",
    ),
    (
        pool(workspace={"size": "5Gi", "accessMode": "ReadOnlyMany"}),
        "workspace.accessMode must be ReadWriteOnce or ReadWriteMany",
    ),
    (
        pool(workspace={**RWX, "storageClass": "Not A Class"}),
        "workspace.storageClass must be a DNS-1123 subdomain",
    ),
    # decoding problems come before validation, as with a strict JSON decoder
    (pool(extra=1), 'unknown field "extra"'),
    (pool(name="BAD", zzz=1), 'unknown field "zzz"'),
    (pool(workspace={**RWX, "mode": "x"}), 'unknown field "workspace.mode"'),
    # the first unknown field in the body's order, as Go's decoder stopped at it
    ({"zz": 1, "name": "a", "aa": 2, "replicas": 1}, 'unknown field "zz"'),
    (pool(replicas="3"), "replicas must be an integer"),
    (pool(replicas=3.0), "replicas must be an integer"),
    (pool(replicas=True), "replicas must be an integer"),
    (pool(name=7), "name must be a string"),
    (pool(workspace=[]), "workspace must be an object"),
    (
        pool(workspace={"size": 5, "accessMode": "ReadWriteOnce"}),
        "workspace.size must be a string",
    ),
    (
        pool(workspace={"claimName": "d", "readOnly": "yes"}),
        "workspace.readOnly must be a boolean",
    ),
    # extension fields are validated after the contract's own rules
    (pool(namespace="Not_A_Label"), "namespace must be a DNS-1123 label"),
    (pool(profile=5), "profile must be a string"),
]


@pytest.mark.parametrize(("body", "message"), POOL_ERRORS)
def test_pool_request_errors(body: dict[str, Any], message: str) -> None:
    assert refused(body) == message


def test_strategies_follow_from_the_request() -> None:
    assert parse_pool_request(pool()) == PoolRequest(
        "shared-review", 3, "shared", size="5Gi", access_mode="ReadWriteMany"
    )
    assert parse_pool_request(
        pool(workspace={"size": "1Gi", "accessMode": "ReadWriteOnce", "storageClass": "fast"})
    ) == PoolRequest(
        "shared-review",
        3,
        "dedicated",
        size="1Gi",
        access_mode="ReadWriteOnce",
        storage_class="fast",
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


def test_names_at_the_limits_are_accepted() -> None:
    assert parse_pool_request(pool(name="a" * 50)).name == "a" * 50
    assert parse_pool_request(pool(name="0")).name == "0"
    assert parse_pool_request(pool(replicas=1)).replicas == 1
    assert parse_pool_request(pool(replicas=100)).replicas == 100


def context(**fields: Any) -> dict[str, Any]:
    return {
        "name": "research-memory",
        "namespace": "team1",
        "type": "memory",
        "storage": {"backend": "pvc", "size": "5Gi", "accessMode": "ReadWriteMany"},
        **fields,
    }


CONTEXT_ERRORS: list[tuple[dict[str, Any], str]] = [
    (context(name="Bad"), NAME),
    (context(namespace="team.1"), "namespace must be a DNS-1123 label"),
    (context(namespace="a" * 64), "namespace must be a DNS-1123 label"),
    (context(type="cache"), "type must be one of workspace, memory, knowledge, artifacts"),
    (context(storage={"backend": "s3"}), "storage.backend must be pvc"),
    (context(storage=None), "storage.backend must be pvc"),
    (
        context(storage={"backend": "pvc", "size": "0Gi", "accessMode": "ReadWriteOnce"}),
        "storage.size must be a positive Kubernetes quantity",
    ),
    (
        context(storage={"backend": "pvc", "size": "1Gi", "accessMode": "RWX"}),
        "storage.accessMode must be ReadWriteOnce or ReadWriteMany",
    ),
    (
        context(
            storage={
                "backend": "pvc",
                "size": "1Gi",
                "accessMode": "ReadWriteOnce",
                "storageClass": "Fast_SSD",
            }
        ),
        "storage.storageClass must be a DNS-1123 subdomain",
    ),
    (context(owner="me"), 'unknown field "owner"'),
    (context(storage={"backend": "pvc", "class": "x"}), 'unknown field "storage.class"'),
]


@pytest.mark.parametrize(("body", "message"), CONTEXT_ERRORS)
def test_context_request_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest) as excinfo:
        parse_context_request(body)
    assert excinfo.value.message == message

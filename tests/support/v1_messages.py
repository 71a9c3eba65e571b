"""The v1 contract's validation errors: request bodies and the Go service's own messages,
exactly as ../shared/reference/v1-api.md lists them (written out here rather than imported
from the implementation, so that a change to its text fails). The parser's unit tests
(allocations/tests/test_v1.py) and the HTTP tests send the same bodies."""

from __future__ import annotations

from typing import Any

RWX = {"size": "5Gi", "accessMode": "ReadWriteMany"}


def pool(**fields: Any) -> dict[str, Any]:
    return {"name": "shared-review", "replicas": 3, "workspace": dict(RWX), **fields}


# The Go service's own strings, exactly as ../shared/reference/v1-api.md lists them (written
# out here rather than imported, so that a change to the implementation's text fails).
NAME = "name must be a lowercase Kubernetes name no longer than 50 characters"
REPLICAS = "replicas must be between 1 and 100"
WARM_POOL_NAME = "warmPoolRef must be a lowercase Kubernetes name"
WARM_POOL_WITH_WORKSPACE = "warmPoolRef cannot be combined with workspace settings"
CLAIM_NAME = "workspace.claimName must be a lowercase Kubernetes name"
CLAIM_WITH_STORAGE = "workspace.claimName cannot be combined with size, accessMode, or storageClass"
READ_ONLY_REQUIRED = "workspace.readOnly is required with workspace.claimName"
READ_ONLY_WITHOUT_CLAIM = "workspace.readOnly requires workspace.claimName"
SIZE_REQUIRED = "workspace.size is required"
SIZE = "workspace.size must be a positive Kubernetes quantity"
ACCESS_MODE = "workspace.accessMode must be ReadWriteMany or ReadWriteOnce"
NAMESPACE = "namespace must be a lowercase Kubernetes name"
CONTEXT_TYPE = "type must be workspace, memory, knowledge, or artifacts"
BACKEND = "storage.backend must be pvc"
STORAGE_SIZE = "storage.size must be a positive Kubernetes quantity"
STORAGE_ACCESS_MODE = "storage.accessMode must be ReadWriteOnce or ReadWriteMany"


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
    (pool(warmPoolRef="Bad_Pool", workspace={}), WARM_POOL_NAME),
    # the name is checked before the workspace
    (pool(warmPoolRef="Bad_Pool"), WARM_POOL_NAME),
    (pool(warmPoolRef="warm"), WARM_POOL_WITH_WORKSPACE),
    (pool(warmPoolRef="warm", workspace={"readOnly": False}), WARM_POOL_WITH_WORKSPACE),
    (pool(warmPoolRef="warm", workspace={"claimName": "data"}), WARM_POOL_WITH_WORKSPACE),
    (pool(warmPoolRef="warm", workspace={"storageClass": "fast"}), WARM_POOL_WITH_WORKSPACE),
    # "nothing else is checked" with a warm pool: a bad replica count still comes first
    (pool(warmPoolRef="Bad_Pool", replicas=0), REPLICAS),
    # 4. claimName
    (pool(workspace={"claimName": "Bad!", "readOnly": True}), CLAIM_NAME),
    (pool(workspace={"claimName": "Bad!", "size": "1Gi"}), CLAIM_NAME),
    (pool(workspace={"claimName": "data", "size": "1Gi", "readOnly": True}), CLAIM_WITH_STORAGE),
    (
        pool(workspace={"claimName": "data", "accessMode": "ReadWriteOnce", "readOnly": True}),
        CLAIM_WITH_STORAGE,
    ),
    (
        pool(workspace={"claimName": "data", "storageClass": "x", "readOnly": True}),
        CLAIM_WITH_STORAGE,
    ),
    # combined storage is reported before the missing readOnly
    (pool(workspace={"claimName": "data", "size": "1Gi"}), CLAIM_WITH_STORAGE),
    (pool(workspace={"claimName": "data"}), READ_ONLY_REQUIRED),
    # 5. managed workspace
    (pool(workspace={**RWX, "readOnly": True}), READ_ONLY_WITHOUT_CLAIM),
    (pool(workspace={"size": "x", "readOnly": False}), READ_ONLY_WITHOUT_CLAIM),
    (pool(workspace={"accessMode": "ReadWriteOnce"}), SIZE_REQUIRED),
    (pool(workspace={}), SIZE_REQUIRED),
    ({"name": "x", "replicas": 1}, SIZE_REQUIRED),
    # "empty or blank"
    (pool(workspace={"size": "   ", "accessMode": "ReadWriteOnce"}), SIZE_REQUIRED),
    (pool(workspace={"size": "\t", "accessMode": "bogus"}), SIZE_REQUIRED),
    (pool(workspace={"size": "0", "accessMode": "ReadWriteOnce"}), SIZE),
    (pool(workspace={"size": "-5Gi", "accessMode": "ReadWriteOnce"}), SIZE),
    (pool(workspace={"size": "5 GB", "accessMode": "ReadWriteOnce"}), SIZE),
    (pool(workspace={"size": " 5Gi", "accessMode": "ReadWriteOnce"}), SIZE),
    (pool(workspace={"size": "5Gi"}), ACCESS_MODE),
    (pool(workspace={"size": "5Gi", "accessMode": "ReadOnlyMany"}), ACCESS_MODE),
    (pool(workspace={"size": "5Gi", "accessMode": "readwritemany"}), ACCESS_MODE),
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
    (pool(namespace="Not_A_Label"), NAMESPACE),
    (pool(profile=5), "profile must be a string"),
]


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
    (context(name="Bad", namespace="Bad"), NAME),
    (context(namespace="team.1"), NAMESPACE),
    (context(namespace="a" * 64), NAMESPACE),
    (context(namespace=""), NAMESPACE),
    (context(namespace="team.1", type="cache"), NAMESPACE),
    (context(type="cache"), CONTEXT_TYPE),
    (context(type=""), CONTEXT_TYPE),
    (context(type="cache", storage={"backend": "s3"}), CONTEXT_TYPE),
    (context(storage={"backend": "s3"}), BACKEND),
    (context(storage=None), BACKEND),
    (context(storage={"backend": "s3", "size": "0"}), BACKEND),
    (
        context(storage={"backend": "pvc", "size": "0Gi", "accessMode": "ReadWriteOnce"}),
        STORAGE_SIZE,
    ),
    (context(storage={"backend": "pvc", "accessMode": "ReadWriteOnce"}), STORAGE_SIZE),
    (context(storage={"backend": "pvc", "size": "0", "accessMode": "RWX"}), STORAGE_SIZE),
    (context(storage={"backend": "pvc", "size": "1Gi", "accessMode": "RWX"}), STORAGE_ACCESS_MODE),
    (context(storage={"backend": "pvc", "size": "1Gi"}), STORAGE_ACCESS_MODE),
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

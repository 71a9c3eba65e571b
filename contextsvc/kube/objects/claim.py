"""SandboxClaims: a warm-pool allocation's claims on a SandboxWarmPool, and whether the
controller has bound each to a Sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextsvc.kube.objects.fields import condition, name_of
from contextsvc.kube.objects.kinds import SANDBOX_CLAIM, Manifest
from contextsvc.kube.objects.labels import POOL_LABEL, pool_labels
from contextsvc.kube.objects.names import claim_name
from contextsvc.kube.objects.poolspec import PoolSpec


def claim_warm_pool(claim: Mapping[str, Any]) -> str:
    """The SandboxWarmPool a claim draws from."""
    return str(((claim.get("spec") or {}).get("warmPoolRef") or {}).get("name") or "")


def claim_manifest(spec: PoolSpec, index: int) -> Manifest:
    assert spec.warm_pool, "warm-pool allocations name their pool"
    return {
        "apiVersion": SANDBOX_CLAIM.api_version,
        "kind": SANDBOX_CLAIM.kind,
        "metadata": {
            "name": claim_name(spec.name, index),
            "namespace": spec.namespace,
            "labels": pool_labels(spec.name),
        },
        "spec": {
            "warmPoolRef": {"name": spec.warm_pool},
            # Only the pool label: keys outside the controller's allow-listed domains make
            # the claim fail with InvalidMetadata.
            "additionalPodMetadata": {"labels": {POOL_LABEL: spec.name}},
        },
    }


def claim_is_ready(claim: Mapping[str, Any]) -> bool:
    """Ready condition True and a Sandbox named in status (agent-sandbox rule of thumb 1)."""
    ready = condition(claim, "Ready")
    return bool(ready is not None and ready.get("status") == "True" and claim_sandbox(claim))


def claim_sandbox(claim: Mapping[str, Any]) -> str:
    """The Sandbox a claim is bound to ("" while it is not)."""
    return str(((claim.get("status") or {}).get("sandbox") or {}).get("name") or "")


def claim_is_cold(claim: Mapping[str, Any]) -> bool:
    """A bound claim whose Sandbox was started for it: the controller names such a Sandbox
    after the claim, while a warm one keeps its pool's generated name."""
    return claim_sandbox(claim) == name_of(claim)


# The agent-sandbox releases the service is known to work with (the suite runs the first;
# `make test-compat` the others), and how a cluster's release is told from the claim's
# schema: v1.0 added status.sandbox.serviceFQDN (and dropped v1alpha1 and its webhook).
KNOWN_RELEASES = ("v1.0.1", "v0.5.6")
RELEASE_V1 = "v1.0 or later"
RELEASE_V05 = "v0.5"


def release_of_claim_schema(schemas: Mapping[str, Any]) -> str:
    """The agent-sandbox release line a cluster runs, read from the OpenAPI schemas of the
    extensions group: RELEASE_V1, RELEASE_V05, or "" when it publishes no SandboxClaim."""
    for schema in schemas.values():
        kinds = schema.get("x-kubernetes-group-version-kind") or []
        if not any(kind.get("kind") == SANDBOX_CLAIM.kind for kind in kinds):
            continue
        status = (schema.get("properties") or {}).get("status") or {}
        sandbox = (status.get("properties") or {}).get("sandbox") or {}
        fields = sandbox.get("properties") or {}
        return RELEASE_V1 if "serviceFQDN" in fields else RELEASE_V05
    return ""

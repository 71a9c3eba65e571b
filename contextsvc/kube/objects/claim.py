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

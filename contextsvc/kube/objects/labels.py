"""The labels and annotations every kind shares, and the selectors made of them.

They are the v1 contract (``v1-api.md``): objects an earlier Go deployment left in a
cluster must be recognised, so none of them may change. Labels and annotations only one
kind carries live in that kind's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextsvc.kube.objects.fields import labels_of

LABEL_DOMAIN = "context.rossoctl.io"
POOL_LABEL = f"{LABEL_DOMAIN}/pool"
REPLICAS_KEY = f"{LABEL_DOMAIN}/replicas"
READ_ONLY_ANNOTATION = f"{LABEL_DOMAIN}/workspace-read-only"
CLAIM_ANNOTATION = f"{LABEL_DOMAIN}/workspace-claim"
CONTEXT_NAME_LABEL = f"{LABEL_DOMAIN}/name"
CONTEXT_TYPE_LABEL = f"{LABEL_DOMAIN}/type"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "context-service"

MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
# Everything else (an object without the label matches too): somebody else's objects.
FOREIGN_SELECTOR = f"{MANAGED_BY_LABEL}!={MANAGED_BY}"
# Claimed warm-pool Pods only receive labels in allow-listed domains, so they carry the
# pool label but not managed-by: Pods are found by the pool label alone.
POOLED_POD_SELECTOR = POOL_LABEL


def pool_selector(pool: str) -> str:
    """The selector callers route work with (``sandboxSelector`` in the v1 response)."""
    return f"{POOL_LABEL}={pool}"


def managed_pool_selector(pool: str) -> str:
    """Objects this service created for one allocation: both labels must match."""
    return f"{POOL_LABEL}={pool},{MANAGED_SELECTOR}"


def pool_labels(pool: str) -> dict[str, str]:
    return {POOL_LABEL: pool, MANAGED_BY_LABEL: MANAGED_BY}


PROFILE_LABEL = f"{LABEL_DOMAIN}/profile"


def profile_warm_pool_selector(profile: str) -> str:
    return f"{MANAGED_SELECTOR},{PROFILE_LABEL}={profile}"


def is_managed_for(obj: Mapping[str, Any], pool: str) -> bool:
    """True when ``obj`` carries both of our labels for this allocation."""
    labels = labels_of(obj)
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(POOL_LABEL) == pool


WORKSPACE_TYPE_LABEL = "rossoctl.io/type"
WORKSPACE_AGENT_LABEL = "rossoctl.io/agent"
AGENT_WORKSPACE = "agent-workspace"
CLEANUP_CONTEXT_LABEL = f"{LABEL_DOMAIN}/context"


def agent_workspace_selector(agent_type: str) -> str:
    return f"{WORKSPACE_TYPE_LABEL}={AGENT_WORKSPACE},{WORKSPACE_AGENT_LABEL}={agent_type}"

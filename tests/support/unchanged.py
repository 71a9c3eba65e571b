""" "Nothing changed", checked whole: every row of every model the service keeps (the audit
log among them), to compare before and after a refused action."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.apps import apps

from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import (
    JOB,
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)

# The service's own apps, and the people and groups it manages.
APPS = ("core", "allocations", "contexts", "workspaces", "approvals", "profiles", "usage", "auth")
# Bookkeeping that changes on every call, whatever the call did: when a token or a person
# was last seen, and what the background processes and the cluster last reported.
NOT_STATE = {
    "core.ApiToken": {"last_used_at"},
    "auth.User": {"last_login"},
    "core.ProcessHeartbeat": None,  # None: the whole model
    "core.ClusterCapabilities": None,
    # What the watcher last saw left of pools without a live allocation (its caches, as
    # rows): it moves with the cluster, never with a request.
    "allocations.PoolPresence": None,
}


def rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model of ``APPS``, by model, in primary-key order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            name = model._meta.label
            if name in NOT_STATE and NOT_STATE[name] is None:
                continue
            skipped = NOT_STATE.get(name) or set()
            found[name] = [
                {key: value for key, value in row.items() if key not in skipped}
                for row in model._default_manager.order_by("pk").values()
            ]
    return found


# What the service makes in a namespace (and what a caller may own there: a PVC).
KINDS = (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
    PVC,
    POD,
    NETWORK_POLICY,
    JOB,
)


# Annotations the cluster's own controllers add as they go (the PV controller's, when it
# binds a claim a test has just made); the service never writes them.
CONTROLLER_ANNOTATIONS = (
    "pv.kubernetes.io/",
    "volume.kubernetes.io/",
    "volume.beta.kubernetes.io/",
)


def _annotations(item: dict[str, Any]) -> dict[str, str]:
    found = item["metadata"].get("annotations") or {}
    return {k: v for k, v in found.items() if not k.startswith(CONTROLLER_ANNOTATIONS)}


def cluster(*namespaces: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every object of ``KINDS`` in the namespaces: kind, name, uid, labels, annotations
    and generation (what a write by the service would change; the status and the binding
    annotations its controllers keep updating are left out), listed as the cluster admin."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    for namespace in namespaces:
        for kind in KINDS:
            items = kube._call("GET", kube._path(kind, namespace)).get("items") or []
            found[f"{namespace}/{kind.kind}"] = sorted(
                (
                    item["metadata"]["name"],
                    item["metadata"]["uid"],
                    item["metadata"].get("labels") or {},
                    _annotations(item),
                    item["metadata"].get("generation"),
                )
                for item in items
            )
    return found


def everything(*namespaces: str) -> dict[str, Any]:
    """The rows and the cluster objects of ``namespaces``: what a refusal must leave as it was."""
    return {"rows": rows(), "cluster": cluster(*namespaces)}


# How long ``kept`` waits for the background to finish what it was doing before the block.
SETTLE_TIMEOUT = 15.0
SETTLE_INTERVAL = 0.2


def settled(*namespaces: str) -> dict[str, Any]:
    """``everything``, once two reads in a row agree: just after an allocation is ready the
    watcher and the controllers may still be recording it (more so on a loaded machine),
    and that is not what a refusal changed. A state that never settles is returned as it
    last was: the comparison after the block then says what moved."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last = everything(*namespaces)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_INTERVAL)
        now = everything(*namespaces)
        if now == last:
            return now
        last = now
    return last


@contextmanager
def kept(*namespaces: str) -> Iterator[None]:
    """Around a refused action: everything (the rows, and the objects of ``namespaces``) is
    as it was when the block began (once it had settled)."""
    before = settled(*namespaces)
    yield
    assert everything(*namespaces) == before

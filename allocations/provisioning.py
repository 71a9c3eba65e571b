"""Turns an allocation into Kubernetes objects and back: apply what it needs, find and
delete what it owns. Idempotent: running it twice, or on two workers, changes nothing more.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, fields
from typing import Any

from django.conf import settings

from allocations.models import Allocation, Strategy
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import Blueprint, builtin_blueprint
from contextsvc.kube.objects.claim import claim_manifest
from contextsvc.kube.objects.fields import is_deleting, name_of
from contextsvc.kube.objects.kinds import NETWORK_POLICY, POD, PVC, SANDBOX, SANDBOX_CLAIM, ApiKind
from contextsvc.kube.objects.labels import is_managed_for, managed_pool_selector, pool_selector
from contextsvc.kube.objects.networkpolicy import (
    DNS_EGRESS,
    blueprint_network_rules,
    network_policy_manifest,
)
from contextsvc.kube.objects.pod import sandbox_pods_among
from contextsvc.kube.objects.poolspec import PoolSpec
from contextsvc.kube.objects.pvc import artifacts_pvc_manifest, managed_pvc_names, pvc_manifest
from contextsvc.kube.objects.sandbox import expiry_backstop, sandbox_drift, sandbox_manifest


class NameCollision(Exception):
    """An object with one of our names exists but does not carry this allocation's labels."""


# The spec's attributes the row holds under the same names (the rest are worked out below).
_COPIED = tuple(item.name for item in fields(PoolSpec) if item.name != "shutdown_time")


def pool_spec(allocation: Allocation) -> PoolSpec:
    return PoolSpec(
        **{name: getattr(allocation, name) for name in _COPIED},
        shutdown_time=(expiry_backstop(allocation.expires_at) if allocation.expires_at else None),
    )


def blueprint_for(allocation: Allocation) -> Blueprint:
    """The blueprint copied when the allocation was made; adopted allocations (and rows from
    before profiles existed) have none and get the built-in runtime."""
    if allocation.blueprint:
        return Blueprint.from_json(allocation.blueprint)
    return builtin_blueprint(
        image=settings.CS_SANDBOX_IMAGE or "",
        service_account=settings.CS_SANDBOX_SERVICE_ACCOUNT,
    )


Desired = tuple[ApiKind, dict[str, Any]]


def desired_objects(allocation: Allocation) -> list[Desired]:
    """In creation order: the NetworkPolicy first, so no Pod ever runs unfenced, then the
    workspaces, then the Sandboxes that mount them."""
    spec = pool_spec(allocation)
    if allocation.strategy == Strategy.WARMPOOL:
        # The pool's template decides the runtime; the claimed Pods are fenced all the same
        # (rows from before the fence, and adopted ones, get DNS out and nothing else).
        fence = (allocation.blueprint or {}).get("fence") or {
            "ingress": [],
            "egress": [DNS_EGRESS],
        }
        return [
            (
                NETWORK_POLICY,
                network_policy_manifest(spec, ingress=fence["ingress"], egress=fence["egress"]),
            ),
            *((SANDBOX_CLAIM, claim_manifest(spec, i)) for i in range(spec.replicas)),
        ]
    blueprint = blueprint_for(allocation)
    ingress, egress = blueprint_network_rules(blueprint)
    wanted: list[Desired] = [
        (
            NETWORK_POLICY,
            network_policy_manifest(spec, ingress=ingress, egress=egress),
        )
    ]
    wanted += [(PVC, pvc_manifest(spec, name)) for name in managed_pvc_names(spec)]
    if spec.artifacts is not None:
        wanted.append((PVC, artifacts_pvc_manifest(spec)))
    wanted += [(SANDBOX, sandbox_manifest(spec, i, blueprint)) for i in range(spec.replicas)]
    return wanted


@dataclass
class Synced:
    """What one reconcile did: objects created, patched (lifecycle), and deleted (replicas
    no longer wanted), as ``Kind/name``; and the wanted objects it could not make yet
    because an object of ours under that name is still being deleted (``waiting``)."""

    created: list[str] = field(default_factory=list)
    patched: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)

    def changed(self) -> bool:
        return bool(self.created or self.patched or self.deleted)


def sync(allocation: Allocation) -> Synced:
    """Make the cluster hold what the allocation wants now, whatever it held before:
    create every missing object; bring each Sandbox's lifecycle (suspended or running, its
    shutdown time) to the row's; and, once replicas were removed (``prune_pending``),
    delete what it owns and no longer wants (the replicas above the lowered count, from the
    highest index). Idempotent.

    AlreadyExists with our labels counts as success (another worker, or an earlier attempt,
    made it); without them it is somebody else's object and the allocation cannot proceed.
    """
    done = Synced()
    wanted = desired_objects(allocation)

    def ensure(kind: ApiKind, body: dict[str, Any]) -> None:
        name = name_of(body)
        if kube.create_if_absent(kind, body):
            done.created.append(f"{kind.kind}/{name}")
            return
        existing = kube.get_object(kind, allocation.namespace, name)
        if existing is not None and not is_managed_for(existing, allocation.name):
            raise NameCollision(
                f"{kind.kind} {allocation.namespace}/{name} exists and does not belong to "
                "this allocation"
            )
        if existing is None or is_deleting(existing):
            # Ours, on its way out (a scale down and back up raced): it is made again once
            # it is gone, by the reconcile that is queued for then.
            done.waiting.append(f"{kind.kind}/{name}")
            return
        if kind == SANDBOX and existing is not None:
            patch = sandbox_drift(existing, body)
            if patch is not None:
                kube.patch_object(kind, allocation.namespace, name, patch)
                done.patched.append(f"{kind.kind}/{name}")

    # In stages, each kind's objects at once: the NetworkPolicy first, so that no Pod ever
    # runs unfenced; then the PVCs; then the Sandboxes (or the claims). A Sandbox made
    # together with its PVC has a Pod that reaches the scheduler before the PV controller
    # bound the claim: it fails scheduling ("unbound immediate PersistentVolumeClaims"), is
    # put back and waits out a back-off, and its events cost the API server more than the
    # round trip saved (docs/performance.md, "Scale"). Made after its PVC, as a client
    # creating the two one after the other does, the Pod finds the claim bound or nearly.
    for _, stage in itertools.groupby(wanted, key=lambda desired: desired[0]):
        kube.concurrently([functools.partial(ensure, kind, body) for kind, body in stage])
    if not allocation.prune_pending:
        return done
    wanted_names = {(kind, name_of(body)) for kind, body in wanted}
    for kind, items in owned(allocation).found.items():
        if kind == POD:
            continue  # they go with their Sandboxes
        for obj in items:
            name = name_of(obj)
            if (kind, name) not in wanted_names and kube.delete_object(
                kind, allocation.namespace, name, foreground=kind in FOREGROUND
            ):
                done.deleted.append(f"{kind.kind}/{name}")
    return done


# Deleted in this order; Pods are found (they must be gone before the name is free) but
# never deleted directly: their Sandboxes' garbage collection removes them.
DELETED_KINDS = (SANDBOX_CLAIM, SANDBOX, PVC, NETWORK_POLICY)
# Foreground deletion keeps a Claim or Sandbox visible until its Pod and PVCs are gone.
FOREGROUND = {SANDBOX_CLAIM, SANDBOX}


@dataclass
class Owned:
    """What the cluster holds for one allocation, found by its labels."""

    found: dict[ApiKind, list[dict[str, Any]]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not any(self.found.values())

    def names(self) -> list[str]:
        return [
            f"{kind.kind}/{name_of(obj)}" for kind, items in self.found.items() for obj in items
        ]


def owned(allocation: Allocation) -> Owned:
    namespace = allocation.namespace
    managed = managed_pool_selector(allocation.name)
    found: dict[ApiKind, list[dict[str, Any]]] = {}
    for kind in DELETED_KINDS:
        if kind == SANDBOX_CLAIM and allocation.strategy != Strategy.WARMPOOL:
            continue  # (the extension CRDs may not even be installed)
        items = kube.list_objects(kind, namespace, managed)
        if kind == PVC:
            # The caller's PVC never carries our labels, but a mislabelled one must survive.
            items = [pvc for pvc in items if name_of(pvc) != allocation.claim_name]
        found[kind] = items
    found[POD] = sandbox_pods(namespace, allocation.name)
    return Owned(found)


def sandbox_pods(namespace: str, pool: str) -> list[dict[str, Any]]:
    """The pool's Pods that a Sandbox made. Claimed Pods carry only the pool label (see
    objects.labels.POOLED_POD_SELECTOR), so the label finds them and ownership tells them apart."""
    return sandbox_pods_among(kube.list_objects(POD, namespace, pool_selector(pool)))


def delete_owned(allocation: Allocation) -> Owned:
    """Issue a delete for everything the allocation owns that is not already on its way out;
    returns what it found (empty: nothing of it was left). It does not list again to see
    what went: the caller's next attempt, or the watcher's view, says that."""
    current = owned(allocation)
    for kind in DELETED_KINDS:
        for obj in current.found.get(kind, []):
            if not is_deleting(obj):
                kube.delete_object(
                    kind, allocation.namespace, name_of(obj), foreground=kind in FOREGROUND
                )
    return current

"""Turns an allocation into Kubernetes objects and back: apply what it needs, find and
delete what it owns. Idempotent: running it twice, or on two workers, changes nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from allocations.models import Allocation, Strategy
from contextsvc.kube import client as kube
from contextsvc.kube import objects


class NameCollision(Exception):
    """An object with one of our names exists but does not carry this allocation's labels."""


def pool_spec(allocation: Allocation) -> objects.PoolSpec:
    return objects.PoolSpec(
        name=allocation.name,
        namespace=allocation.namespace,
        replicas=allocation.replicas,
        strategy=allocation.strategy,
        size=allocation.workspace_size,
        access_mode=allocation.workspace_access_mode,
        storage_class=allocation.workspace_storage_class or None,
        claim_name=allocation.claim_name or None,
        read_only=bool(allocation.read_only),
        warm_pool=allocation.warm_pool or None,
    )


def runtime_for(allocation: Allocation) -> objects.Runtime:
    return objects.Runtime(
        image=settings.CS_SANDBOX_IMAGE or "",
        service_account=settings.CS_SANDBOX_SERVICE_ACCOUNT,
    )


def desired_objects(
    allocation: Allocation,
) -> list[tuple[objects.CustomKind | None, dict[str, Any]]]:
    """In creation order: workspaces before the Sandboxes that mount them.
    ``None`` as the kind means a core PersistentVolumeClaim."""
    spec = pool_spec(allocation)
    if allocation.strategy == Strategy.WARMPOOL:
        return [
            (objects.SANDBOX_CLAIM, objects.claim_manifest(spec, i)) for i in range(spec.replicas)
        ]
    wanted: list[tuple[objects.CustomKind | None, dict[str, Any]]] = [
        (None, objects.pvc_manifest(spec, name)) for name in objects.managed_pvc_names(spec)
    ]
    runtime = runtime_for(allocation)
    wanted += [
        (objects.SANDBOX, objects.sandbox_manifest(spec, i, runtime)) for i in range(spec.replicas)
    ]
    return wanted


def _create(kind: objects.CustomKind | None, body: dict[str, Any]) -> None:
    if kind is None:
        kube.create_pvc(body)
    else:
        kube.create_custom(kind, body)


def _read(kind: objects.CustomKind | None, namespace: str, name: str) -> dict[str, Any] | None:
    if kind is None:
        return kube.get_pvc(namespace, name)
    return kube.get_custom(kind, namespace, name)


def apply(allocation: Allocation) -> list[str]:
    """Create every missing object; returns the names it created.

    AlreadyExists with our labels counts as success (another worker, or an earlier attempt,
    made it); without them it is somebody else's object and the allocation cannot proceed.
    """
    created = []
    for kind, body in desired_objects(allocation):
        name = body["metadata"]["name"]
        label = kind.kind if kind else "PersistentVolumeClaim"
        try:
            _create(kind, body)
        except Exception as exc:
            if not kube.is_already_exists(exc):
                raise kube.kube_error(
                    exc, f"creating {label} {allocation.namespace}/{name}"
                ) from exc
            existing = _read(kind, allocation.namespace, name)
            if existing is not None and not objects.is_managed_for(existing, allocation.name):
                raise NameCollision(
                    f"{label} {allocation.namespace}/{name} exists and does not belong to this "
                    "allocation"
                ) from exc
        else:
            created.append(f"{label}/{name}")
    return created


@dataclass
class Owned:
    """What the cluster holds for one allocation, found by its labels."""

    sandboxes: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    pvcs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.sandboxes or self.claims or self.pvcs or self.pods)

    def names(self) -> list[str]:
        return [
            f"{kind}/{obj['metadata']['name']}"
            for kind, items in (
                ("Sandbox", self.sandboxes),
                ("SandboxClaim", self.claims),
                ("PersistentVolumeClaim", self.pvcs),
                ("Pod", self.pods),
            )
            for obj in items
        ]


def _never_the_callers(allocation: Allocation, pvcs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The caller's PVC never carries our labels, but a mislabelled one must still survive.
    return [pvc for pvc in pvcs if pvc["metadata"]["name"] != allocation.claim_name]


def owned(allocation: Allocation) -> Owned:
    namespace = allocation.namespace
    managed = objects.managed_pool_selector(allocation.name)
    return Owned(
        sandboxes=kube.list_custom(objects.SANDBOX, namespace, managed),
        claims=kube.list_custom(objects.SANDBOX_CLAIM, namespace, managed)
        if allocation.strategy == Strategy.WARMPOOL
        else [],
        pvcs=_never_the_callers(allocation, kube.list_pvcs(namespace, managed)),
        # Claimed Pods carry only the pool label (see objects.POOLED_POD_SELECTOR).
        pods=kube.list_pods(namespace, objects.pool_selector(allocation.name)),
    )


def delete_owned(allocation: Allocation) -> Owned:
    """Issue deletes for everything the allocation owns; returns what is still there."""
    current = owned(allocation)
    namespace = allocation.namespace
    for claim in current.claims:
        # Foreground keeps the claim until its Sandbox, Pod and PVCs are gone, so "no claims
        # left" means "nothing left".
        kube.delete_custom(
            objects.SANDBOX_CLAIM, namespace, claim["metadata"]["name"], foreground=True
        )
    for sandbox in current.sandboxes:
        kube.delete_custom(objects.SANDBOX, namespace, sandbox["metadata"]["name"], foreground=True)
    for pvc in current.pvcs:
        kube.delete_pvc(namespace, pvc["metadata"]["name"])
    return owned(allocation)

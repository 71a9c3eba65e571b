"""Adoption: objects carrying our labels with no allocation row (made by the earlier Go
Context Service, or left by a crash) become allocations again; what cannot be understood
is reported as an orphan. Nothing is ever deleted here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from allocations.models import (
    Allocation,
    AllocationEvent,
    Phase,
    Strategy,
)
from allocations.observe import PoolKey, PoolObjects, ready_replicas
from allocations.services.timeline import announce
from contexts.models import ContextResource, ContextType
from contextsvc.core.services import audit_record
from contextsvc.infra.validators import is_pool_name
from contextsvc.kube import client as kube
from contextsvc.kube.objects.claim import claim_warm_pool
from contextsvc.kube.objects.fields import annotations_of, kind_of, labels_of, name_of
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.labels import (
    CLAIM_ANNOTATION,
    CONTEXT_TYPE_LABEL,
    READ_ONLY_ANNOTATION,
    REPLICAS_KEY,
)
from contextsvc.kube.objects.names import (
    context_pvc_name,
    dedicated_pvc_name,
    sandbox_index,
    shared_pvc_name,
)
from contextsvc.kube.objects.pvc import pvc_is_bound, pvc_shape

ADOPTION_ACTOR = "system:adoption"


@dataclass(frozen=True)
class Orphan:
    namespace: str
    pool: str
    objects: tuple[str, ...]
    why: str


def _replicas(pool: PoolObjects, name: str) -> int:
    if pool.claims:
        return len(pool.claims)
    for sandbox in pool.sandboxes:
        annotation = annotations_of(sandbox).get(REPLICAS_KEY)
        if annotation and annotation.isdigit():
            return int(annotation)
    indexes = [
        index
        for sandbox in pool.sandboxes
        if (index := sandbox_index(name, name_of(sandbox))) is not None
    ]
    return max(indexes) + 1 if indexes else len(pool.sandboxes)


def infer(key: PoolKey, pool: PoolObjects) -> Allocation | Orphan:
    """The allocation these objects describe, following the v1 names and annotations."""
    namespace, name = key
    names = tuple(
        f"{kind_of(obj) or 'PersistentVolumeClaim'}/{name_of(obj)}"
        for obj in pool.sandboxes + pool.claims + pool.pvcs
    )
    if not is_pool_name(name):
        return Orphan(namespace, name, names, "the pool label is not a valid allocation name")
    if not pool.compute():
        return Orphan(namespace, name, names, "no Sandbox or SandboxClaim carries this pool label")
    replicas = _replicas(pool, name)
    if not 1 <= replicas <= 100:
        return Orphan(namespace, name, names, f"cannot infer a replica count ({replicas})")
    allocation = Allocation(
        name=name, namespace=namespace, replicas=replicas, requester=ADOPTION_ACTOR, adopted=True
    )
    if pool.claims:
        allocation.strategy = Strategy.WARMPOOL
        allocation.warm_pool = claim_warm_pool(pool.claims[0])
        return allocation
    annotations = annotations_of(pool.sandboxes[0])
    pvcs = {name_of(pvc): pvc for pvc in pool.pvcs}
    claim = annotations.get(CLAIM_ANNOTATION)
    workspace: dict[str, Any] | None
    if claim:
        allocation.strategy = Strategy.EXISTING
        allocation.claim_name = claim
        allocation.read_only = annotations.get(READ_ONLY_ANNOTATION) == "true"
        # The caller's PVC carries no labels of ours; read its shape by name.
        workspace = kube.get_object(PVC, namespace, claim)
    elif shared_pvc_name(name) in pvcs:
        allocation.strategy = Strategy.SHARED
        workspace = pvcs[shared_pvc_name(name)]
    elif dedicated_pvc_name(name, 0) in pvcs:
        allocation.strategy = Strategy.DEDICATED
        workspace = pvcs[dedicated_pvc_name(name, 0)]
    else:
        return Orphan(namespace, name, names, "its Sandboxes mount no workspace PVC we know of")
    if workspace is None:
        return allocation
    shape = pvc_shape(workspace)
    allocation.workspace_size = shape.size
    allocation.workspace_access_mode = shape.access_mode
    allocation.workspace_storage_class = shape.storage_class
    return allocation


def adopt(key: PoolKey, pool: PoolObjects, *, dry_run: bool = False) -> Allocation | Orphan:
    found = infer(key, pool)
    if isinstance(found, Orphan) or dry_run:
        return found
    ready = ready_replicas(found.strategy, pool)
    found.ready_replicas = ready
    found.phase = Phase.READY if ready >= found.replicas else Phase.PROVISIONING
    try:
        with transaction.atomic():
            found.save()
            AllocationEvent.objects.create(
                allocation=found,
                kind=AllocationEvent.Kind.ADOPTED,
                message=f"adopted {len(pool.compute())} existing object(s)",
            )
            audit_record(
                actor=ADOPTION_ACTOR,
                team_id=found.team_id,
                action="allocation.adopt",
                target_type="allocation",
                target=found.name,
                payload={"namespace": found.namespace, "strategy": found.strategy},
            )
            announce(found, "allocation.created")
    except IntegrityError:
        # A live allocation holds the name (created since the caller looked, or in another
        # namespace): these objects are not one we can adopt.
        return Orphan(key[0], key[1], (), "an active allocation with this name exists")
    return found


def adopt_context(
    key: tuple[str, str], pvc: Mapping[str, Any], *, dry_run: bool = False
) -> ContextResource | Orphan:
    """A named context's PVC with both labels and no row (the Go service's) becomes a
    context again, so its callers can read and delete it."""
    namespace, name = key
    labels = labels_of(pvc)
    pvc_name = name_of(pvc)
    found = (f"PersistentVolumeClaim/{pvc_name}",)
    if not is_pool_name(name) or pvc_name != context_pvc_name(name):
        return Orphan(namespace, name, found, f"not the PVC a context named {name!r} would have")
    context_type = labels.get(CONTEXT_TYPE_LABEL, "")
    if context_type not in ContextType.values:
        return Orphan(namespace, name, found, f"unknown context type {context_type!r}")
    shape = pvc_shape(pvc)
    context = ContextResource(
        name=name,
        namespace=namespace,
        type=context_type,
        size=shape.size,
        access_mode=shape.access_mode,
        storage_class=shape.storage_class,
        status=(
            ContextResource.Status.READY
            if pvc_is_bound(pvc)
            else ContextResource.Status.PROVISIONING
        ),
        requester=ADOPTION_ACTOR,
    )
    if dry_run:
        return context
    try:
        with transaction.atomic():
            context.save()
            audit_record(
                actor=ADOPTION_ACTOR,
                team_id=context.team_id,
                action="context.adopt",
                target_type="context",
                target=str(context),
                payload={"type": context_type, "pvc": pvc_name},
            )
    except IntegrityError:
        return Orphan(namespace, name, found, "an active context with this name exists")
    return context

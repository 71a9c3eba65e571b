"""What the watcher records of the objects in managed namespaces that are not allocations'
own, for a POST to read instead of asking the API server: somebody else's objects under
names the service would use (ForeignObject), and each warm pool's verdict with its
template (WarmPoolSeen). Only the watcher holding shard 0 writes these."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from allocations.models import ForeignObject, WarmPoolSeen
from allocations.services.warmpool import warm_pool_verdict
from contextsvc.kube.objects.fields import name_of
from contextsvc.kube.objects.warmpool import warm_pool_template_name

# (namespace, kind, name) of one object.
ForeignKey = tuple[str, str, str]


def foreign_objects_update(*, present: Iterable[ForeignKey], gone: Iterable[ForeignKey]) -> None:
    """Objects that appeared, and objects that went (or became ours), in one transaction."""
    present, gone = sorted(set(present)), sorted(set(gone))
    with transaction.atomic():
        if present:
            ForeignObject.objects.bulk_create(
                [ForeignObject(namespace=ns, kind=kind, name=name) for ns, kind, name in present],
                ignore_conflicts=True,
            )
        for namespace, keys in itertools.groupby(gone, key=lambda key: key[0]):
            named = [(kind, name) for _, kind, name in keys]
            ForeignObject.objects.filter(ForeignObject.named(namespace, named)).delete()


def foreign_objects_reconcile(*, seen: set[ForeignKey], namespaces: list[str] | None) -> None:
    """Once the watcher's caches are filled: the rows of the namespaces it watches
    (``namespaces``; None: every namespace) are what it sees now. Rows of objects that went
    while no watcher ran are removed."""
    with transaction.atomic():
        rows = ForeignObject.objects.all()
        if namespaces is not None:
            rows = rows.filter(namespace__in=namespaces)
        recorded = set(rows.values_list("namespace", "kind", "name"))
        foreign_objects_update(present=seen - recorded, gone=recorded - seen)


def warm_pools_record(
    *, namespace: str, pools: list[dict[str, Any]], templates: Mapping[str, dict[str, Any]]
) -> None:
    """The verdict of every warm pool in ``namespace`` with its template (``templates``: by
    name), as the watcher now sees them; rows of pools that went are removed."""
    verdicts = {
        name_of(pool): warm_pool_verdict(pool, templates.get(warm_pool_template_name(pool) or ""))
        for pool in pools
    }
    with transaction.atomic():
        WarmPoolSeen.objects.filter(namespace=namespace).exclude(name__in=verdicts).delete()
        for name, verdict in verdicts.items():
            WarmPoolSeen.objects.update_or_create(
                namespace=namespace, name=name, defaults={"verdict": verdict}
            )


def warm_pools_reconcile(*, seen: set[str], namespaces: list[str] | None) -> None:
    """Once the caches are filled: rows of namespaces where the watcher sees no warm pool
    at all are removed (the others are written whole by warm_pools_record)."""
    rows = WarmPoolSeen.objects.exclude(namespace__in=seen)
    if namespaces is not None:
        rows = rows.filter(namespace__in=namespaces)
    rows.delete()

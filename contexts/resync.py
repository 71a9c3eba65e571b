"""The periodic resync's part for named contexts (allocations/resync.py lists the PVCs
once for both): what the watcher concludes from PVC events, recomputed from the list, and
the deletes and creates that stalled queued again."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.utils import timezone

from contexts import queue, services
from contexts.models import ContextResource
from contextsvc.infra.volumes import ResyncReport, VolumeKey


def resync_contexts(
    pvcs: dict[VolumeKey, Mapping[str, Any]], report: ResyncReport, grace: timedelta
) -> set[VolumeKey]:
    """Record what each context's PVC (``pvcs``: by namespace and name) says of it, and
    re-queue the deletes and creates that stalled for longer than ``grace``. Returns the
    contexts' keys: the PVCs of the others have no row (the resync may adopt them)."""
    active = list(ContextResource.objects.exclude(status=ContextResource.Status.DELETED))
    changed = 0
    for context in active:
        pvc = pvcs.get((context.namespace, context.name))
        if services.context_record_observed(context=context, pvc=pvc):
            changed += 1
        elif (
            context.status == ContextResource.Status.DELETING
            and timezone.now() - context.updated_at > grace
        ):
            # Its delete task never ran (the broker was down) or gave up polling.
            queue.delete_context(context.pk)
            report.requeued.append(f"context {context.namespace}/{context.name}")
        elif (
            pvc is None
            and context.status == ContextResource.Status.PROVISIONING
            and timezone.now() - context.updated_at > grace
        ):
            # The request that made it died before creating its PVC, or the worker gave up.
            queue.reconcile_context(context.pk)
            report.requeued.append(f"context {context.namespace}/{context.name}")
    report.changed += changed
    return {(context.namespace, context.name) for context in active}

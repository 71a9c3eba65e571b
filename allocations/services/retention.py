"""Retention: released allocations older than ``CS_RETENTION_RELEASED_DAYS`` are removed with
their timelines, a batch per transaction, by beat (allocations.tasks.retention). What they
counted for in ``/metrics`` is folded into the tallies first, and every batch leaves one
audit entry; the audit log itself is never trimmed."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from allocations import selectors
from allocations.models import Allocation, Phase
from contextsvc.core.retention import count_removed, remove_in_batches
from contextsvc.core.services import SERVICE_ACTOR, audit_record
from contextsvc.core.tallies import histogram_fold, tallies_add

RETENTION_ACTION = "allocation.retention"


def allocations_retention() -> int:
    """Beat: remove the allocations released longer ago than CS_RETENTION_RELEASED_DAYS."""
    return remove_in_batches(allocations_remove_released, settings.CS_RETENTION_RELEASED_DAYS)


def allocations_remove_released(before: datetime, batch: int) -> int:
    """Remove up to ``batch`` allocations released before ``before`` (the oldest first), with
    their timelines, in one transaction; how many were removed. Rows another run has locked
    are skipped, so two runs at once never remove or count a row twice."""
    with transaction.atomic():
        chosen = list(
            Allocation.objects.select_for_update(skip_locked=True)
            .filter(phase=Phase.RELEASED, released_at__lt=before)
            .order_by("released_at", "pk")
            .values_list("pk", "name", "namespace", "released_at")[:batch]
        )
        if not chosen:
            return 0
        dates = [at.isoformat() for *_, at in chosen if at is not None]
        rows = Allocation.objects.filter(pk__in=[pk for pk, *_ in chosen])
        _fold(rows)
        _, removed = rows.delete()  # the timeline goes with it (on_delete=CASCADE)
        count_removed(removed)
        audit_record(
            actor=SERVICE_ACTOR,
            action=RETENTION_ACTION,
            target_type="allocation",
            target=f"{len(chosen)} released allocations",
            payload={
                "removed": len(chosen),
                "releasedBefore": before.isoformat(),
                "oldestReleasedAt": dates[0],
                "newestReleasedAt": dates[-1],
                "allocations": [f"{namespace}/{name}" for _, name, namespace, _ in chosen],
            },
        )
    return len(chosen)


def _fold(rows: QuerySet[Allocation]) -> None:
    """Add what ``rows`` count for in /metrics to the tallies (they are deleted next)."""
    buckets = selectors.READY_BUCKETS
    histogram_fold(selectors.TIME_TO_READY, (), rows, "requested_at", "ready_at", buckets)
    for phase, field in selectors.PHASE_FIELDS:
        histogram_fold(selectors.PHASE_SECONDS, (phase,), rows, "requested_at", field, buckets)
    tallies_add(selectors.WARM_POOL_CLAIMS, selectors.warm_claims_labelled(rows))
    tallies_add(selectors.RECONCILE_ERRORS, selectors.reconcile_error_counts(rows))

"""Retention: finished approval requests (approved, denied, expired, cancelled) decided longer
ago than ``CS_RETENTION_APPROVALS_DAYS`` are removed with their runs, sign-offs, deliveries
and links, a batch per transaction, by beat (approvals.tasks.retention). What they counted
for in ``/metrics`` and on the analytics page is folded into the tallies first, and every
batch leaves one audit entry; the audit log itself (each request's own entries among it) is
never trimmed, and nor are the rule decisions' counts and the grants."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from approvals import selectors
from approvals.models import ApprovalRequest, Delivery, OperationRun, Status
from contextsvc.core.retention import count_removed, remove_in_batches
from contextsvc.core.services import SERVICE_ACTOR, audit_record
from contextsvc.core.tallies import histogram_fold, tallies_add

RETENTION_ACTION = "approval.retention"


def approvals_retention() -> int:
    """Beat: remove the requests finished longer ago than CS_RETENTION_APPROVALS_DAYS."""
    return remove_in_batches(approvals_remove_finished, settings.CS_RETENTION_APPROVALS_DAYS)


def approvals_remove_finished(before: datetime, batch: int) -> int:
    """Remove up to ``batch`` requests decided before ``before`` (the oldest first), with
    what hangs off them, in one transaction; how many were removed. Rows another run has
    locked are skipped, so two runs at once never remove or count a row twice."""
    with transaction.atomic():
        chosen = list(
            ApprovalRequest.objects.select_for_update(skip_locked=True)
            .exclude(status=Status.PENDING)
            .filter(decided_at__lt=before)
            # A message still being tried finishes first (the sweep's), then goes.
            .exclude(deliveries__status=Delivery.Status.PENDING)
            .order_by("decided_at", "pk")
            .values_list("pk", "decided_at")[:batch]
        )
        if not chosen:
            return 0
        dates = [at.isoformat() for _, at in chosen if at is not None]
        rows = ApprovalRequest.objects.filter(pk__in=[pk for pk, _ in chosen])
        _fold(rows)
        # A run protects its request (it is the decision's record): it goes first.
        runs, runs_removed = OperationRun.objects.filter(request__in=rows).delete()
        # Sign-offs, deliveries and their attempts, links: on_delete=CASCADE.
        _, removed = rows.delete()
        count_removed(Counter(runs_removed) + Counter(removed))
        audit_record(
            actor=SERVICE_ACTOR,
            action=RETENTION_ACTION,
            target_type="approval",
            target=f"{len(chosen)} finished requests",
            payload={
                "removed": len(chosen),
                "runsRemoved": runs,
                "decidedBefore": before.isoformat(),
                "oldestDecidedAt": dates[0],
                "newestDecidedAt": dates[-1],
                "requests": [str(pk) for pk, _ in chosen],
            },
        )
    return len(chosen)


def _fold(rows: QuerySet[ApprovalRequest]) -> None:
    """Add what ``rows`` count for to the tallies (they are deleted next)."""
    histogram_fold(
        selectors.DECISION_LATENCY,
        (),
        selectors.approvals_decided().filter(pk__in=rows),
        "created_at",
        "decided_at",
        selectors.DECISION_BUCKETS,
    )
    tallies_add(
        selectors.OUTCOME_COUNTS,
        (((agent, outcome), n) for agent, outcome, n in selectors.outcome_counts(rows=rows)),
    )
    tallies_add(
        selectors.ESCALATIONS, (((agent,), n) for agent, n in selectors.escalation_counts(rows))
    )
    tallies_add(
        selectors.DELIVERIES,
        (((medium, status), n) for medium, status, n in selectors.delivery_counts(rows)),
    )
    tallies_add(
        selectors.REFUSED_EFFECTS,
        (
            ((agent, action, by), n)
            for agent, action, by, n in selectors.refused_effect_counts(rows)
        ),
    )

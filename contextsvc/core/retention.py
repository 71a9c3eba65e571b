"""What every app's retention shares: the cutoff for a setting in days; removal in batches
(one transaction each, so a long removal never holds locks or a snapshot for long) within a
time budget (the next beat run goes on where this one stopped); the rows removed, counted;
and what a table holds (the Cluster page and ``/metrics`` say it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Min, Model, QuerySet
from django.utils import timezone

from contextsvc.core.models import AuditEntry
from contextsvc.core.tallies import retired, tallies_add

# One beat run removes for at most this long.
BUDGET_SECONDS = 60.0


def cutoff(days: int, *, now: datetime | None = None) -> datetime | None:
    """Rows older than this are removed; None when ``days`` is 0 (kept for ever)."""
    if not days:
        return None
    return (now or timezone.now()) - timedelta(days=days)


def remove_in_batches(remove: Callable[[datetime, int], int], days: int) -> int:
    """Call ``remove(before, batch)`` until it removes less than a batch or the budget is
    spent; how many rows it removed in all."""
    before = cutoff(days)
    if before is None:
        return 0
    batch = settings.CS_RETENTION_BATCH
    started, removed = time.monotonic(), 0
    while time.monotonic() - started < BUDGET_SECONDS:
        done = remove(before, batch)
        removed += done
        if done < batch:
            break
    return removed


# The rows retention removed, by table (model label): a tally, so a counter of /metrics.
REMOVED = "contextsvc_retention_removed"


def count_removed(per_model: dict[str, int]) -> None:
    """Tally what a ``QuerySet.delete()`` says it removed, by model. Call it inside the
    transaction that removed them."""
    tallies_add(REMOVED, (((label,), count) for label, count in per_model.items()))


@dataclass(frozen=True)
class Kept:
    """One table as retention sees it: the rows it holds, the oldest that retention may
    remove (its date: a date past the policy says retention is behind), and how many it
    removed so far; ``keep_days`` 0 while kept for ever."""

    table: str
    rows: int
    oldest_removable: datetime | None
    removed: int
    keep_days: int


def kept(model: type[Model], removable: QuerySet[Any] | None, field: str, keep_days: int) -> Kept:
    """``Kept`` for ``model``, whose rows retention may remove are ``removable``, dated by
    ``field`` (None: it removes them only with their parent rows)."""
    oldest = removable.aggregate(oldest=Min(field))["oldest"] if removable is not None else None
    table = model._meta.label
    return Kept(
        table=table,
        rows=model._default_manager.count(),
        oldest_removable=oldest,
        removed=int(retired(REMOVED).get((table,), 0)),
        keep_days=keep_days,
    )


def retention_kept() -> list[Kept]:
    """The audit log as retention sees it: never trimmed (it is the record of every change,
    the removals' own entries among it)."""
    return [kept(AuditEntry, None, "at", 0)]

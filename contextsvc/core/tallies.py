"""What rows removed by retention still count for (``RetiredTally``).

``/metrics``' counters and histograms, and the analytics page, are computed from rows. A
retention removal first folds what its rows count for into these totals (``tallies_add``,
``histogram_fold``), in the transaction that deletes them; a reader adds the totals back
(``with_retired``, ``histogram_with_retired``). So a counter never goes backwards, and the
all-time numbers stay the same after a removal as before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import F, QuerySet

from contextsvc.core.models import RetiredTally
from contextsvc.core.selectors import duration_histogram

Counts = Iterable[tuple[Sequence[str], float]]


def tallies_add(series: str, counts: Counts) -> None:
    """Add each (label values, count) to ``series``' retired totals. Call it inside the
    transaction that deletes the rows counted."""
    for labels, value in _summed(counts).items():
        if not value:
            continue
        tally, _ = RetiredTally.objects.select_for_update().get_or_create(
            series=series, labels=list(labels)
        )
        RetiredTally.objects.filter(pk=tally.pk).update(value=F("value") + value)


def retired(series: str) -> dict[tuple[str, ...], float]:
    """``series``' retired totals by label values."""
    return {
        tuple(labels): value
        for labels, value in RetiredTally.objects.filter(series=series).values_list(
            "labels", "value"
        )
    }


def with_retired(series: str, counts: Counts) -> list[tuple[tuple[str, ...], float]]:
    """The counts of the rows kept plus those of the rows removed, by label values (sorted)."""
    summed = _summed(counts)
    for labels, value in retired(series).items():
        summed[labels] += value
    return sorted(summed.items())


def _summed(counts: Counts) -> defaultdict[tuple[str, ...], float]:
    summed: defaultdict[tuple[str, ...], float] = defaultdict(float)
    for labels, value in counts:
        summed[tuple(labels)] += float(value)
    return summed


# A histogram is kept as one tally per bucket (its index), its count and its sum of seconds.
_TOTAL, _SECONDS = "count", "sum"


def histogram_fold(
    series: str,
    labels: Sequence[str],
    queryset: QuerySet[Any],
    start: str,
    end: str,
    buckets: Sequence[float],
) -> None:
    """Add ``queryset``'s rows to ``series``' retired histogram (under ``labels``)."""
    counts, total, seconds = duration_histogram(queryset, start, end, buckets)
    tallies_add(
        series,
        [
            *(((*labels, str(index)), count) for index, count in enumerate(counts)),
            ((*labels, _TOTAL), total),
            ((*labels, _SECONDS), seconds),
        ],
    )


def histogram_with_retired(
    series: str,
    labels: Sequence[str],
    queryset: QuerySet[Any],
    start: str,
    end: str,
    buckets: Sequence[float],
) -> tuple[list[float], float, float]:
    """``duration_histogram`` over ``queryset`` plus the rows removed: (cumulative bucket
    counts, count, sum of seconds)."""
    counts, total, seconds = duration_histogram(queryset, start, end, buckets)
    kept = retired(series)
    key = tuple(labels)
    return (
        [count + kept.get((*key, str(index)), 0.0) for index, count in enumerate(counts)],
        total + kept.get((*key, _TOTAL), 0.0),
        seconds + kept.get((*key, _SECONDS), 0.0),
    )

"""What every app's Prometheus collector shares (each app's ``metrics.py`` holds its own
series; config/metrics.py registers them and serves ``/metrics``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from contextsvc.core.retention import REMOVED, Kept
from contextsvc.core.tallies import histogram_with_retired, retired


def histogram(
    series: str,
    queryset: Any,
    start: str,
    end: str,
    buckets: tuple[int, ...],
    labels: Sequence[str] = (),
) -> tuple[list[tuple[str, float]], float]:
    """Prometheus' cumulative buckets ("le" labels, then "+Inf") and the sum of
    ``end - start`` over ``queryset``, with the rows retention removed (their tallies)."""
    counts, total, seconds = histogram_with_retired(series, labels, queryset, start, end, buckets)
    labelled = zip((str(float(bucket)) for bucket in buckets), map(float, counts), strict=True)
    return [*labelled, ("+Inf", float(total))], seconds


class RetentionCollector:
    """The rows each table holds and those retention removed from it; ``sources`` are the
    apps' ``retention_kept`` selectors (config/metrics.py names them)."""

    def __init__(self, *sources: Callable[[], list[Kept]]) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Any]:
        rows = GaugeMetricFamily(
            "contextsvc_rows_kept",
            "Rows each table holds (retention: CS_RETENTION_*).",
            labels=["table"],
        )
        removed = CounterMetricFamily(
            REMOVED, "Rows retention removed from each table.", labels=["table"]
        )
        # Every table retention looks after, at 0 before its first removal (a counter that
        # appears only once something happened cannot be told from one not exported; the
        # Retention card shows the same numbers), and every other table a removal reached
        # (rows removed with their parent rows).
        counts: dict[str, int] = {}
        for source in self.sources:
            for table in source():
                rows.add_metric([table.table], table.rows)
                counts[table.table] = table.removed
        for (name,), count in retired(REMOVED).items():
            counts[name] = int(count)
        for name, count in sorted(counts.items()):
            removed.add_metric([name], count)
        yield rows
        yield removed

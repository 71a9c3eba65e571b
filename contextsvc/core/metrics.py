"""What every app's Prometheus collector shares (each app's ``metrics.py`` holds its own
series; config/metrics.py registers them and serves ``/metrics``)."""

from __future__ import annotations

from typing import Any

from contextsvc.core.selectors import duration_histogram


def histogram(
    queryset: Any, start: str, end: str, buckets: tuple[int, ...]
) -> tuple[list[tuple[str, float]], float]:
    """Prometheus' cumulative buckets ("le" labels, then "+Inf") and the sum of
    ``end - start`` over ``queryset``."""
    counts, total, seconds = duration_histogram(queryset, start, end, buckets)
    labelled = zip((str(float(bucket)) for bucket in buckets), map(float, counts), strict=True)
    return [*labelled, ("+Inf", float(total))], seconds

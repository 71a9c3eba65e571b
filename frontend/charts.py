"""The overview's plots as data: what frontend/static/frontend/charts.js hands to Chart.js.

Each is computed from rows the service keeps anyway (allocation timestamps, approval
decisions, the warm pools' audit entries), so the plots need no samples of their own and
every web replica draws the same. They come with the overview's live snapshot, so they are
redrawn whenever the tiles are."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from allocations import selectors as allocations
from approvals import selectors as approvals
from contextsvc.core import selectors as core

# Upper bounds (seconds) of the distributions' bars; the last bar is everything above.
READY_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300)
PHASE_LABELS = {
    "objects_created": "objects created",
    "volumes_bound": "volumes bound",
    "pods_scheduled": "Pods scheduled",
    "claims_bound": "claims bound",
    "ready": "ready",
}
TIMELINE_MINUTES = 60
PHASE_NAMES = ("provisioning", "ready", "failed")
WARM_WINDOW = timedelta(hours=1)


def _labels(bounds: Sequence[int]) -> list[str]:
    def text(seconds: int) -> str:
        return f"{seconds // 60} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds} s"

    return [f"≤ {text(bound)}" for bound in bounds] + [f"> {text(bounds[-1])}"]


def _per_bucket(cumulative: list[int], total: int) -> list[int]:
    """Bars from cumulative counts: each bucket's own, and the rest above the last."""
    bounded = [count - below for count, below in zip(cumulative, [0, *cumulative], strict=False)]
    return [*bounded, total - (cumulative[-1] if cumulative else 0)]


def time_to_phase(now: datetime) -> dict[str, Any]:
    """How long allocations of the last 24 hours took to reach each phase (a distribution
    per phase, in the same buckets; counted by PostgreSQL)."""
    requested = allocations.allocations_requested_since(now - timedelta(hours=24))
    series = {}
    for phase, field in allocations.PHASE_FIELDS:
        cumulative, total, _ = core.duration_histogram(
            requested, "requested_at", field, READY_BUCKETS
        )
        if total or phase in ("objects_created", "ready"):
            series[PHASE_LABELS[phase]] = _per_bucket(cumulative, total)
    return {"labels": _labels(READY_BUCKETS), "series": series, "allocations": requested.count()}


def _minute(at: datetime) -> datetime:
    return at.replace(second=0, microsecond=0)


def phases_over_time(now: datetime) -> dict[str, Any]:
    """How many allocations were provisioning, ready or failed at the end of each minute of
    the last hour (from their timestamps: one being released no longer counts)."""
    first = _minute(now) - timedelta(minutes=TIMELINE_MINUTES - 1)
    count = TIMELINE_MINUTES

    def index(at: datetime | None) -> int:
        """The first minute whose end is at or after ``at`` (``count`` if none, or never)."""
        if at is None:
            return count
        seconds = (at - first).total_seconds() - 59.999999
        return min(max(math.ceil(seconds / 60), 0), count)

    # Each allocation adds one to a run of minutes per phase: difference arrays keep this
    # linear in rows and minutes.
    runs: dict[str, list[int]] = {name: [0] * (count + 1) for name in PHASE_NAMES}
    for requested, ready, failed, releasing, released in allocations.phase_intervals(since=first):
        start, end = index(requested), index(releasing or released)
        failing = min(index(failed), end)
        becomes_ready = min(index(ready), failing)
        for name, begin, stop in (
            ("provisioning", start, becomes_ready),
            ("ready", max(start, becomes_ready), failing),
            ("failed", max(start, failing), end),
        ):
            if begin < stop:
                runs[name][begin] += 1
                runs[name][stop] -= 1
    series = {name: list(itertools.accumulate(diffs))[:count] for name, diffs in runs.items()}
    labels = [
        timezone.localtime(first + timedelta(minutes=i)).strftime("%H:%M") for i in range(count)
    ]
    return {"labels": labels, "series": series}


def warm_pools(now: datetime) -> dict[str, Any]:
    """Per warm pool the service sized in the last hour: its size after each change (from
    the audit log) against the claims asked of it per minute."""
    since = now - WARM_WINDOW
    minutes = [_minute(since) + timedelta(minutes=i) for i in range(61)]
    sizes: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
    for entry in core.audit_of_actions(
        actions=("warmpool.create", "warmpool.scale"), since=now - timedelta(days=7)
    ):
        replicas = entry.payload.get("replicas")
        size = replicas[-1] if isinstance(replicas, list) else replicas
        if isinstance(size, int):
            sizes[entry.target].append((entry.at, size))
    demand: dict[str, list[int]] = defaultdict(lambda: [0] * len(minutes))
    for namespace, pool, requested, replicas in allocations.warm_pool_requests(since=since):
        index = min(int((requested - minutes[0]).total_seconds() // 60), len(minutes) - 1)
        demand[f"{namespace}/{pool}"][index] += replicas
    pools = []
    for target in sorted(sizes):
        changes = sizes[target]
        size_at = []
        for minute in minutes:
            known = [size for at, size in changes if at <= minute + timedelta(seconds=59)]
            size_at.append(known[-1] if known else None)
        pools.append({"pool": target, "size": size_at, "demand": demand[target]})
    labels = [timezone.localtime(m).strftime("%H:%M") for m in minutes]
    return {"labels": labels, "pools": pools, "hitRatio": _hit_ratio(since)}


def _hit_ratio(since: datetime) -> str:
    """How many of the last hour's claims found a warm Sandbox, every warm pool together
    (what contextsvc_warm_pool_hit_ratio says of all time, in /metrics)."""
    warm = cold = 0
    for _, _, hits, misses in allocations.warm_claim_counts(since=since):
        warm, cold = warm + hits, cold + misses
    claims = warm + cold
    if not claims:
        return "no claims"
    return f"{100 * warm / claims:.0f} % warm ({warm} of {claims} claims)"


def decision_time(now: datetime) -> dict[str, Any]:
    """How long people took to decide approvals over the last 7 days."""
    decided = approvals.approvals_decided_since(now - timedelta(days=7))
    cumulative, total, _ = core.duration_histogram(
        decided, "created_at", "decided_at", approvals.DECISION_BUCKETS
    )
    return {
        "labels": _labels(approvals.DECISION_BUCKETS),
        "counts": _per_bucket(cumulative, total),
        "decisions": total,
    }


def overview_charts(now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    return {
        "timeToPhase": time_to_phase(now),
        "phasesOverTime": phases_over_time(now),
        "warmPools": warm_pools(now),
        "decisionTime": decision_time(now),
    }


OUTCOME_LABELS = {
    "approved": "approved",
    "approved_edited": "approved as edited",
    "denied": "denied",
    "expired": "expired",
    "cancelled": "cancelled",
}


def approval_outcomes(since: datetime) -> dict[str, Any]:
    """Requests people finished since ``since``, per agent type and outcome (a stacked
    bar per agent type)."""
    rows = approvals.outcome_counts(since=since)
    agent_types = sorted({agent_type for agent_type, _, _ in rows})
    counts = {(agent_type, outcome): count for agent_type, outcome, count in rows}
    series = {
        label: [counts.get((agent_type, outcome), 0) for agent_type in agent_types]
        for outcome, label in OUTCOME_LABELS.items()
    }
    return {"labels": agent_types, "series": series}


def approval_analytics(now: datetime | None = None) -> dict[str, Any]:
    """The approvals analytics page's plots: time to decision and outcomes by agent type
    over the last 7 days."""
    now = now or timezone.now()
    return {
        "decisionTime": decision_time(now),
        "outcomes": approval_outcomes(now - timedelta(days=7)),
    }

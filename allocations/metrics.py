"""The allocations' series of ``/metrics``: allocations by phase, the time to ready and to
each readiness phase, warm-pool claims, reconcile errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from allocations import selectors
from contextsvc.core.metrics import histogram
from contextsvc.core.teams import EVERY_TEAM


class AllocationCollector:
    def collect(self) -> Iterator[Any]:
        phases = GaugeMetricFamily(
            "contextsvc_allocations", "Allocations by phase.", labels=["phase"]
        )
        for phase, count in selectors.allocation_phase_counts(reach=EVERY_TEAM).items():
            phases.add_metric([phase], count)
        yield phases

        buckets, seconds = histogram(
            selectors.TIME_TO_READY,
            selectors.allocations_requested(),
            "requested_at",
            "ready_at",
            selectors.READY_BUCKETS,
        )
        yield HistogramMetricFamily(
            selectors.TIME_TO_READY,
            "Request to ready, every allocation that became ready.",
            buckets=buckets,
            sum_value=seconds,
        )
        by_phase = HistogramMetricFamily(
            selectors.PHASE_SECONDS,
            "Request to each readiness phase (objects created, volumes bound, Pods scheduled, "
            "claims bound, ready), every allocation that reached it.",
            labels=["phase"],
        )
        for phase, field in selectors.PHASE_FIELDS:
            buckets, seconds = histogram(
                selectors.PHASE_SECONDS,
                selectors.allocations_requested(),
                "requested_at",
                field,
                selectors.READY_BUCKETS,
                labels=(phase,),
            )
            by_phase.add_metric([phase], buckets, seconds)
        yield by_phase
        claims = CounterMetricFamily(
            selectors.WARM_POOL_CLAIMS,
            "Claims bound per warm pool, by whether they took a warm Sandbox or cold-started.",
            labels=["namespace", "pool", "origin"],
        )
        hits = GaugeMetricFamily(
            "contextsvc_warm_pool_hit_ratio",
            "Share of a warm pool's bound claims that took a warm Sandbox.",
            labels=["namespace", "pool"],
        )
        for namespace, pool, warm, cold in selectors.warm_claim_counts_all():
            claims.add_metric([namespace, pool, "warm"], warm)
            claims.add_metric([namespace, pool, "cold"], cold)
            if warm + cold:
                hits.add_metric([namespace, pool], warm / (warm + cold))
        yield claims
        yield hits

        errors = CounterMetricFamily(
            selectors.RECONCILE_ERRORS, "Reconcile failures by reason.", labels=["reason"]
        )
        for reason, failures in selectors.reconcile_error_counts_all():
            errors.add_metric(list(reason), failures)
        yield errors

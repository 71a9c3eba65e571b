"""``/metrics`` in the Prometheus text format, computed from PostgreSQL at scrape time, so
every web replica answers the same and nothing is lost when a process restarts. Histograms
and counters count every row ever recorded (rows are kept), so they only grow, as
Prometheus' ``rate()`` and ``histogram_quantile()`` expect.

Needs a bearer token with the ``read`` scope (Prometheus: ``authorization: credentials``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from allocations import selectors as allocation_selectors
from approvals import selectors as approval_selectors
from contextsvc.core.auth import SH_AUTH_HEADER, InvalidCredentials, principal_from_headers
from contextsvc.core.models import Scope
from contextsvc.core.selectors import duration_histogram
from workspaces import selectors as workspace_selectors

READY_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
DECISION_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600)


def _histogram(
    queryset: Any, start: str, end: str, buckets: tuple[int, ...]
) -> tuple[list[tuple[str, float]], float]:
    """Prometheus' cumulative buckets ("le" labels, then "+Inf") and the sum of
    ``end - start`` over ``queryset``."""
    counts, total, seconds = duration_histogram(queryset, start, end, buckets)
    labelled = zip((str(float(bucket)) for bucket in buckets), map(float, counts), strict=True)
    return [*labelled, ("+Inf", float(total))], seconds


class ServiceCollector:
    def collect(self) -> Iterator[Any]:
        context_bytes = GaugeMetricFamily(
            "rossoctl_context_workspace_bytes",
            "Disk used by one context's directory.",
            labels=["context_id", "agent", "namespace"],
        )
        last_accessed = GaugeMetricFamily(
            "rossoctl_context_last_accessed_timestamp",
            "When a context was last used (TTL tracking).",
            labels=["context_id", "agent", "namespace"],
        )
        for context in workspace_selectors.contexts_active():
            labels = [context.context_id, context.workspace.agent_type, context.workspace.namespace]
            context_bytes.add_metric(labels, context.disk_usage_bytes)
            last_accessed.add_metric(labels, context.last_accessed_at.timestamp())
        yield context_bytes
        yield last_accessed

        usage = GaugeMetricFamily(
            "rossoctl_workspace_pvc_usage_bytes",
            "Used space of an agent workspace PVC.",
            labels=["agent", "namespace"],
        )
        capacity = GaugeMetricFamily(
            "rossoctl_workspace_pvc_capacity_bytes",
            "Size of an agent workspace PVC.",
            labels=["agent", "namespace"],
        )
        for workspace in workspace_selectors.workspace_list_live():
            labels = [workspace.agent_type, workspace.namespace]
            usage.add_metric(labels, workspace.usage_bytes or 0)
            capacity.add_metric(labels, workspace.capacity_bytes or workspace.requested_bytes)
        yield usage
        yield capacity

        phases = GaugeMetricFamily(
            "contextsvc_allocations", "Allocations by phase.", labels=["phase"]
        )
        for phase, count in allocation_selectors.allocation_phase_counts().items():
            phases.add_metric([phase], count)
        yield phases

        buckets, seconds = _histogram(
            allocation_selectors.allocations_requested(),
            "requested_at",
            "ready_at",
            READY_BUCKETS,
        )
        yield HistogramMetricFamily(
            "contextsvc_allocation_time_to_ready_seconds",
            "Request to ready, every allocation that became ready.",
            buckets=buckets,
            sum_value=seconds,
        )
        by_phase = HistogramMetricFamily(
            "contextsvc_allocation_phase_seconds",
            "Request to each readiness phase (objects created, volumes bound, Pods scheduled, "
            "claims bound, ready), every allocation that reached it.",
            labels=["phase"],
        )
        for phase, field in allocation_selectors.PHASE_FIELDS:
            buckets, seconds = _histogram(
                allocation_selectors.allocations_requested(), "requested_at", field, READY_BUCKETS
            )
            by_phase.add_metric([phase], buckets, seconds)
        yield by_phase
        claims = CounterMetricFamily(
            "contextsvc_warm_pool_claims",
            "Claims bound per warm pool, by whether they took a warm Sandbox or cold-started.",
            labels=["namespace", "pool", "origin"],
        )
        hits = GaugeMetricFamily(
            "contextsvc_warm_pool_hit_ratio",
            "Share of a warm pool's bound claims that took a warm Sandbox.",
            labels=["namespace", "pool"],
        )
        for namespace, pool, warm, cold in allocation_selectors.warm_claim_counts():
            claims.add_metric([namespace, pool, "warm"], warm)
            claims.add_metric([namespace, pool, "cold"], cold)
            if warm + cold:
                hits.add_metric([namespace, pool], warm / (warm + cold))
        yield claims
        yield hits

        yield GaugeMetricFamily(
            "contextsvc_approvals_pending",
            "Operations waiting for a human.",
            value=approval_selectors.approvals_pending_count(),
        )
        buckets, seconds = _histogram(
            approval_selectors.approvals_decided(),
            "created_at",
            "decided_at",
            DECISION_BUCKETS,
        )
        yield HistogramMetricFamily(
            "contextsvc_approval_decision_latency_seconds",
            "Request to human decision, every approval or denial.",
            buckets=buckets,
            sum_value=seconds,
        )

        yield from _approval_analytics()

        errors = CounterMetricFamily(
            "contextsvc_reconcile_errors", "Reconcile failures by reason.", labels=["reason"]
        )
        retries, failed = allocation_selectors.reconcile_error_counts()
        errors.add_metric(["transient"], retries)
        for reason, count in failed:
            errors.add_metric([reason], count)
        yield errors


def _approval_analytics() -> Iterator[Any]:
    """Who decides what: rules at once, people later, the grants they made, escalations
    and the messages sent (the approvals analytics page shows the same counts)."""
    rules = CounterMetricFamily(
        "contextsvc_rule_decisions",
        "Operations a rule decided at once, by agent type, decision and rule.",
        labels=["agent_type", "decision", "rule"],
    )
    for row in approval_selectors.rule_decision_counts():
        rules.add_metric([row.agent_type, row.decision, row.rule], row.count)
    yield rules
    outcomes = CounterMetricFamily(
        "contextsvc_approval_outcomes",
        "Requests people finished (or let expire), by agent type and outcome.",
        labels=["agent_type", "outcome"],
    )
    for agent_type, outcome, count in approval_selectors.outcome_counts():
        outcomes.add_metric([agent_type, outcome], count)
    yield outcomes
    grants = CounterMetricFamily(
        "contextsvc_grant_hits",
        "Operations each grant (approve and allow similar) allowed.",
        labels=["grant", "agent_type", "scope", "rule"],
    )
    for grant in approval_selectors.grants_by_hits():
        grants.add_metric([str(grant.pk), grant.agent_type, grant.scope, grant.rule], grant.hits)
    yield grants
    escalations = CounterMetricFamily(
        "contextsvc_approval_escalations",
        "Requests escalated to their agent type's escalation group.",
        labels=["agent_type"],
    )
    for agent_type, count in approval_selectors.escalation_counts():
        escalations.add_metric([agent_type], count)
    yield escalations
    refused = CounterMetricFamily(
        "contextsvc_executor_refused_effects",
        "Effects an executor's sandbox refused a command (a read, write or network access it "
        "was not judged to have), by agent type and action: evidence of a rule-engine misreading.",
        labels=["agent_type", "action"],
    )
    for agent_type, action, count in approval_selectors.refused_effect_counts():
        refused.add_metric([agent_type, action], count)
    yield refused
    deliveries = GaugeMetricFamily(
        "contextsvc_notification_deliveries",
        "Notification messages by medium and status (pending ones are still being tried).",
        labels=["medium", "status"],
    )
    for medium, status, count in approval_selectors.delivery_counts():
        deliveries.add_metric([medium, status], count)
    yield deliveries


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    try:
        found = principal_from_headers(
            authorization=request.headers.get("Authorization", ""),
            sh_auth=request.headers.get(SH_AUTH_HEADER, ""),
        )
    except InvalidCredentials as exc:
        return _unauthorized(str(exc))
    if found is None:
        return _unauthorized("a token with the read scope is required")
    if not found[0].scopes & {Scope.READ, Scope.ADMIN}:
        return JsonResponse(
            {
                "error": "forbidden",
                "message": "this credential lacks the scope this endpoint needs",
            },
            status=403,
        )
    registry = CollectorRegistry()
    registry.register(ServiceCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def _unauthorized(message: str) -> JsonResponse:
    return JsonResponse(
        {"error": "unauthorized", "message": message},
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="context-service"'},
    )

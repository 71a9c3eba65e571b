"""The approvals' series of ``/metrics``: what waits for a human, how long decisions take,
and who decides what (rules at once, people later, grants, escalations, messages sent)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from approvals import selectors
from contextsvc.core.metrics import histogram
from contextsvc.core.teams import EVERY_TEAM


class ApprovalCollector:
    def collect(self) -> Iterator[Any]:
        yield GaugeMetricFamily(
            "contextsvc_approvals_pending",
            "Operations waiting for a human.",
            value=selectors.approvals_pending_count(),
        )
        buckets, seconds = histogram(
            selectors.DECISION_LATENCY,
            selectors.approvals_decided(),
            "created_at",
            "decided_at",
            selectors.DECISION_BUCKETS,
        )
        yield HistogramMetricFamily(
            selectors.DECISION_LATENCY,
            "Request to human decision, every approval or denial.",
            buckets=buckets,
            sum_value=seconds,
        )

        yield from _analytics()


def _analytics() -> Iterator[Any]:
    """Who decides what: rules at once, people later, the grants they made, escalations
    and the messages sent (the approvals analytics page shows the same counts)."""
    rules = CounterMetricFamily(
        "contextsvc_rule_decisions",
        "Operations a rule decided at once, by agent type, decision and rule.",
        labels=["agent_type", "decision", "rule"],
    )
    for row in selectors.rule_decision_counts():
        rules.add_metric([row.agent_type, row.decision, row.rule], row.count)
    yield rules
    outcomes = CounterMetricFamily(
        selectors.OUTCOME_COUNTS,
        "Requests people finished (or let expire), by agent type and outcome.",
        labels=["agent_type", "outcome"],
    )
    for agent_type, outcome, count in selectors.outcome_counts_all():
        outcomes.add_metric([agent_type, outcome], count)
    yield outcomes
    grants = CounterMetricFamily(
        "contextsvc_grant_hits",
        "Operations each grant (approve and allow similar) allowed.",
        labels=["grant", "agent_type", "scope", "rule"],
    )
    for grant in selectors.grants_by_hits(reach=EVERY_TEAM):
        grants.add_metric([str(grant.pk), grant.agent_type, grant.scope, grant.rule], grant.hits)
    yield grants
    escalations = CounterMetricFamily(
        selectors.ESCALATIONS,
        "Requests escalated to their agent type's escalation group.",
        labels=["agent_type"],
    )
    for agent_type, count in selectors.escalation_counts_all():
        escalations.add_metric([agent_type], count)
    yield escalations
    refused = CounterMetricFamily(
        selectors.REFUSED_EFFECTS,
        "Effects an executor's sandbox refused a command (a read, write or network access it "
        "was not judged to have), by agent type, action and who reported it (executor: its "
        "egress proxy's record; program: read from the program's error output): evidence of "
        "a rule-engine misreading.",
        labels=["agent_type", "action", "reported_by"],
    )
    for agent_type, action, reported_by, count in selectors.refused_effect_counts_all():
        refused.add_metric([agent_type, action, reported_by], count)
    yield refused
    deliveries = GaugeMetricFamily(
        selectors.DELIVERIES,
        "Notification messages by medium and status (pending ones are still being tried).",
        labels=["medium", "status"],
    )
    for medium, status, count in selectors.delivery_counts_all():
        deliveries.add_metric([medium, status], count)
    yield deliveries

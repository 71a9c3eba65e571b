"""How approvals go: time to decision, outcomes, the rules and grants that decide most, and
what was escalated or sent (the same counts /metrics exports)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from approvals import selectors
from contextsvc.core.teams import reach_of
from frontend.access import viewer_required
from frontend.charts import approval_analytics as charts

TOP = 20


@viewer_required
def approval_analytics(request: HttpRequest) -> HttpResponse:
    outcomes = selectors.outcome_counts_all()
    totals: dict[str, int] = dict.fromkeys(selectors.OUTCOMES, 0)
    for _, outcome, count in outcomes:
        totals[outcome] += count
    finished = sum(totals.values())
    return render(
        request,
        "frontend/analytics.html",
        {
            "charts": charts(),
            "totals": totals,
            "finished": finished,
            "expired_share": round(100 * totals["expired"] / finished) if finished else 0,
            "outcomes": outcomes,
            "rules": selectors.rule_decision_counts(limit=TOP),
            # The grants are objects of a team; the counts are the platform's, every team's.
            "grants": selectors.grants_by_hits(reach=reach_of(request.user), limit=TOP),
            "escalations": selectors.escalation_counts_all(),
            "deliveries": selectors.delivery_counts_all(),
        },
    )

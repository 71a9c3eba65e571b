from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from allocations.selectors import allocation_needs_attention, allocation_phase_counts
from approvals.selectors import approval_pending_summary
from contextsvc.core.selectors import audit_recent, heartbeat_list_recent
from contextsvc.core.teams import reach_of
from frontend.access import viewer_required
from frontend.charts import overview_charts


@viewer_required
def overview(request: HttpRequest) -> HttpResponse:
    reach = reach_of(request.user)
    return render(
        request,
        "frontend/overview.html",
        {
            "counts": allocation_phase_counts(reach=reach),
            "approvals": approval_pending_summary(reach=reach),
            "attention": allocation_needs_attention(
                stuck_after_seconds=settings.CS_STUCK_AFTER_SECONDS, reach=reach
            ),
            "recent": audit_recent(limit=15, reach=reach),
            "heartbeats": heartbeat_list_recent(),
            "charts": overview_charts(),
            "live_topic": "overview",
        },
    )

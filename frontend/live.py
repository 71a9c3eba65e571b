"""Page snapshots for the live dashboard. A browser receives one when its WebSocket opens
(and again when it reconnects), then applies typed events; events carry the same row
shapes as snapshots, so a stale snapshot plus the events equals a fresh snapshot."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from allocations.models import VISIBLE_PHASES, Allocation
from allocations.selectors import allocation_phase_counts, allocation_row
from approvals.models import ApprovalRequest
from approvals.selectors import approval_list_pending, approvals_pending_count, parse_request_id
from approvals.shapes import approval_review_json
from contextsvc.core.teams import Reach
from contextsvc.infra import events
from contextsvc.infra.errors import NotFound
from frontend.charts import overview_charts

SNAPSHOT_ROWS = 500


def groups_for(topic: str, reach: Reach) -> list[str]:
    """Channel-layer groups a page listens to, for a watcher who reaches ``reach``: one
    team's groups when it is one team, an object's own page only when it is that team's;
    unknown topics, and other teams' objects, get none."""

    def queue(group: str) -> str:
        return group if reach.team_id is None else events.team_group(group, reach.team_id)

    if topic == "allocations":
        return [queue(events.ALLOCATIONS)]
    if topic.startswith("allocation:") and topic.split(":", 1)[1].isdigit():
        allocation_id = int(topic.split(":", 1)[1])
        mine = reach.narrow(Allocation.objects.filter(pk=allocation_id)).exists()
        return [events.allocation_group(allocation_id)] if mine else []
    if topic == "approvals":
        return [queue(events.APPROVALS)]
    if topic.startswith("approval:"):
        request_id = _request_id(topic)
        mine = (
            request_id is not None
            and reach.narrow(ApprovalRequest.objects.filter(pk=request_id)).exists()
        )
        return [events.approval_page_group(request_id)] if mine else []
    if topic == "overview":
        return [queue(events.ALLOCATIONS), queue(events.APPROVALS)]
    return []


def _request_id(topic: str) -> UUID | None:
    try:
        return parse_request_id(topic.split(":", 1)[1])
    except NotFound:
        return None


def snapshot(topic: str, ids: list[int] | None, reach: Reach) -> dict[str, Any]:
    """The page's rows as the watcher may see them (``reach``, as for ``groups_for``)."""
    allocations = reach.narrow(Allocation.objects.all())
    if topic == "allocations":
        found = allocations.filter(phase__in=VISIBLE_PHASES)
        if ids:
            found = allocations.filter(pk__in=ids[:SNAPSHOT_ROWS])
        rows = found.order_by("-requested_at", "-id")[:SNAPSHOT_ROWS]
        return {"rows": {str(row.pk): allocation_row(row) for row in rows}}
    if topic.startswith("allocation:"):
        allocation = allocations.filter(pk=int(topic.split(":", 1)[1])).first()
        return {"rows": {str(allocation.pk): allocation_row(allocation)} if allocation else {}}
    if topic == "approvals":
        pending = approval_list_pending(reach=reach)
        return {"pending": {str(r.pk): approval_review_json(r) for r in pending}}
    if topic.startswith("approval:"):
        request_id = _request_id(topic)
        requests = reach.narrow(ApprovalRequest.objects.all())
        request = requests.filter(pk=request_id).first() if request_id else None
        return {"request": approval_review_json(request) if request else None}
    if topic == "overview":
        return {
            "counts": allocation_phase_counts(reach=reach),
            "pending": approvals_pending_count(team_id=reach.team_id),
            # Timings over every team's rows, as on the page itself (docs/dashboard.md).
            "charts": overview_charts(),
        }
    return {}

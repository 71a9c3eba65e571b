"""Page snapshots for the live dashboard. A browser receives one when its WebSocket opens
(and again when it reconnects), then applies typed events; events carry the same row
shapes as snapshots, so a stale snapshot plus the events equals a fresh snapshot."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from allocations.models import VISIBLE_PHASES, Allocation
from allocations.selectors import allocation_phase_counts, allocation_row
from approvals.models import ApprovalRequest
from approvals.selectors import (
    approval_list_pending,
    approval_review_json,
    approvals_pending_count,
    parse_request_id,
)
from contextsvc.core import events
from contextsvc.core.errors import NotFound
from contextsvc.core.teams import EVERY_TEAM
from frontend.charts import overview_charts

SNAPSHOT_ROWS = 500


def groups_for(topic: str) -> list[str]:
    """Channel-layer groups a page listens to; unknown topics get none."""
    if topic == "allocations":
        return [events.ALLOCATIONS]
    if topic.startswith("allocation:") and topic.split(":", 1)[1].isdigit():
        return [events.allocation_group(int(topic.split(":", 1)[1]))]
    if topic == "approvals":
        return [events.APPROVALS]
    if topic.startswith("approval:"):
        request_id = _request_id(topic)
        return [events.approval_page_group(request_id)] if request_id else []
    if topic == "overview":
        return [events.ALLOCATIONS, events.APPROVALS]
    return []


def _request_id(topic: str) -> UUID | None:
    try:
        return parse_request_id(topic.split(":", 1)[1])
    except NotFound:
        return None


def snapshot(topic: str, ids: list[int] | None = None) -> dict[str, Any]:
    if topic == "allocations":
        found = Allocation.objects.filter(phase__in=VISIBLE_PHASES)
        if ids:
            found = Allocation.objects.filter(pk__in=ids[:SNAPSHOT_ROWS])
        rows = found.order_by("-requested_at", "-id")[:SNAPSHOT_ROWS]
        return {"rows": {str(row.pk): allocation_row(row) for row in rows}}
    if topic.startswith("allocation:"):
        allocation = Allocation.objects.filter(pk=int(topic.split(":", 1)[1])).first()
        return {"rows": {str(allocation.pk): allocation_row(allocation)} if allocation else {}}
    if topic == "approvals":
        pending = approval_list_pending(reach=EVERY_TEAM)  # admins only (consumers._may_watch)
        return {"pending": {str(r.pk): approval_review_json(r) for r in pending}}
    if topic.startswith("approval:"):
        request_id = _request_id(topic)
        request = ApprovalRequest.objects.filter(pk=request_id).first() if request_id else None
        return {"request": approval_review_json(request) if request else None}
    if topic == "overview":
        return {
            # Live events go only to who sees every team (frontend/consumers.py).
            "counts": allocation_phase_counts(reach=EVERY_TEAM),
            "pending": approvals_pending_count(),
            "charts": overview_charts(),
        }
    return {}

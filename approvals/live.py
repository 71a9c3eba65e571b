"""Announcing a request's changes (after commit, contextsvc/infra/events.py): reviewers'
queues get the request as reviewers see it (with whom it was sent to); its own page hears
everything that happens to it, a run included; and agents waiting on it get it as the API
shows them — only when it is made or decided, which is all a waiting agent needs to hear."""

from __future__ import annotations

from uuid import UUID

from approvals.models import ApprovalRequest
from approvals.shapes import approval_json, approval_review_json
from contextsvc.infra import events

CREATED = "approval.created"
CHANGED = "approval.changed"  # partially approved, edited, escalated, notified
DECIDED = "approval.decided"
RAN = "approval.ran"  # the executor reported what ran (only the request's own page hears it)


def request_group(request_id: UUID) -> str:
    return f"approval.{request_id}"


def announce(request: ApprovalRequest, event_type: str) -> None:
    page = events.approval_page_group(request.pk)
    queues = (events.APPROVALS, events.team_group(events.APPROVALS, request.team_id))
    reviewers = (page,) if event_type == RAN else (*queues, page)
    events.publish(*reviewers, event_type=event_type, data=approval_review_json(request))
    if event_type in (CREATED, DECIDED):
        events.publish(
            request_group(request.pk), event_type=event_type, data=approval_json(request)
        )

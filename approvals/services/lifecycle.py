"""How a pending request ends, exactly once: the conditional UPDATE that moves it to its
final status, with its audit entry and notification in the caller's transaction and its
announcement after commit. Decisions, expiry and the agent's cancellation (here) all end
requests through :func:`finish`."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from approvals import live, notifications
from approvals.models import ApprovalRequest, NotificationEvent, Status
from contextsvc.core.services import audit_record
from contextsvc.infra.errors import Conflict, NotFound


def not_pending(request_id: UUID) -> Exception:
    """Why ``request_id`` cannot be ended or decided now: it is not there, it is past its
    deadline (and not yet expired), or it has already ended."""
    current = ApprovalRequest.objects.filter(pk=request_id).first()
    if current is None:
        return NotFound(f'approval request "{request_id}" not found')
    if current.status == Status.PENDING:
        return Conflict(f"approval request {request_id} is past its deadline")
    return Conflict(f"approval request {request_id} is already {current.status}")


def finish(
    request_id: UUID,
    *,
    status: str,
    actor: str,
    reason: str = "",
    action: str,
    details: dict[str, Any] | None = None,
) -> ApprovalRequest:
    """Move a pending request to ``status``, exactly once. Must run inside a transaction."""
    now = timezone.now()
    finishing = ApprovalRequest.objects.filter(pk=request_id, status=Status.PENDING)
    if status != Status.EXPIRED:
        finishing = finishing.filter(deadline__gt=now)
    # A conditional UPDATE: of two deciders racing, exactly one changes the row.
    if not finishing.update(status=status, decided_at=now, decided_by=actor, reason=reason):
        raise not_pending(request_id)
    request = ApprovalRequest.objects.get(pk=request_id)
    audit_record(
        actor=actor,
        team_id=request.team_id,
        action=action,
        target_type="approval",
        target=str(request.pk),
        payload={
            "status": status,
            "reason": reason,
            "operation": request.normalised,
            **(details or {}),
        },
    )
    notifications.notify(request, NotificationEvent.DECIDED)
    live.announce(request, live.DECIDED)
    return request


def approval_cancel(*, request_id: UUID, actor: str) -> ApprovalRequest:
    with transaction.atomic():
        return finish(request_id, status=Status.CANCELLED, actor=actor, action="approval.cancel")

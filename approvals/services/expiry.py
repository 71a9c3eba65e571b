"""Expiry: a request still pending past its deadline expires, which means deny. Beat's
task expires every such request (approvals/tasks.py, every few seconds), and a decision
that comes too late expires its request there and then (approvals/services/decisions.py).
Reads never expire anything: until one of these has, a read computes that the request is
expired (approvals/selectors.py, ``approval_as_read``)."""

from __future__ import annotations

from uuid import UUID

from django.db import transaction
from django.utils import timezone

from approvals.models import EXPIRY_REASON, SYSTEM_ACTOR, ApprovalRequest, Status
from approvals.services.lifecycle import finish
from contextsvc.infra.errors import Conflict, NotFound


def expire_if_due(request_id: UUID) -> bool:
    """Expire one request whose deadline has passed (expiry means deny)."""
    due = ApprovalRequest.objects.filter(
        pk=request_id, status=Status.PENDING, deadline__lte=timezone.now()
    ).exists()
    if not due:
        return False
    with transaction.atomic():
        try:
            finish(
                request_id,
                status=Status.EXPIRED,
                actor=SYSTEM_ACTOR,
                reason=EXPIRY_REASON,
                action="approval.expire",
            )
        except (Conflict, NotFound):
            return False  # somebody else finished it first
    return True


def expire_due() -> int:
    """Beat's task: the requests past their deadline (500 a run), each in its own
    transaction; how many this run expired."""
    ids = list(
        ApprovalRequest.objects.filter(
            status=Status.PENDING, deadline__lte=timezone.now()
        ).values_list("pk", flat=True)[:500]
    )
    return sum(expire_if_due(request_id) for request_id in ids)

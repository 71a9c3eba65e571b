"""Escalation: a request still undecided past its profile's ``escalateAfter`` share of its
deadline is sent, once, to the agent type's escalation group (e-mail, and the channels
that want escalations). Run by beat's task (approvals/tasks.py)."""

from __future__ import annotations

from uuid import UUID

from django.db import transaction
from django.utils import timezone

from approvals import live, notifications
from approvals.models import SYSTEM_ACTOR, ApprovalRequest, NotificationEvent, Status
from contextsvc.core.auth import Role
from contextsvc.core.services import audit_record
from contextsvc.core.users import people_with_role
from profiles.models import SandboxProfile
from profiles.selectors import profile_approval_policy


def escalate_if_due(request_id: UUID) -> bool:
    """Tell the agent type's escalation group (e-mail, and the channels that want
    escalations) about a request still undecided past its profile's ``escalateAfter``.
    Once per request."""
    now = timezone.now()
    with transaction.atomic():
        due = ApprovalRequest.objects.filter(
            pk=request_id,
            status=Status.PENDING,
            escalated_at__isnull=True,
            escalate_at__lte=now,
            deadline__gt=now,
        )
        if not due.update(escalated_at=now):
            return False
        request = ApprovalRequest.objects.get(pk=request_id)
        policy = profile_approval_policy(
            SandboxProfile.objects.filter(name=request.agent_type).first()
        )
        group = people_with_role(Role.APPROVER).filter(username__in=policy.escalate_to)
        made = notifications.notify(request, NotificationEvent.ESCALATED, people=group)
        audit_record(
            actor=SYSTEM_ACTOR,
            team_id=request.team_id,
            action="approval.escalate",
            target_type="approval",
            target=str(request.pk),
            payload={
                "emailed": sorted(d.target for d in made if d.medium == d.Medium.EMAIL),
                "channels": sorted(d.target for d in made if d.medium != d.Medium.EMAIL),
                "operation": request.normalised,
            },
        )
        live.announce(request, live.CHANGED)
    return True


def escalate_due() -> int:
    now = timezone.now()
    ids = list(
        ApprovalRequest.objects.filter(
            status=Status.PENDING, escalated_at__isnull=True, escalate_at__lte=now
        ).values_list("pk", flat=True)[:500]
    )
    return sum(escalate_if_due(request_id) for request_id in ids)

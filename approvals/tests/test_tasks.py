"""approvals/tasks.py: beat's expiry task expires what is past its deadline, only that."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.models import ApprovalRequest, Status
from approvals.tasks import expire_due
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_expire_due_expires_overdue_pending_requests_only() -> None:
    now = timezone.now()
    overdue = ApprovalRequestFactory.create(deadline=now - timedelta(seconds=1))
    waiting = ApprovalRequestFactory.create(deadline=now + timedelta(minutes=5))
    decided = ApprovalRequestFactory.create(
        deadline=now - timedelta(minutes=5), status=Status.APPROVED, decided_by="user:alice"
    )

    assert expire_due() == 1
    assert expire_due() == 0

    assert dict(ApprovalRequest.objects.values_list("pk", "status")) == {
        overdue.pk: Status.EXPIRED,
        waiting.pk: Status.PENDING,
        decided.pk: Status.APPROVED,
    }
    assert list(AuditEntry.objects.values_list("actor", "action", "target")) == [
        ("system:approvals", "approval.expire", str(overdue.pk))
    ]

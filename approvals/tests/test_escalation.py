"""Escalation (a profile's ``approvals.escalateAfter`` and ``escalateTo``): a request still
undecided past that share of its deadline is sent to the escalation group, once, run as
beat runs it (the task through the real broker and worker), and the card says who was
told and when."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from approvals import notifications
from approvals.models import ApprovalRequest, Delivery
from approvals.services.escalation import escalate_due, escalate_if_due
from approvals.shapes import approval_review_json
from config.celery import app as celery_app
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient
from tests.support.processes import wait_until
from tests.support.receivers import HttpReceiver, MailServer, text_of

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def person(username: str, role: str, email: str) -> User:
    ensure_role_groups()
    made = User.objects.create_user(username, email=email)
    return user_set_role(user=made, role=role, actor="user:test")


def test_an_undecided_request_is_escalated_once_to_the_group_and_its_channels(
    agent: ApiClient, mail: MailServer, webhook_receiver: HttpReceiver
) -> None:
    person("alice", "approver", "alice@example.com")
    person("carol", "approver", "carol@example.com")
    SandboxProfileFactory.create(
        name="paged-agent",
        approval_policy={"escalateAfter": 0.25, "escalateTo": ["carol"], "email": "none"},
    )
    notifications.channel_create(
        name="oncall", kind="webhook", url=webhook_receiver.url, agent_types=["*"],
        events=["approval.escalated"], actor="user:ada",
    )  # fmt: skip
    asked = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "paged-agent",
            "operation": {"kind": "shell", "command": "pip install pandas"},
            "deadlineSeconds": 8,
        },
    ).json()
    request = ApprovalRequest.objects.get(pk=asked["id"])
    escalate_at = request.escalate_at
    assert escalate_at is not None
    assert (escalate_at - request.created_at).total_seconds() == pytest.approx(2, abs=0.1)
    assert Delivery.objects.count() == 0  # email "none", and no channel hears new requests

    # Not due yet: an escalation run now finds nothing.
    assert escalate_due() == 0
    # Beat's task, through the broker to the worker, once it is due.
    wait_until(
        lambda: timezone.now() > escalate_at,
        timeout=5,
        message="the escalation time",
    )
    celery_app.send_task("approvals.tasks.escalate_due")
    (message,) = mail.wait_for(1)
    (post,) = webhook_receiver.wait_for(1)

    assert message["To"] == "carol@example.com"
    assert message["Subject"] == (
        "[Context Service] Escalated: still waiting for a decision: shell pip install pandas "
        "(paged-agent)"
    )
    assert "Approve: " in text_of(message)
    assert post.json()["event"] == "approval.escalated"
    escalated = ApprovalRequest.objects.get(pk=asked["id"])
    assert escalated.escalated_at is not None
    assert AuditEntry.objects.get(action="approval.escalate").payload == {
        "emailed": ["carol"],
        "channels": ["oncall"],
        "operation": "pip install pandas",
    }
    wait_until(
        lambda: not Delivery.objects.filter(status=Delivery.Status.PENDING).exists(),
        timeout=30,
        message="both messages to be sent",
    )
    review = approval_review_json(ApprovalRequest.objects.get(pk=asked["id"]))
    assert review["escalatedAt"] == escalated.escalated_at.isoformat()
    assert sorted(
        (n["event"], n["medium"], n["target"], n["status"]) for n in review["notifications"]
    ) == [
        ("approval.escalated", "email", "carol", "delivered"),
        ("approval.escalated", "webhook", "oncall", "delivered"),
    ]
    # The agent is not told who reviews it.
    assert "notifications" not in agent.get(f"/v1/approvals/{asked['id']}").json()

    # Once: another run (however many beat sends) finds nothing to escalate.
    assert escalate_due() == 0
    assert escalate_if_due(escalated.pk) is False
    assert AuditEntry.objects.filter(action="approval.escalate").count() == 1
    assert Delivery.objects.count() == 2

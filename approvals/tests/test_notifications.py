"""Approvals that reach people, end to end: the real worker sends each message (a webhook
to a real HTTP server on loopback, e-mail to a real SMTP server), retries what may pass,
gives up on what cannot, and logs every try."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from approvals import notifications
from approvals.models import Delivery, DeliveryAttempt, NotificationChannel
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient
from tests.support.processes import wait_until
from tests.support.receivers import HttpReceiver, MailServer, text_of
from tests.support.unchanged import rows

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.usefixtures("service", "data_agent"),
]


def ask(
    agent: ApiClient, command: str, agent_type: str = "data-agent", **extra: Any
) -> dict[str, Any]:
    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": agent_type,
            "operation": {"kind": "shell", "command": command},
            **extra,
        },
    )
    assert response.status_code == 202, response.json()
    return dict(response.json())


def channel(
    receiver: HttpReceiver, name: str = "ops", **extra: Any
) -> tuple[NotificationChannel, str | None]:
    options: dict[str, Any] = {
        "kind": "webhook",
        "agent_types": ["data-agent"],
        "events": ["approval.created", "approval.decided"],
        **extra,
    }
    return notifications.channel_create(name=name, url=receiver.url, actor="user:ada", **options)


def settled(count: int) -> None:
    """Until ``count`` deliveries are no longer pending (each delivered or given up)."""
    wait_until(
        lambda: Delivery.objects.exclude(status=Delivery.Status.PENDING).count() == count,
        timeout=30,
        message=f"{count} deliveries to settle",
    )


def attempts(delivery: Delivery) -> list[tuple[str, int | None, str]]:
    return list(
        DeliveryAttempt.objects.filter(delivery=delivery)
        .order_by("at", "id")
        .values_list("outcome", "status_code", "error")
    )


def test_a_webhook_hears_each_new_request_signed_and_the_decision(
    agent: ApiClient, approver: ApiClient, webhook_receiver: HttpReceiver
) -> None:
    ops, secret = channel(webhook_receiver)
    other = HttpReceiver().start()
    try:
        channel(other, name="elsewhere", agent_types=["another-agent"])
        asked = ask(agent, "pip install pandas")
        (post,) = webhook_receiver.wait_for(1)
        settled(1)
    finally:
        other.stop()

    delivery = Delivery.objects.get(channel=ops)
    assert post.path == "/hook/secret-path"
    assert {key: post.headers[key] for key in ("Content-Type", "X-Context-Service-Event")} == {
        "Content-Type": "application/json",
        "X-Context-Service-Event": "approval.created",
    }
    assert post.headers["X-Context-Service-Delivery"] == str(delivery.pk)
    timestamp = post.headers["X-Context-Service-Timestamp"]
    assert secret is not None
    assert secret.startswith("whsec_")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + post.body, hashlib.sha256)
    assert post.headers["X-Context-Service-Signature"] == f"sha256={expected.hexdigest()}"
    body = post.json()
    assert {key: body[key] for key in ("event", "delivery", "url")} == {
        "event": "approval.created",
        "delivery": str(delivery.pk),
        "url": f"{settings.CS_PUBLIC_URL}/approvals/{asked['id']}/",
    }
    assert body["approval"] == asked
    assert attempts(delivery) == [("delivered", 200, "")]
    assert other.received == []  # a channel of another agent type hears nothing

    approver.post(f"/v1/approvals/{asked['id']}/decision", {"decision": "approve"})
    decided = webhook_receiver.wait_for(2)[1]
    assert decided.headers["X-Context-Service-Event"] == "approval.decided"
    assert (decided.json()["approval"]["status"], decided.json()["approval"]["decidedBy"]) == (
        "approved",
        "api:alice",
    )

    # Neither the secret nor the URL's secret path is stored in the clear, anywhere.
    everything = json.dumps(rows(), default=str)
    assert secret not in everything
    assert "secret-path" not in everything
    assert NotificationChannel.objects.get(name="ops").url_display == (
        f"http://127.0.0.1:{webhook_receiver.port}/…"
    )
    assert AuditEntry.objects.get(action="channel.create", target="ops").payload == {
        "kind": "webhook",
        "url": f"http://127.0.0.1:{webhook_receiver.port}/…",
        "agent_types": ["data-agent"],
        "events": ["approval.created", "approval.decided"],
    }


def test_what_may_pass_is_retried_with_backoff_and_a_4xx_gives_up(
    agent: ApiClient, webhook_receiver: HttpReceiver
) -> None:
    flaky, _ = channel(webhook_receiver, name="flaky", events=["approval.created"])
    webhook_receiver.script = [503, 429]
    broken_receiver = HttpReceiver(script=[404]).start()
    try:
        broken, _ = channel(broken_receiver, name="broken", events=["approval.created"])
        ask(agent, "pip install pandas")
        settled(2)
        assert len(broken_receiver.received) == 1
    finally:
        broken_receiver.stop()

    assert len(webhook_receiver.received) == 3
    sent = Delivery.objects.get(channel=flaky)
    assert (sent.status, sent.attempts) == ("delivered", 3)
    assert attempts(sent) == [
        ("retry", 503, "answered 503"),
        ("retry", 429, "answered 429"),
        ("delivered", 200, ""),
    ]
    # Each try waits three times as long as the one before (0.5 s, then 1.5 s here).
    first, second, third = DeliveryAttempt.objects.filter(delivery=sent).order_by("at", "id")
    assert (second.at - first.at).total_seconds() >= 0.5
    assert (third.at - second.at).total_seconds() >= 1.5
    given_up = Delivery.objects.get(channel=broken)
    assert (given_up.status, given_up.attempts, given_up.last_error) == (
        "failed",
        1,
        "answered 404",
    )
    assert attempts(given_up) == [("failed", 404, "answered 404")]


def test_a_slack_compatible_channel_gets_blocks_and_no_markup_from_the_command(
    agent: ApiClient, webhook_receiver: HttpReceiver
) -> None:
    _, secret = channel(webhook_receiver, name="chat", kind="slack", events=["approval.created"])
    asked = ask(agent, "echo '<!channel> *hi*' > out.txt", allocation="pool-a")

    (post,) = webhook_receiver.wait_for(1)

    assert secret is None
    assert "X-Context-Service-Signature" not in post.headers
    body = post.json()
    url = f"{settings.CS_PUBLIC_URL}/approvals/{asked['id']}/"
    assert body["text"] == (
        "Approval needed: shell `echo '&lt;!channel&gt; *hi*' &gt; out.txt` (data-agent, "
        f"context ctx-1) <{url}|Review>"
    )
    assert [block["type"] for block in body["blocks"]] == [
        "header",
        "rich_text",
        "section",
        "context",
        "actions",
    ]
    preformatted = body["blocks"][1]["elements"][0]
    assert preformatted == {
        "type": "rich_text_preformatted",
        "elements": [{"type": "text", "text": "echo '<!channel> *hi*' > out.txt"}],
    }
    assert body["blocks"][4]["elements"][0]["url"] == url
    assert body["blocks"][3]["elements"][0]["text"] == (
        '• names allocation "pool-a", which is not an active allocation of this service'
    )


def _person(username: str, role: str, email: str) -> User:
    ensure_role_groups()
    person = User.objects.create_user(username, email=email, password="x" * 16)
    return user_set_role(user=person, role=role, actor="user:test")


def test_approvers_with_an_address_get_an_e_mail_with_their_own_links(
    agent: ApiClient, mail: MailServer
) -> None:
    _person("alice", "approver", "alice@example.com")
    _person("bob", "admin", "bob@example.com")
    _person("vera", "viewer", "vera@example.com")
    _person("carl", "approver", "")
    asked = ask(agent, "pip install pandas")

    messages = mail.wait_for(2)
    settled(2)

    assert sorted(message["To"] for message in messages) == [
        "alice@example.com",
        "bob@example.com",
    ]
    for message in messages:
        assert message["Subject"] == (
            "[Context Service] Approval needed: shell pip install pandas (data-agent)"
        )
        text = text_of(message)
        url = f"{settings.CS_PUBLIC_URL}/approvals/{asked['id']}/"
        assert f"Review it: {url}\n" in text
        assert text.count(f"{url}link/") == 2
    alice_links = {
        line.split()[1]
        for line in text_of(messages[0]).splitlines()
        if line.startswith(("Approve:", "Deny:"))
    }
    bob_links = {
        line.split()[1]
        for line in text_of(messages[1]).splitlines()
        if line.startswith(("Approve:", "Deny:"))
    }
    assert len(alice_links) == 2
    assert alice_links & bob_links == set()  # each person's own
    assert sorted(Delivery.objects.values_list("target", "medium", "status")) == [
        ("alice", "email", "delivered"),
        ("bob", "email", "delivered"),
    ]


@pytest.mark.parametrize(
    ("policy", "command", "emailed"),
    [
        ({"email": "none"}, "cp a /tmp/a", 0),
        ({"email": "high"}, "make build", 0),
        ({"email": "high"}, "pip install pandas", 1),  # reaches the network: high
        ({"email": "high"}, "cp a /tmp/a", 1),
    ],
)
def test_the_profile_says_which_requests_e_mail_the_approvers(
    agent: ApiClient, mail: MailServer, policy: dict[str, str], command: str, emailed: int
) -> None:
    _person("alice", "approver", "alice@example.com")
    SandboxProfileFactory.create(name="quiet-agent", approval_policy=policy)

    ask(agent, command, agent_type="quiet-agent")

    assert Delivery.objects.count() == emailed
    if emailed:
        assert [m["To"] for m in mail.wait_for(1)] == ["alice@example.com"]

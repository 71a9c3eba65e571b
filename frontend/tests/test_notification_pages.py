"""The notifications page: everyone with a role reads the channels and the delivery log;
only admins make, test, switch, re-key or delete a channel, and each of those is audited.
People's e-mail addresses are set on the Users page by admins."""

from __future__ import annotations

import pytest

from approvals import notifications
from approvals.models import Delivery, NotificationChannel
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups
from contextsvc.infra import secrets
from frontend.tests.support import client_for
from tests.support.factories import UserFactory
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db]
URL = "https://hooks.example.com/services/T0/B0/very-secret"


@pytest.fixture(autouse=True)
def _roles() -> None:
    ensure_role_groups()


def make(name: str = "ops") -> NotificationChannel:
    channel, _ = notifications.channel_create(
        name=name,
        kind="webhook",
        url=URL,
        agent_types=["*"],
        events=["approval.created"],
        actor="user:ada",
    )
    return channel


def test_only_admins_make_a_channel_and_its_secret_is_shown_once() -> None:
    form = {"name": "ops", "kind": "webhook", "url": URL, "agent_types": "*",
            "events": ["approval.created", "approval.decided"]}  # fmt: skip
    others, admin = [client_for(role) for role in ("viewer", "approver")], client_for("admin")
    before = rows()
    for other in others:
        assert other.post("/notifications/", form).status_code == 403
    assert rows() == before

    made = admin.post("/notifications/", form)

    channel = NotificationChannel.objects.get()
    secret = made.context["secret"]
    assert secret.startswith("whsec_")
    assert secrets.unseal(channel.secret_sealed) == secret
    assert secrets.unseal(channel.url_sealed) == URL
    assert (channel.url_display, channel.agent_types, channel.events) == (
        "https://hooks.example.com/…",
        ["*"],
        ["approval.created", "approval.decided"],
    )
    listed = others[0].get("/notifications/").content.decode()
    assert "https://hooks.example.com/…" in listed
    assert secret not in listed
    assert "very-secret" not in listed
    assert list(
        AuditEntry.objects.filter(action__startswith="channel.").values_list(
            "actor", "action", "target"
        )
    ) == [("user:user-admin", "channel.create", "ops")]


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"url": "ftp://x.example/"}, "url must be an http(s) URL of at most 2000 characters"),
        ({"url": "https://me:pw@x.example/"}, "url must not carry a user name, a password or spaces"),
        ({"url": "http://169.254.169.254/latest/"}, "url host 169.254.169.254, which is not a "
         "public address; webhooks reach private networks only when CS_NOTIFY_ALLOW_NETWORKS "
         "names them"),
        ({"url": "http://[::1/"}, "url must be an http(s) URL of at most 2000 characters"),
        ({"agent_types": "Not A Type"}, "agentTypes: 'Not A Type' is not an agent type name"),
        ({"name": "ops"}, 'channel "ops" already exists'),
    ],
)  # fmt: skip
def test_a_bad_channel_is_refused_with_its_reason_and_nothing_changes(
    form: dict[str, str], message: str
) -> None:
    make()
    admin = client_for("admin")
    before = rows()
    body = {"name": "new", "kind": "webhook", "url": URL, "agent_types": "*",
            "events": ["approval.created"], **form}  # fmt: skip

    page = admin.post("/notifications/", body)

    assert page.status_code == 200
    assert page.context["form"].non_field_errors() == [message]
    assert rows() == before


def test_the_channel_form_posted_for_json_gets_the_apis_refusal() -> None:
    """Issue 32: a script posting the form got the page again, 200; it gets the API's 400."""
    admin = client_for("admin")
    before = rows()
    body = {"name": "new", "kind": "webhook", "url": "http://10.0.0.5\\x.example/hook",
            "agent_types": "*", "events": ["approval.created"]}  # fmt: skip

    response = admin.post("/notifications/", body, headers={"Accept": "application/json"})

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": "url must not contain a backslash"},
    )
    assert rows() == before


def test_admin_actions_on_a_channel_are_refused_to_others_and_audited() -> None:
    channel = make()
    others, admin = [client_for(role) for role in ("viewer", "approver")], client_for("admin")
    before = rows()
    for other in others:
        for action in ("disable", "rotate", "delete", "test"):
            assert other.post(f"/notifications/{channel.pk}/{action}/").status_code == 403
    assert rows() == before
    old_secret = NotificationChannel.objects.get().secret_sealed

    admin.post(f"/notifications/{channel.pk}/disable/")
    assert NotificationChannel.objects.get().enabled is False
    admin.post(f"/notifications/{channel.pk}/enable/")
    assert NotificationChannel.objects.get().enabled is True
    rotated = admin.post(f"/notifications/{channel.pk}/rotate/")
    assert (
        secrets.unseal(NotificationChannel.objects.get().secret_sealed) == rotated.context["secret"]
    )
    assert NotificationChannel.objects.get().secret_sealed != old_secret
    admin.post(f"/notifications/{channel.pk}/test/")
    test = Delivery.objects.get()
    assert (test.event, test.target, test.request_id) == ("test", "ops", None)
    admin.post(f"/notifications/{channel.pk}/delete/")
    assert not NotificationChannel.objects.exists()
    # Its log stays, under its name.
    assert Delivery.objects.get().target == "ops"
    assert list(
        AuditEntry.objects.filter(target="ops").order_by("id").values_list("action", flat=True)
    ) == [
        "channel.create",
        "channel.disable",
        "channel.enable",
        "channel.rotate",
        "channel.test",
        "channel.delete",
    ]


def test_admins_set_peoples_addresses_and_bad_ones_are_refused() -> None:
    person = UserFactory.create(username="alice")
    approver, admin = client_for("approver"), client_for("admin")
    before = rows()
    refused = approver.post(f"/users/{person.pk}/email/", {"email": "a@x.example"})
    assert refused.status_code == 403
    admin.post(f"/users/{person.pk}/email/", {"email": "not an address"})
    assert rows() == before

    admin.post(f"/users/{person.pk}/email/", {"email": "alice@example.com"})

    person.refresh_from_db()
    assert person.email == "alice@example.com"
    assert AuditEntry.objects.get(action="user.email").payload == {
        "from": "",
        "to": "alice@example.com",
    }

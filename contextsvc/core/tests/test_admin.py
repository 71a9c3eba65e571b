"""The Django admin: its two actions on API clients and tokens go through the services
(and so into the audit log), and what changes only through the services — the audit log,
approval requests, grants, runs, notification channels and deliveries — it only shows."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from approvals import notifications
from approvals.models import Delivery
from approvals.tests.factories import ApprovalRequestFactory, GrantFactory
from contextsvc.core import services
from contextsvc.core.models import ApiClient, ApiToken, AuditEntry
from tests.support.api import issue_token
from tests.support.unchanged import rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def root() -> Client:
    user = get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


def test_the_issue_token_action_shows_a_working_token_once_and_audits_it(root: Client) -> None:
    client = services.api_client_create(name="harness", scopes=["read"], actor="user:test")

    page = root.post(
        "/admin/core/apiclient/",
        {"action": "issue_token", "_selected_action": [client.pk]},
        follow=True,
    )

    (message,) = [str(m) for m in page.context["messages"]]
    raw = message.rsplit(": ", 1)[1]
    (token,) = ApiToken.objects.filter(client=client)
    assert message == f"Token for harness (copy it now, it is not shown again): {raw}"
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert list(
        AuditEntry.objects.filter(action="api_token.issue").values_list("actor", "target")
    ) == [("user:root", "harness")]
    # The token list never shows a hash or the token itself.
    listed = root.get("/admin/core/apitoken/").content.decode()
    assert token.token_hash not in listed
    assert raw not in listed


def test_the_revoke_action_stops_tokens_at_once_and_audits_each(root: Client) -> None:
    raw = issue_token("harness", ["read"])
    token = ApiToken.objects.get()
    assert (
        Client().get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {raw}"}).status_code
        == 200
    )

    root.post("/admin/core/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})

    assert ApiToken.objects.get().revoked_at is not None
    assert (
        Client().get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {raw}"}).status_code
        == 401
    )
    assert list(
        AuditEntry.objects.filter(action="api_token.revoke").values_list("actor", "payload")
    ) == [("user:root", {"token_id": token.pk, "prefix": token.prefix})]


def test_rows_that_change_only_through_the_services_cannot_be_changed_here(root: Client) -> None:
    request = ApprovalRequestFactory.create()
    grant = GrantFactory.create()
    channel, _ = notifications.channel_create(
        name="ops", kind="webhook", url="https://hooks.example.com/x", agent_types=["*"],
        events=["approval.created"], actor="user:test",
    )  # fmt: skip
    delivery = Delivery.objects.create(
        event="test", medium="webhook", channel=channel, target="ops", address="x",
        message={"body": {}}, next_attempt_at=request.created_at,
    )  # fmt: skip
    entry = AuditEntry.objects.order_by("id").first()
    assert entry is not None
    ApiClient.objects.create(name="listed")
    before = rows()

    for model, pk, change in (
        ("core/auditentry", entry.pk, {"action": "forged"}),
        ("approvals/approvalrequest", request.pk, {"status": "approved"}),
        ("approvals/grant", grant.pk, {"rule": "shell(*)"}),
        ("approvals/notificationchannel", channel.pk, {"enabled": ""}),
        ("approvals/delivery", delivery.pk, {"status": "delivered"}),
    ):
        assert root.get(f"/admin/{model}/").status_code == 200, model
        assert root.get(f"/admin/{model}/{pk}/change/").status_code == 200, model
        assert root.post(f"/admin/{model}/{pk}/change/", change).status_code == 403, model
        assert root.get(f"/admin/{model}/add/").status_code == 403, model
        assert root.post(f"/admin/{model}/{pk}/delete/", {"post": "yes"}).status_code == 403, model
        bulk = {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}
        root.post(f"/admin/{model}/", bulk)

    assert rows() == before
    # Neither the sealed URL nor the e-mail bodies (which hold approvers' links) are shown.
    page = root.get(f"/admin/approvals/notificationchannel/{channel.pk}/change/").content.decode()
    assert channel.url_sealed not in page
    assert "hooks.example.com/x" not in page

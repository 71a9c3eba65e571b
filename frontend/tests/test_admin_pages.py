"""The dashboard's write paths besides the queue: API clients and their tokens, people and
their roles, profile edits, exports and imports, and grant revocation. The refused role gets
403 and nothing changes; the allowed one gets exactly its effect and its audit entry."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from django import forms
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from allocations.tests.factories import AllocationFactory
from approvals.models import Grant
from approvals.tests.factories import ApprovalRequestFactory, GrantFactory
from contextsvc.core import services
from contextsvc.core.auth import user_role
from contextsvc.core.limits import LIVE_SANDBOXES, REQUESTS_PER_MINUTE, STORAGE
from contextsvc.core.models import ApiClient, ApiToken, AuditEntry, Team, TeamMember
from contextsvc.core.users import ensure_role_groups
from frontend.tests.support import client_for
from profiles.models import SandboxProfile
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import issue_token
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _roles() -> None:
    ensure_role_groups()


def audit(prefix: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    return list(
        AuditEntry.objects.filter(action__startswith=prefix)
        .order_by("id")
        .values_list("actor", "action", "target", "payload")
    )


def test_api_clients_and_tokens_are_made_and_revoked_by_admins_only() -> None:
    others = [client_for("viewer"), client_for("approver")]
    admin = client_for("admin")
    form = {"name": "harness", "description": "SH", "scopes": ["read", "allocations"]}
    before = rows()
    for other in others:
        assert other.post("/clients/", form).status_code == 403
    assert rows() == before

    made = admin.post("/clients/", form)

    client = ApiClient.objects.get(name="harness")
    (token,) = client.tokens.all()
    raw = made.context["token"]
    assert (client.scopes, client.agent_types, client.description) == (
        ["allocations", "read"],
        [],
        "SH",
    )
    assert token.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert (
        Client().get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {raw}"}).status_code
        == 200
    )
    # A second token, and the first one revoked: refused to others, done for the admin.
    before = rows()
    for other in others:
        assert other.post(f"/clients/{client.pk}/token/").status_code == 403
        assert other.post(f"/tokens/{token.pk}/revoke/").status_code == 403
    assert rows() == before
    second = admin.post(f"/clients/{client.pk}/token/").context["token"]
    admin.post(f"/tokens/{token.pk}/revoke/")

    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert ApiToken.objects.filter(client=client, revoked_at__isnull=True).count() == 1
    assert (
        Client().get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {raw}"}).status_code
        == 401
    )
    assert (
        Client().get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {second}"}).status_code
        == 200
    )
    second_token = ApiToken.objects.get(client=client, revoked_at__isnull=True)
    assert [(actor, action, target) for actor, action, target, _ in audit("api_")] == [
        ("user:user-admin", "api_client.create", "harness"),
        ("user:user-admin", "api_token.issue", "harness"),
        ("user:user-admin", "api_token.issue", "harness"),
        ("user:user-admin", "api_token.revoke", "harness"),
    ]
    assert audit("api_token.revoke")[0][3] == {"token_id": token.pk, "prefix": token.prefix}
    assert second_token.prefix == second[: len(second_token.prefix)]


def test_people_are_made_given_roles_and_switched_off_by_admins_only() -> None:
    others = [client_for("viewer"), client_for("approver")]
    admin = client_for("admin")
    me = User.objects.get(username="user-admin")
    form = {"username": "bob", "password": "a-long-enough-passphrase", "role": "approver",
            "email": "bob@example.com"}  # fmt: skip
    before = rows()
    for other in others:
        assert other.post("/users/", form).status_code == 403
    assert rows() == before

    admin.post("/users/", form)

    bob = User.objects.get(username="bob")
    assert (user_role(bob), bob.email, bob.is_active, bob.check_password(form["password"])) == (
        "approver",
        "bob@example.com",
        True,
        True,
    )
    before = rows()
    for other in others:
        assert other.post(f"/users/{bob.pk}/role/", {"role": "admin"}).status_code == 403
        assert other.post(f"/users/{bob.pk}/active/").status_code == 403
    assert rows() == before

    admin.post(f"/users/{bob.pk}/role/", {"role": "viewer"})
    admin.post(f"/users/{bob.pk}/active/")
    assert User.objects.get(pk=bob.pk).is_active is False
    admin.post(f"/users/{bob.pk}/active/")
    bob = User.objects.get(pk=bob.pk)
    assert (user_role(bob), bob.is_active) == ("viewer", True)
    # An admin cannot switch themselves off (and lock everyone out).
    before = rows()
    refused = admin.post(f"/users/{me.pk}/active/", follow=True)
    assert "You cannot deactivate yourself." in refused.content.decode()
    assert rows() == before
    assert [
        (a, action, target, payload)
        for a, action, target, payload in audit("user.")
        if target == "bob"
    ] == [
        ("user:user-admin", "user.create", "bob", {"role": "approver", "email": "bob@example.com"}),
        ("user:user-admin", "user.role", "bob", {"from": None, "to": "approver"}),
        ("user:user-admin", "user.role", "bob", {"from": "approver", "to": "viewer"}),
        ("user:user-admin", "user.deactivate", "bob", {}),
        ("user:user-admin", "user.activate", "bob", {}),
    ]


def _form_data(page: Any) -> dict[str, Any]:
    """What the edit form would send back unchanged."""
    form = page.context["form"]
    data: dict[str, Any] = {}
    for field in form:
        value = field.value()
        if value is None or value is False:
            continue
        if isinstance(field.field, forms.JSONField) and not isinstance(value, str):
            value = json.dumps(value)
        data[field.name] = value
    return data


@pytest.mark.cluster
@pytest.mark.usefixtures("kube_cluster")
def test_profiles_are_edited_exported_and_imported_by_admins_only() -> None:
    SandboxProfileFactory.create(
        name="data-agent", rules={"permissions": {"allow": ["shell(ls:*)"]}}
    )
    viewer, approver, admin = client_for("viewer"), client_for("approver"), client_for("admin")
    page = admin.get("/profiles/data-agent/edit/")
    data = {**_form_data(page), "description": "reads data"}
    upload = {"document": SimpleUploadedFile("settings.json", b'{"permissions": {}}')}
    before = rows()
    for other in (viewer, approver):
        assert other.get("/profiles/data-agent/edit/").status_code == 403
        assert other.post("/profiles/data-agent/edit/", data).status_code == 403
        assert other.post("/profiles/data-agent/settings/import/", upload).status_code == 403
    assert rows() == before

    saved = admin.post("/profiles/data-agent/edit/", data)

    assert (saved.status_code, saved["Location"]) == (302, "/profiles/data-agent/")
    profile = SandboxProfile.objects.get(name="data-agent")
    assert (profile.description, profile.updated_by, profile.rules) == (
        "reads data",
        "user:user-admin",
        {"permissions": {"allow": ["shell(ls:*)"]}},
    )
    (entry,) = audit("profile.")
    assert (entry[0], entry[1], entry[3]["description"]) == (
        "user:user-admin",
        "profile.update",
        "reads data",
    )
    # Anyone who may look exports the documents, in the seed's form, as a download.
    exported = viewer.get("/profiles/data-agent/settings.json")
    assert exported["Content-Disposition"] == 'attachment; filename="data-agent-settings.json"'
    assert json.loads(exported.content) == {"permissions": {"allow": ["shell(ls:*)"]}}
    assert viewer.get("/profiles/data-agent/policy.json").status_code == 404


def test_grants_are_revoked_from_the_queue_by_approvers_only() -> None:
    grant = GrantFactory.create()
    viewer, approver = client_for("viewer"), client_for("approver")
    before = rows()
    assert viewer.post(f"/grants/{grant.pk}/revoke/").status_code == 403
    assert viewer.post("/grants/999999/revoke/").status_code == 403
    assert approver.post("/grants/999999/revoke/").status_code == 404
    assert rows() == before

    approver.post(f"/grants/{grant.pk}/revoke/")

    revoked = Grant.objects.get(pk=grant.pk)
    assert (revoked.revoked_by, revoked.revoked_at is not None) == ("user:user-approver", True)
    assert audit("grant.") == [
        ("user:user-approver", "grant.revoke", str(grant.pk), {"rule": grant.rule})
    ]
    after = rows()
    again = approver.post(f"/grants/{grant.pk}/revoke/", follow=True)
    assert f"grant {grant.pk} is already revoked" in again.content.decode()
    assert rows() == after


def test_the_users_page_shows_last_logins_in_utc_with_the_zone() -> None:
    """Issue 32: it showed "Dec. 3, 2026, 11:39 a.m.", no zone, where the docs say UTC."""
    admin = client_for("admin")
    User.objects.filter(username="user-admin").update(
        last_login=datetime(2026, 12, 3, 11, 39, 5, tzinfo=UTC)
    )

    page = admin.get("/users/").content.decode()

    assert '<time datetime="2026-12-03T11:39:05+00:00">2026-12-03 11:39:05 UTC</time>' in page


def test_the_login_page_asks_for_no_resource_that_is_not_there() -> None:
    """Issue 32: a browser on the login page logged a 404 (for /favicon.ico)."""
    page = Client().get("/login/").content.decode()

    assert '<link rel="icon" href="data:,">' in page
    assert Client().get("/favicon.ico").status_code == 404  # nothing there to ask for


def test_teams_are_made_limited_and_filled_by_admins_only() -> None:
    others = [client_for("viewer"), client_for("approver")]
    admin = client_for("admin")
    issue_token("harness", ["allocations"])
    before = rows()
    for other in others:
        assert other.get("/teams/").status_code == 403
        assert other.post("/teams/", {"name": "research"}).status_code == 403
        assert other.post("/teams/move/", {"kind": "person", "member": "x"}).status_code == 403
    assert rows() == before

    created = admin.post("/teams/", {"name": "research", "description": "R"}, follow=True)
    assert [str(m) for m in created.context["messages"]] == [
        "Team research created, with no limits."
    ]
    research = Team.objects.get(name="research")
    prefix = f"team-{research.pk}"
    # A bad limit is named, and no limit changes.
    before = rows()
    refused = admin.post(
        f"/teams/{research.pk}/quotas/",
        {f"{prefix}-live_sandboxes": "many", f"{prefix}-storage": "10Gi"},
        follow=True,
    )
    assert rows() == before
    assert [str(m) for m in refused.context["messages"]] == [
        "Limits of research not changed: live_sandboxes: must be a whole number or 'none'"
    ]
    saved = admin.post(
        f"/teams/{research.pk}/quotas/",
        {f"{prefix}-live_sandboxes": "12", f"{prefix}-storage": "10Gi"},
        follow=True,
    )
    assert [str(m) for m in saved.context["messages"]] == [
        "research: live sandboxes 12, storage 10Gi."
    ]
    admin.post("/teams/move/", {"kind": "client", "member": "harness", "team": "research"})
    admin.post("/teams/move/", {"kind": "person", "member": "user-viewer", "team": "research"})

    research.refresh_from_db()
    assert (LIVE_SANDBOXES.of(research), STORAGE.of(research)) == (12, 10 * 1024**3)
    assert ApiClient.objects.get(name="harness").team == research
    assert TeamMember.objects.get(user__username="user-viewer").team == research
    page = admin.get("/teams/").content.decode()
    assert "live sandboxes 12, storage 10Gi" in page
    assert "API clients: harness" in page
    assert [action for _, action, _, _ in audit("team.")] == ["team.create", "team.quotas"]
    assert [action for _, action, _, _ in audit("api_client.team")] == ["api_client.team"]
    assert [action for _, action, _, _ in audit("user.team")] == ["user.team"]


def test_a_person_sees_only_their_teams_allocations_and_requests() -> None:
    viewer = client_for("viewer")
    research = Team.objects.create(name="research")
    services.person_set_team(
        user=User.objects.get(username="user-viewer"), team=research, actor="user:test"
    )
    theirs = AllocationFactory.create(name="not-theirs")  # the default team's
    mine = AllocationFactory.create(name="mine", team=research)
    request = ApprovalRequestFactory.create()

    listed = viewer.get("/allocations/").content.decode()
    assert ("mine" in listed, "not-theirs" in listed) == (True, False)
    assert viewer.get(f"/allocations/{theirs.pk}/").status_code == 404
    assert viewer.get(f"/allocations/{mine.pk}/").status_code == 200
    assert viewer.get(f"/approvals/{request.pk}/").status_code == 404
    assert client_for("admin").get(f"/allocations/{theirs.pk}/").status_code == 200


def test_a_person_of_one_team_of_several_reads_only_its_audit_and_overview() -> None:
    viewer, admin = client_for("viewer"), client_for("admin")
    default = Team.objects.get()
    research = Team.objects.create(name="research")
    mine = AllocationFactory.create(name="mine", team=research, phase="failed")
    theirs = AllocationFactory.create(name="not-theirs", phase="failed")  # the default team's
    for allocation in (mine, theirs):
        services.audit_record(
            actor="api:harness",
            action="allocation.create",
            target_type="allocation",
            target=allocation.name,
            team_id=allocation.team_id,
        )
    services.audit_record(  # the platform's own: no team
        actor="user:admin", action="profile.update", target_type="profile", target="coder"
    )

    def audit_targets(client: Client) -> list[str]:
        return [entry.target for entry in client.get("/audit/").context["page"].object_list]

    def overview(client: Client) -> tuple[list[str], list[str], int]:
        context = client.get("/").context
        return (
            [entry.target for entry in context["recent"]],
            sorted(item["allocation"].name for item in context["attention"]),
            context["counts"]["failed"],
        )

    # The viewer is in the default team, one of two: its entries and rows only.
    assert audit_targets(viewer) == ["not-theirs"]
    assert overview(viewer) == (["not-theirs"], ["not-theirs"], 1)
    services.person_set_team(
        user=User.objects.get(username="user-viewer"), team=research, actor="user:admin"
    )
    assert audit_targets(viewer) == ["mine"]
    assert overview(viewer) == (["mine"], ["mine"], 1)
    # An admin reads every team's and the platform's (the move of a person is one).
    # (The people's own creation by client_for are the platform's entries too.)
    everything = list(AuditEntry.objects.values_list("target", flat=True))
    assert everything[:4] == ["user-viewer", "coder", "not-theirs", "mine"]
    assert AuditEntry.objects.filter(team=None).count() == len(everything) - 2
    assert audit_targets(admin) == everything
    assert overview(admin) == (everything, ["mine", "not-theirs"], 2)
    # With one team again, everyone reads everything, as before there were teams.
    AuditEntry.objects.filter(team=research).update(team=default)
    mine.team = default
    mine.save(update_fields=["team"])
    TeamMember.objects.all().delete()
    research.delete()
    assert audit_targets(viewer) == everything


def form_fields(page: str, action: str) -> dict[str, str]:
    """The named inputs of the page's form that posts to ``action``, with their values, as a
    browser submits them unchanged."""
    start = page.index(f'action="{action}"')
    form = page[start : page.index("</form>", start)]
    fields = {}
    for tag in re.findall(r"<input [^>]*>", form):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            fields[name.group(1)] = value.group(1) if value else ""
    return fields


def test_saving_a_teams_limits_unchanged_keeps_its_request_rate() -> None:
    """Issue 45: the form had no request-rate field, so "Save limits" on a row, changing
    nothing, lifted a rate of 0 that stopped a runaway team."""
    admin = client_for("admin")
    stopped = services.team_create(name="runaway", actor="user:test")
    services.team_set_quotas(
        team=stopped, actor="user:test", max_requests_per_minute=0, max_live_sandboxes=4
    )
    action = f"/teams/{stopped.pk}/quotas/"

    fields = form_fields(admin.get("/teams/").content.decode(), action)
    saved = admin.post(action, fields, follow=True)

    prefix = f"team-{stopped.pk}"
    assert {name: value for name, value in fields.items() if name.startswith(prefix)} == {
        f"{prefix}-live_allocations": "",
        f"{prefix}-live_sandboxes": "4",
        f"{prefix}-storage": "",
        f"{prefix}-pending_approvals": "",
        f"{prefix}-requests_per_minute": "0",
    }
    assert [str(m) for m in saved.context["messages"]] == [
        "runaway: live sandboxes 4, requests per minute 0."
    ]
    stopped.refresh_from_db()
    assert (REQUESTS_PER_MINUTE.of(stopped), LIVE_SANDBOXES.of(stopped)) == (0, 4)
    # A form that does not send a limit leaves it as it is.
    admin.post(action, {f"{prefix}-live_sandboxes": "5"})
    stopped.refresh_from_db()
    assert (REQUESTS_PER_MINUTE.of(stopped), LIVE_SANDBOXES.of(stopped)) == (0, 5)


def test_a_bad_team_name_is_refused_on_its_field_and_nothing_is_made() -> None:
    """Issue 45: ALPHA was made beside alpha, and the form cut a 300-character name to 63
    (its input's maxlength) and made that."""
    admin = client_for("admin")
    before = rows()

    page = admin.get("/teams/").content.decode()
    answers = {
        name: admin.post("/teams/", {"name": name, "description": ""})
        for name in ("ALPHA", "x" * 300, "al_pha")
    }

    assert 'name="name"' in page
    assert "maxlength" not in page[page.index('name="name"') - 200 : page.index('name="name"')]
    for name, answer in answers.items():
        assert answer.status_code == 200
        shown = name if len(name) <= 70 else f"{name[:67]}…"
        assert answer.context["form"].errors == {
            "name": [
                f"name {shown!r} is not valid: a team name is 1 to 63 lowercase letters, "
                "digits and hyphens, starting with a letter and not ending with a hyphen"
            ]
        }
    assert rows() == before


def test_an_empty_team_is_deleted_from_the_page_and_a_busy_one_is_not() -> None:
    admin = client_for("admin")
    typo = services.team_create(name="typo", actor="user:test")
    busy = services.team_create(name="busy", actor="user:test")
    AllocationFactory.create(name="held", team=busy)

    deleted = admin.post(f"/teams/{typo.pk}/delete/", follow=True)
    before = rows()
    refused = admin.post(f"/teams/{busy.pk}/delete/", follow=True)

    assert [str(m) for m in deleted.context["messages"]] == ["Team typo deleted."]
    assert [str(m) for m in refused.context["messages"]] == [
        'Team busy not deleted: team "busy" still has 1 allocation: move or remove them first'
    ]
    assert rows() == before
    assert not Team.objects.filter(name="typo").exists()
    assert client_for("viewer").post(f"/teams/{busy.pk}/delete/").status_code == 403
    assert Team.objects.filter(name="busy").exists()

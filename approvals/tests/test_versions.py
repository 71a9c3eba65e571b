"""A decision decides what its decider saw (issue 31, findings 1 and 2): an empty operation
is never asked or approved; a decision names the request's version, and approving a
request a reviewer edited — from the API, the dashboard or an e-mail link — approves the
edited text explicitly, never the agent's original an older page showed."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client

from approvals.models import ApprovalRequest, Status
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.receivers import MailServer, text_of
from tests.support.unchanged import rows

RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}}
HIGH = "cp data.csv /tmp/data.csv"  # a write outside the context's directory: high risk
EDITED = "cp data.csv /tmp/data-copy.csv"


@pytest.fixture
def careful_agent() -> None:
    SandboxProfileFactory.create(
        name="careful-agent", rules=RULES, approval_policy={"twoPersonRule": True}
    )


def ask(agent: ApiClient, command: str, agent_type: str = "careful-agent") -> Any:
    return agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": agent_type,
            "operation": {"kind": "shell", "command": command},
        },
    )


def decide(reviewer: ApiClient, request_id: str, body: dict[str, Any]) -> Any:
    return reviewer.post(f"/v1/approvals/{request_id}/decision", body)


# --- 1. empty operations ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("careful_agent")
@pytest.mark.parametrize("command", ["", " ", "\t\n  "])
def test_an_empty_command_is_neither_asked_nor_approved_as_an_edit(
    agent: ApiClient, approver: ApiClient, command: str
) -> None:
    before = rows()
    asked = ask(agent, command)
    assert (asked.status_code, asked.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "operation.command: must not be empty or only whitespace",
        },
    )
    assert rows() == before

    request_id = ask(agent, "cat notes.txt").json()["id"]
    pending = rows()
    edited = decide(
        approver,
        request_id,
        {"decision": "approve_edited", "operation": {"kind": "shell", "command": command}},
    )

    assert (edited.status_code, edited.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "operation.command: must not be empty or only whitespace",
        },
    )
    assert rows() == pending
    assert ApprovalRequest.objects.get(pk=request_id).status == Status.PENDING


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("careful_agent")
def test_a_whitespace_path_is_refused_like_an_empty_one(agent: ApiClient) -> None:
    before = rows()

    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "careful-agent",
            "operation": {"kind": "file", "action": "read", "path": "   "},
        },
    )

    assert (response.status_code, response.json()["message"]) == (
        400,
        "operation.path: must not be empty or only whitespace",
    )
    assert rows() == before


# --- 2. versioned decisions -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("careful_agent")
def test_the_second_approver_approves_the_edited_text_by_its_version(
    agent: ApiClient, approver: ApiClient
) -> None:
    bob = ApiClient(issue_token("bob", ["approver"]))
    asked = ask(agent, HIGH).json()
    edited = decide(
        approver,
        asked["id"],
        {
            "decision": "approve_edited",
            "operation": {"kind": "shell", "command": EDITED},
            "version": asked["version"],
        },
    ).json()
    assert (edited["status"], [a["by"] for a in edited["approvals"]]) == ("pending", ["api:alice"])
    assert edited["version"] != asked["version"]
    before = rows()

    # Bob saw the agent's command (an old page, the e-mail): approving it is refused, and
    # the answer says what it now is.
    blind = decide(bob, asked["id"], {"decision": "approve"})
    stale = decide(bob, asked["id"], {"decision": "approve", "version": asked["version"]})

    now = f"version {edited['version']}"
    assert (blind.status_code, blind.json()) == (
        409,
        {
            "error": "conflict",
            "message": f"approval request {asked['id']} was edited since it was asked: it now "
            f"reads {EDITED!r}, edited by api:alice, with 1 of 2 approvals ({now}); approve "
            "it again naming that version",
        },
    )
    assert (stale.status_code, stale.json()["message"]) == (
        409,
        f"approval request {asked['id']} changed since version {asked['version']}: it now "
        f"reads {EDITED!r}, edited by api:alice, with 1 of 2 approvals ({now})",
    )
    assert rows() == before

    approved = decide(bob, asked["id"], {"decision": "approve", "version": edited["version"]})

    assert approved.status_code == 200
    body = approved.json()
    assert (body["status"], body["decision"], body["edit"]["normalised"]) == (
        "approved",
        "allow_edited",
        EDITED,
    )
    assert [a["by"] for a in body["approvals"]] == ["api:alice", "api:bob"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("careful_agent")
def test_a_decision_on_an_older_version_is_refused_even_a_denial(
    agent: ApiClient, approver: ApiClient
) -> None:
    bob = ApiClient(issue_token("bob", ["approver"]))
    asked = ask(agent, HIGH).json()
    # Alice approves (1 of 2): the version moves on with her approval.
    first = decide(approver, asked["id"], {"decision": "approve", "version": asked["version"]})
    assert first.json()["version"] != asked["version"]
    before = rows()

    denied = decide(bob, asked["id"], {"decision": "deny", "version": asked["version"]})

    assert denied.status_code == 409
    assert denied.json()["message"].startswith(
        f"approval request {asked['id']} changed since version {asked['version']}: it now "
        f"reads {HIGH!r}, with 1 of 2 approvals"
    )
    assert rows() == before
    # Without a version a denial is always taken: denying is safe whatever was seen.
    assert decide(bob, asked["id"], {"decision": "deny"}).json()["status"] == "denied"


# --- 2. the e-mail confirmation page ----------------------------------------------------------


def _person(username: str, email: str) -> User:
    ensure_role_groups()
    made = User.objects.create_user(username, email=email, password="x" * 16)
    return user_set_role(user=made, role="approver", actor="user:test")


def _approve_link(mail: MailServer, address: str) -> str:
    for message in mail.wait_for(1):
        if message["To"] == address:
            for line in text_of(message).splitlines():
                if line.startswith("Approve:"):
                    return urlsplit(line.split()[1]).path
    raise AssertionError(f"no approve link was e-mailed to {address}")


def _version_on(page: str) -> str:
    found = re.search(r'name="version" value="([0-9a-f]+)"', page)
    assert found is not None, "the confirmation page carries no version"
    return found.group(1)


@pytest.mark.cluster
@pytest.mark.usefixtures("service", "careful_agent")
def test_the_confirmation_page_shows_the_edit_and_confirms_only_what_it_showed(
    agent: ApiClient, approver: ApiClient, mail: MailServer
) -> None:
    bob = _person("bob", "bob@example.com")
    browser = Client()
    browser.force_login(bob)
    request_id = ask(agent, HIGH).json()["id"]
    link = _approve_link(mail, "bob@example.com")
    # Bob opens the link before Alice edits: the page shows the agent's command.
    opened = browser.get(link).content.decode()
    assert "Operation, as edited" not in opened
    seen_before = _version_on(opened)

    edited = decide(
        approver,
        request_id,
        {"decision": "approve_edited", "operation": {"kind": "shell", "command": EDITED}},
    ).json()
    before = rows()

    # His confirmation of the page he saw is refused; nothing changes.
    stale = browser.post(link, {"version": seen_before}, follow=True).content.decode()

    assert f"approval request {request_id} changed since version {seen_before}" in stale
    assert ApprovalRequest.objects.get(pk=request_id).status == Status.PENDING
    assert rows() == before

    # Reopened, the page shows the edit, who made it, and the approvals so far.
    page = browser.get(link).content.decode()
    assert f'<pre class="operation" id="link-edited">{EDITED}</pre>' in page
    assert "Edited by api:alice" in page
    assert "approving approves this edit, not what the agent asked" in page
    assert f'<pre class="operation" id="link-asked">{HIGH}</pre>' in page
    assert '<dd id="link-signoffs">1 of 2 · api:alice</dd>' in page
    assert _version_on(page) == edited["version"]

    browser.post(link, {"version": _version_on(page)})

    decided = ApprovalRequest.objects.get(pk=request_id)
    assert decided.edit is not None
    assert (decided.status, decided.edit["normalised"]) == (Status.APPROVED, EDITED)
    assert list(decided.signoffs.order_by("at").values_list("actor", flat=True)) == [
        "api:alice",
        "user:bob",
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("careful_agent")
@pytest.mark.parametrize("version", ["zzz", "", " ", "A" * 32, "0" * 31, "0" * 64, 7])
def test_a_malformed_version_is_a_400_and_decides_nothing(
    agent: ApiClient, approver: ApiClient, version: Any
) -> None:
    """Issue 45: "zzz" was a 409 "changed since version zzz", and "" was taken as no
    version (an approval of whatever the request now is)."""
    asked = ask(agent, "wc -l data.csv").json()
    before = rows()

    answer = decide(approver, asked["id"], {"decision": "approve", "version": version})

    expected = (
        "version must be a request's version as the API shows it (32 hexadecimal "
        "characters), or absent"
        if isinstance(version, str)
        else "version must be a string"
    )
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": "invalid_request", "message": expected},
    )
    assert rows() == before
    assert ApprovalRequest.objects.get(pk=asked["id"]).status == Status.PENDING

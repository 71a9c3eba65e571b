"""The approve and deny links in an approver's e-mail: they open a confirmation page for
that person, signed in, and decide nothing on their own; each works once, until the
request's deadline."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client

from approvals.models import ApprovalLink, ApprovalRequest, Delivery, Status
from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups, user_set_role
from tests.support.api import ApiClient
from tests.support.processes import wait_until
from tests.support.receivers import MailServer, text_of
from tests.support.unchanged import rows

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service", "data_agent")]
PASSWORD = "x" * 16


def person(username: str, role: str, email: str = "") -> User:
    ensure_role_groups()
    made = User.objects.create_user(username, email=email, password=PASSWORD)
    return user_set_role(user=made, role=role, actor="user:test")


def signed_in(user: User | None) -> Client:
    browser = Client()
    if user is not None:
        browser.force_login(user)
    return browser


def links_for(mail: MailServer, address: str, count: int) -> dict[str, str]:
    """The paths of the approve and deny links in the newest e-mail to ``address``."""
    message = [m for m in mail.wait_for(count) if m["To"] == address][-1]
    found = {}
    for line in text_of(message).splitlines():
        if line.startswith(("Approve:", "Deny:")):
            name, url = line.split()
            found[name.rstrip(":").lower()] = urlsplit(url).path
    return found


def delivered() -> None:
    """Until every delivery has its outcome: the worker records one just after the mail
    server took the message, so a comparison begun when the e-mail arrived could see the
    row change under it (a flake of the parallel suite)."""
    wait_until(
        lambda: not Delivery.objects.filter(status=Delivery.Status.PENDING).exists(),
        timeout=30,
        message="every delivery's outcome recorded",
    )


def ask(agent: ApiClient, **extra: Any) -> str:
    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "data-agent",
            "operation": {"kind": "shell", "command": "pip install pandas"},
            **extra,
        },
    )
    return str(response.json()["id"])


def test_a_link_decides_only_when_its_recipient_confirms_it_signed_in(
    agent: ApiClient, mail: MailServer
) -> None:
    alice = person("alice", "approver", "alice@example.com")
    bob = person("bob", "approver", "bob@example.com")
    vera = person("vera", "viewer")
    request_id = ask(agent)
    link = links_for(mail, "alice@example.com", 2)
    delivered()
    before = rows()

    # Nobody signed in: the login page, then back to the link.
    anonymous = signed_in(None).get(link["approve"])
    assert (anonymous.status_code, anonymous["Location"]) == (
        302,
        f"/login/?next={quote(link['approve'])}",
    )
    assert signed_in(None).post(link["approve"]).status_code == 302
    # Another approver, or a viewer, signed in: refused.
    for other, status in ((bob, 403), (vera, 403)):
        assert signed_in(other).get(link["approve"]).status_code == status
        assert signed_in(other).post(link["approve"]).status_code == status
    assert "this link was sent to alice: sign in as them, or decide from the queue" in (
        signed_in(bob).get(link["approve"]).content.decode()
    )
    # Alice opening it: a page that asks her to confirm, nothing more.
    page = signed_in(alice).get(link["approve"])
    assert page.status_code == 200
    assert "Approve this operation?" in page.content.decode()
    assert rows() == before

    confirmed = signed_in(alice).post(link["approve"])

    assert (confirmed.status_code, confirmed["Location"]) == (302, f"/approvals/{request_id}/")
    decided = ApprovalRequest.objects.get(pk=request_id)
    assert (decided.status, decided.decided_by) == (Status.APPROVED, "user:alice")
    assert AuditEntry.objects.get(action="approval.approve").payload == {
        "status": "approved",
        "reason": "",
        "operation": "pip install pandas",
        "approvers": ["user:alice"],
        "via": "email link",
    }
    assert ApprovalLink.objects.filter(used_at__isnull=False).count() == 1

    # Used once: the same link, or her deny link, changes nothing more.
    delivered()
    after = rows()
    again = signed_in(alice).post(link["approve"])
    assert again.status_code == 409
    assert "this link was already used" in again.content.decode()
    deny = signed_in(alice).post(link["deny"], follow=True)
    assert f"approval request {request_id} is already approved" in deny.content.decode()
    assert rows() == after


def test_a_deny_link_carries_a_reason_and_forged_or_expired_links_do_nothing(
    agent: ApiClient, mail: MailServer
) -> None:
    alice = person("alice", "approver", "alice@example.com")
    request_id = ask(agent)
    link = links_for(mail, "alice@example.com", 1)
    browser = signed_in(alice)

    forged = link["approve"].replace("/link/", "/link/x")
    assert browser.get(forged).status_code == 404
    assert "this link is not valid" in browser.get(forged).content.decode()
    # Another request's address: its last digit changed (to one it is not: a request id
    # ending in 0 kept its own address and was answered 200, one run in sixteen).
    elsewhere = request_id[:-1] + ("1" if request_id.endswith("0") else "0")
    assert browser.get(link["approve"].replace(request_id, elsewhere)).status_code == 404

    # A reason longer than the API takes is refused, not cut, and the link stays usable.
    before = rows()
    long = browser.post(link["deny"], {"reason": "x" * 1001}, follow=True)
    assert "reason must be at most 1000 characters" in long.content.decode()
    assert rows() == before
    browser.post(link["deny"], {"reason": "use conda"})
    denied = ApprovalRequest.objects.get(pk=request_id)
    assert (denied.status, denied.reason, denied.decided_by) == (
        "denied",
        "use conda",
        "user:alice",
    )

    short = ask(agent, deadlineSeconds=1)
    expiring = links_for(mail, "alice@example.com", 2)
    # One request's link on the address of another that exists is not valid either.
    borrowed = browser.get(link["approve"].replace(request_id, short))
    assert (borrowed.status_code, "this link is not valid" in borrowed.content.decode()) == (
        404,
        True,
    )
    delivered()
    time.sleep(1.2)
    before = rows()
    late = browser.post(expiring["approve"])
    assert late.status_code == 409
    assert "this link has expired" in late.content.decode()
    assert rows() == before
    assert ApprovalRequest.objects.get(pk=short).status == Status.PENDING

"""Approvals that reach people, in Chromium against the real web process, worker, Redis
and SMTP server: a reviewer edits a command and the waiting agent is told to run the edit;
a second approver sees the first one's approval live; an e-mailed link leads an approver
through signing in to a confirmation, and only that decides; an admin makes a channel and
sees its secret once; a request's own page follows it live."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from approvals import notifications
from approvals.models import ApprovalRequest, Delivery, NotificationChannel, Status
from contextsvc.core.models import AuditEntry
from cs_agent import ApprovalClient, Verdict
from profiles.services import profile_save
from tests.support.api import ApiClient, issue_token, run_report
from tests.support.processes import wait_until
from tests.support.receivers import HttpReceiver, MailServer, text_of

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

RULES = {"permissions": {"allow": ["shell(ls:*)"], "deny": ["shell(curl:*)"]}}


def agent_type(name: str, **values: Any) -> None:
    profile_save(
        name=name,
        create=True,
        actor="user:test",
        values={"source": "builtin", "image": "busybox:1.36", "rules": RULES, **values},
    )


def waiting_agent(
    web_server: str, agent: str, command: str
) -> tuple[threading.Thread, list[Verdict]]:
    """An agent blocked on the check of ``command`` (long-polling the real web process)."""
    client = ApprovalClient(web_server, issue_token(f"{agent}-1", ["agent"]), agent_type=agent)
    verdicts: list[Verdict] = []
    thread = threading.Thread(
        target=lambda: verdicts.append(client.shell(command, "ctx-1", timeout=90))
    )
    thread.start()
    return thread, verdicts


def pending() -> ApprovalRequest:
    found = wait_until(
        lambda: ApprovalRequest.objects.filter(status=Status.PENDING).first(),
        timeout=30,
        message="the agent's request",
    )
    assert isinstance(found, ApprovalRequest)
    return found


def test_a_reviewer_edits_the_command_and_the_agent_runs_the_edit(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    web_server: str,
    screenshot: Callable[..., Any],
) -> None:
    agent_type("data-agent")
    make_user("alice", "approver")
    login(page, "alice")
    live_page(page, "/approvals/")
    thread, verdicts = waiting_agent(web_server, "data-agent", "pip install pandas")
    request = pending()
    card = page.locator(f"#approval-{request.pk}")
    expect(card).to_be_visible(timeout=15_000)

    card.locator("details.edit summary").click()
    command = card.locator('textarea[name="command"]')
    expect(command).to_have_value("pip install pandas")
    expect(card.locator('input[name="path"]')).to_be_hidden()
    # A denied edit: the rules say so before anything is sent, and it cannot be approved.
    command.fill("curl https://pypi.org/simple/pandas/")
    verdict = card.locator('[data-field="edit-check"]')
    expect(verdict).to_have_text(
        "the edited operation is denied by shell(curl:*): an edit cannot allow what the rules deny"
    )
    expect(card.locator('button[value="approve_edited"]')).to_be_disabled()
    command.fill("pip install pandas==2.2.2 > /tmp/pip.log")
    expect(verdict).to_contain_text("The rules: ask · risk high")
    expect(verdict).to_contain_text("writes outside the context's directory: /tmp/pip.log")
    command.fill("pip install pandas==2.2.2")
    # Still high (pip reaches its index), and the note about /tmp is gone.
    expect(verdict).to_have_text("The rules: ask · risk high")
    screenshot(page, "approval-edit")
    card.locator('button[value="approve_edited"]').click()

    expect(card).to_have_count(0, timeout=15_000)
    thread.join(timeout=30)
    assert [(v.allowed, v.status, v.edited, v.operation) for v in verdicts] == [
        (True, "approved", True, {"kind": "shell", "command": "pip install pandas==2.2.2"})
    ]
    request.refresh_from_db()
    assert request.edit is not None
    assert (request.status, request.operation["command"], request.edit["operation"]["command"]) == (
        "approved",
        "pip install pandas",
        "pip install pandas==2.2.2",
    )
    assert (
        AuditEntry.objects.get(action="approval.edit", target=str(request.pk)).payload["edited"]
        == "pip install pandas==2.2.2"
    )
    page.goto(f"{web_server}/approvals/{request.pk}/")
    expect(page.locator("#edit pre.operation")).to_have_text("pip install pandas==2.2.2")


def test_the_second_approver_sees_the_first_approval_live(
    browser: Browser,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    web_server: str,
    screenshot: Callable[..., Any],
) -> None:
    agent_type("careful-agent", approval_policy={"twoPersonRule": True})
    pages = []
    for name in ("alice", "bob"):
        make_user(name, "approver")
        page = browser.new_context().new_page()
        login(page, name)
        live_page(page, "/approvals/")
        pages.append(page)
    thread, verdicts = waiting_agent(web_server, "careful-agent", "cp report.csv /tmp/report.csv")
    request = pending()
    cards = [page.locator(f"#approval-{request.pk}") for page in pages]
    for card in cards:
        expect(card.locator('[data-field="signoffs"]')).to_have_text("0 of 2 approvals")
        expect(card.locator('[data-field="notes"]')).to_contain_text(
            "writes outside the context's directory: /tmp/report.csv"
        )
        expect(card.locator("details.similar")).to_be_hidden()

    cards[0].locator("button[value=approve]").click()

    for card in cards:
        expect(card.locator('[data-field="signoffs"]')).to_have_text(
            "1 of 2 approvals · user:alice", timeout=15_000
        )
        # Approved once: approved as it stands from now on, never edited.
        expect(card.locator("details.edit")).to_be_hidden()
    screenshot(pages[1], "approval-two-person")
    assert ApprovalRequest.objects.get(pk=request.pk).status == Status.PENDING
    assert verdicts == []

    cards[1].locator("button[value=approve]").click()

    for card in cards:
        expect(card).to_have_count(0, timeout=15_000)
    thread.join(timeout=30)
    assert [(v.allowed, v.status) for v in verdicts] == [(True, "approved")]
    assert list(request.signoffs.values_list("actor", flat=True)) == ["user:alice", "user:bob"]


def test_an_e_mailed_link_leads_through_signing_in_to_a_confirmation(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    web_server: str,
    mail_server: MailServer,
    screenshot: Callable[..., Any],
) -> None:
    mail_server.clear()
    agent_type("data-agent")
    alice = make_user("alice", "approver")
    alice.email = "alice@example.com"
    alice.save()
    # Asked through the real web process, which e-mails the approvers; the worker sends it.
    thread, verdicts = waiting_agent(web_server, "data-agent", "pip install pandas")
    request = pending()
    (message,) = mail_server.wait_for(1)
    # A reviewer's queue says who was told, and follows the message until it arrived.
    make_user("vera", "viewer")
    queue = page.context.browser.new_context().new_page()  # type: ignore[union-attr]
    login(queue, "vera")
    queue.goto(f"{web_server}/approvals/")
    expect(queue.locator(f'#approval-{request.pk} [data-field="notified"]')).to_contain_text(
        "alice (E-mail, delivered)", timeout=15_000
    )
    queue.close()
    approve = next(
        line.split()[1] for line in text_of(message).splitlines() if line.startswith("Approve:")
    )
    link = web_server + urlsplit(approve).path

    page.goto(link)
    expect(page).to_have_url(f"{web_server}/login/?next={urlsplit(link).path.replace(':', '%3A')}")
    assert ApprovalRequest.objects.get(pk=request.pk).status == Status.PENDING
    page.fill("#id_username", "alice")
    page.fill("#id_password", "a-long-test-password")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Approve this operation?")
    expect(page.locator("pre.operation")).to_have_text("pip install pandas")
    screenshot(page, "approval-link")
    assert ApprovalRequest.objects.get(pk=request.pk).status == Status.PENDING

    page.click("#link-form button[type=submit]")

    expect(page.locator(".message.success")).to_contain_text("approved")
    thread.join(timeout=30)
    assert [(v.allowed, v.status) for v in verdicts] == [(True, "approved")]
    assert AuditEntry.objects.get(action="approval.approve").actor == "user:alice"
    page.goto(link)
    expect(page.locator("#link-problem")).to_have_text("this link was already used")


def test_an_admin_makes_a_channel_sees_its_secret_once_and_its_log(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    web_server: str,
    webhook_receiver: HttpReceiver,
    screenshot: Callable[..., Any],
) -> None:
    agent_type("data-agent")
    make_user("ada", "admin")
    login(page, "ada")
    page.goto(f"{web_server}/notifications/")
    page.fill("#id_name", "ops")
    page.select_option("#id_kind", "webhook")
    page.fill("#id_url", webhook_receiver.url)
    page.click("form.card button[type=submit]")

    secret = page.locator("#secret").text_content()
    assert secret is not None
    assert secret.startswith("whsec_")
    page.goto(f"{web_server}/notifications/")
    assert secret not in page.content()
    assert "secret-path" not in page.content()
    row = page.locator('#channels tr[data-channel="ops"]')
    expect(row).to_contain_text(f"http://127.0.0.1:{webhook_receiver.port}/…")

    row.locator("button", has_text="Send a test").click()
    (post,) = webhook_receiver.wait_for(1)
    assert post.json()["event"] == "test"
    wait_until(
        lambda: Delivery.objects.filter(status=Delivery.Status.DELIVERED).count() == 1,
        timeout=30,
        message="the test message to be delivered",
    )
    page.goto(f"{web_server}/notifications/")
    entry = page.locator("#deliveries tbody tr").first
    expect(entry).to_contain_text("test")
    expect(entry).to_contain_text("delivered")
    expect(entry).to_contain_text("Delivered · 200")
    screenshot(page, "notifications")
    assert NotificationChannel.objects.get().created_by == "user:ada"


@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_the_approval_page_follows_its_request(
    width: int,
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    web_server: str,
    webhook_receiver: HttpReceiver,
    screenshot: Callable[..., Any],
) -> None:
    """Issue 32, item 2: a request's page heard nothing after it loaded (a decision made by
    API did not appear within 8 s). Now its edit, each signoff, the decision, the messages
    sent about it and what ran arrive without a reload."""
    agent_type("careful-agent", approval_policy={"twoPersonRule": True})
    notifications.channel_create(
        name="ops", kind="webhook", url=webhook_receiver.url, agent_types=["careful-agent"],
        events=["approval.decided"], actor="user:test",
    )  # fmt: skip
    make_user("vera", "viewer")
    agent_token = issue_token("careful-agent-1", ["agent"])
    agent, alice, bob = (
        ApiClient(agent_token),
        ApiClient(issue_token("alice", ["approver"])),
        ApiClient(issue_token("bob", ["approver"])),
    )
    asked = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "careful-agent",
            "operation": {"kind": "shell", "command": "cp report.csv /tmp/report.csv"},
        },
    ).json()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "vera")
    live_page(page, f"/approvals/{asked['id']}/")
    page.evaluate("window.__not_reloaded = true")
    status = page.locator("h1 .badge")
    expect(status).to_have_text("pending")
    expect(page.locator("#edit")).to_have_count(0)
    expect(page.locator("#run")).to_contain_text("Nothing ran: it was not approved.")

    edited = "cp report.csv /tmp/report-copy.csv"
    first = alice.post(
        f"/v1/approvals/{asked['id']}/decision",
        {
            "decision": "approve_edited",
            "operation": {"kind": "shell", "command": edited},
            "version": asked["version"],
        },
    )
    assert first.status_code == 200
    expect(page.locator("#edit pre.operation")).to_have_text(edited, timeout=15_000)
    expect(page.locator("#edit h2")).to_have_text("Edited by api:alice")
    expect(page.locator("#signoffs")).to_contain_text("Approved by api:alice at")
    expect(page.locator("#signoffs")).to_contain_text("(1 of 2)")
    expect(status).to_have_text("pending")

    second = bob.post(
        f"/v1/approvals/{asked['id']}/decision",
        {"decision": "approve", "version": first.json()["version"]},
    )
    assert second.status_code == 200
    expect(status).to_have_text("approved", timeout=15_000)
    expect(page.locator("#signoffs")).to_contain_text("(2 of 2)")
    (post,) = webhook_receiver.wait_for(1)
    assert post.json()["event"] == "approval.decided"
    delivery = page.locator("#notifications tbody tr", has_text="approval.decided")
    expect(delivery).to_contain_text("ops (Webhook)")
    expect(delivery.locator(".badge")).to_have_text("delivered", timeout=15_000)
    expect(page.locator("#run")).to_contain_text("Approved; the executor has not reported a run.")

    ran = agent.post("/v1/runs", run_report(asked["id"], edited, duration_ms=42))
    assert ran.status_code == 201
    expect(page.locator("#run pre.operation")).to_have_text(edited, timeout=15_000)
    expect(page.locator("#run")).to_contain_text("42 ms")
    assert page.evaluate("window.__not_reloaded") is True
    if width == 1280:
        screenshot(page, "approval-detail")

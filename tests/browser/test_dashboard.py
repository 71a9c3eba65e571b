"""The dashboard in Chromium: live allocations, the live approval queue shared by two
reviewers, roles enforced on the server, release, and screenshots of the main pages."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from allocations.models import Allocation, Phase
from approvals.models import ApprovalRequest, Status
from contextsvc.core.models import AuditEntry
from cs_agent import ApprovalClient, Verdict
from profiles.services import profile_save
from tests.support.api import ApiClient, issue_token
from tests.support.kube import wait_for_phase
from tests.support.processes import ManagedProcess, paused, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.cluster]


def test_allocation_from_the_form_turns_ready_live_and_is_released(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    namespace: str,
    screenshot: Callable[..., Any],
    watcher_process: ManagedProcess,
) -> None:
    make_user("ada", "admin")
    login(page, "ada")
    screenshot(page, "overview")
    page.goto(page.url + "allocations/new/")
    page.fill("#id_name", "from-the-form")
    page.fill("#id_namespace", namespace)
    page.fill("#id_replicas", "3")
    page.check("input[name=strategy][value=shared]")
    page.fill("#id_size", "1Gi")
    heading = page.locator("#allocation")
    # Readiness is observed by the watcher: held until the page is live, so that the page
    # certainly starts below 3/3 (on a fast cluster it could otherwise be ready first).
    with paused(watcher_process):
        page.click("#allocation-form button[type=submit]")
        page.wait_for_selector('#live-indicator[data-state="live"]')
        initial = heading.locator('[data-field="ready"]').text_content()
        page.evaluate("window.__not_reloaded = true")
    assert initial == "0/3"
    expect(heading.locator('[data-field="ready"]')).to_have_text("3/3", timeout=60_000)
    expect(heading.locator('[data-field="phase"]')).to_have_text("ready")
    # It got there without a reload: through the socket.
    assert page.evaluate("window.__not_reloaded") is True
    # NetworkPolicy, the shared PVC, three Sandboxes and their three Pods.
    expect(page.locator("#objects details.object")).to_have_count(8, timeout=30_000)
    sandbox = page.locator("#objects details.object", has_text="Sandbox sandbox-from-the-form-0")
    expect(sandbox.locator("table.conditions")).to_contain_text("ReadyTrueDependenciesReady")
    screenshot(page, "allocation-detail")

    page.on("dialog", lambda dialog: dialog.accept())
    page.click("button:has-text('Release')")
    expect(page.locator('#allocation [data-field="phase"]')).to_have_text(
        "released", timeout=60_000
    )
    assert Allocation.objects.get(name="from-the-form").phase == Phase.RELEASED
    assert list(
        AuditEntry.objects.filter(target="from-the-form")
        .order_by("id")
        .values_list("actor", "action")
    )[:2] == [
        ("user:ada", "allocation.create"),
        ("user:ada", "allocation.release"),
    ]


@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_the_allocations_list_inserts_updates_and_removes_rows_live(
    width: int,
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    namespace: str,
    web_server: str,
    screenshot: Callable[..., Any],
) -> None:
    """Issue 32, item 2: a pool made by API only brought a banner "Reload to see them"
    (the row stayed absent), and a released one stayed listed as released. Now the rows are
    what a fresh load of the page shows, without a reload."""
    make_user("vera", "viewer")
    api = issue_token("sh", ["allocations"])
    first = _allocate(web_server, api, namespace, "list-one", 1)
    wait_for_phase("list-one", Phase.READY)
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "vera")
    live_page(page, "/allocations/")
    page.evaluate("window.__not_reloaded = true")
    row = page.locator(f'tr[data-id="{first}"]')
    total = page.locator("h1 small")
    expect(row.locator('[data-field="phase"]')).to_have_text("ready")
    expect(total).to_have_text("1")

    # Inserted, newest first, then updated in place as it becomes ready.
    second = _allocate(web_server, api, namespace, "list-two", 2)
    inserted = page.locator(f'tr[data-id="{second}"]')
    expect(inserted.locator("td a")).to_have_text("list-two", timeout=15_000)
    expect(inserted).to_be_in_viewport()
    expect(total).to_have_text("2")
    assert _listed(page) == [str(second), str(first)]
    expect(inserted.locator('[data-field="ready"]')).to_have_text("2/2", timeout=60_000)
    expect(inserted.locator('[data-field="phase"]')).to_have_text("ready")

    # Released: history, which the list shows only when asked for by phase.
    _release(web_server, api, "list-one")
    expect(row).to_have_count(0, timeout=60_000)
    expect(total).to_have_text("1")
    assert _listed(page) == [str(second)]
    assert page.evaluate("window.__not_reloaded") is True
    if width == 1280:
        screenshot(page, "allocations")

    # What the page shows now is what a freshly loaded page shows.
    fresh = page.context.new_page()
    fresh.goto(f"{web_server}/allocations/")
    assert _listed(fresh) == _listed(page)
    for field in ("phase", "ready"):
        selector = f'#allocations [data-field="{field}"]'
        assert page.locator(selector).all_text_contents() == (
            fresh.locator(selector).all_text_contents()
        )


def _listed(page: Page) -> list[str]:
    return list(
        page.locator("#allocations tbody tr[data-id]").evaluate_all(
            "rows => rows.map(row => row.dataset.id)"
        )
    )


def _allocate(server: str, token: str, namespace: str, name: str, replicas: int) -> int:
    request = urllib.request.Request(
        f"{server}/v1/sandbox-pools",
        method="POST",
        data=json.dumps(
            {
                "name": name,
                "replicas": replicas,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            }
        ).encode(),
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request) as response:
        assert response.status == 201
    return Allocation.objects.get(name=name).pk


def _release(server: str, token: str, name: str) -> None:
    request = urllib.request.Request(
        f"{server}/v1/sandbox-pools/{name}",
        method="DELETE",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request) as response:
        assert response.status == 204


def test_two_reviewers_share_one_live_queue(
    browser: Browser,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    web_server: str,
    screenshot: Callable[..., Any],
) -> None:
    profile_save(
        name="data-agent",
        create=True,
        actor="user:test",
        values={
            "source": "builtin",
            "image": "busybox:1.36",
            "rules": {"permissions": {"allow": ["shell(ls:*)"], "deny": []}},
        },
    )
    make_user("alice", "approver")
    make_user("bob", "approver")
    pages = []
    for name in ("alice", "bob"):
        page = browser.new_context().new_page()
        login(page, name)
        live_page(page, "/approvals/")
        pages.append(page)
    client = ApprovalClient(
        web_server,
        issue_token("agent-7", ["agent"]),
        agent_type="data-agent",
        agent_instance="pod-7",
    )
    verdicts: list[Verdict] = []
    waiting = threading.Thread(
        target=lambda: verdicts.append(client.shell("pip install pandas", "ctx-abc123", timeout=60))
    )
    waiting.start()

    request = wait_until(
        lambda: ApprovalRequest.objects.filter(status=Status.PENDING).first(),
        timeout=30,
        message="the agent's request",
    )
    assert isinstance(request, ApprovalRequest)
    for page in pages:
        card = page.locator(f"#approval-{request.pk}")
        expect(card).to_be_visible(timeout=15_000)
        expect(card.locator('[data-field="operation"]')).to_have_text("pip install pandas")
        expect(card.locator('[data-field="context"]')).to_have_text("ctx-abc123")
        expect(card.locator('[data-field="time-left"]')).to_contain_text("left")
    screenshot(pages[0], "approvals")

    pages[0].locator(f"#approval-{request.pk} button[value=approve]").click()

    for page in pages:
        expect(page.locator(f"#approval-{request.pk}")).to_have_count(0, timeout=15_000)
    waiting.join(timeout=30)
    assert [(v.allowed, v.status) for v in verdicts] == [(True, "approved")]
    request.refresh_from_db()
    assert (request.status, request.decided_by) == (Status.APPROVED, "user:alice")


def test_viewers_get_no_decision_buttons_and_forged_posts_are_refused(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    web_server: str,
) -> None:
    profile_save(
        name="data-agent",
        create=True,
        actor="user:test",
        values={"source": "builtin", "image": "busybox:1.36"},
    )
    make_user("vic", "viewer")
    client = ApprovalClient(web_server, issue_token("agent-7", ["agent"]), agent_type="data-agent")
    pending = client.submit({"kind": "shell", "command": "pip install pandas"}, "ctx-1")
    login(page, "vic")
    live_page(page, "/approvals/")

    card = page.locator(f"#approval-{pending['id']}")
    expect(card).to_be_visible()
    expect(card.locator("button[value=approve]")).to_be_hidden()
    expect(card.locator("button[value=deny]")).to_be_hidden()
    # A forged decision with a valid session and CSRF token is still refused by the server.
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    forged = page.request.post(
        f"{web_server}/approvals/{pending['id']}/decide/",
        form={"decision": "approve", "csrfmiddlewaretoken": token or ""},
        headers={"Referer": f"{web_server}/approvals/"},
    )
    assert forged.status == 403
    assert ApprovalRequest.objects.get(pk=pending["id"]).status == Status.PENDING
    # Admin-only pages are refused too.
    assert page.request.get(f"{web_server}/clients/").status == 403
    assert page.request.get(f"{web_server}/allocations/new/").status == 403


def test_an_admin_suspends_resumes_and_scales_from_the_page(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    namespace: str,
    screenshot: Callable[..., Any],
) -> None:
    make_user("grace", "admin")
    api = ApiClient(issue_token("sh", ["allocations"]))
    response = api.post(
        "/v1/sandbox-pools",
        {
            "name": "lifelong",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
            "ttlSeconds": 86400,
            "artifacts": {"size": "1Gi", "accessMode": "ReadWriteMany", "retain": True},
        },
    )
    assert response.status_code == 201
    allocation = wait_for_phase("lifelong", Phase.READY, timeout=90)
    login(page, "grace")
    live_page(page, f"/allocations/{allocation.pk}/")
    heading = page.locator("#allocation")
    expect(page.locator("dl.spec")).to_contain_text("context-lifelong-artifacts")

    page.click("#lifecycle button:has-text('Suspend')")
    expect(heading.locator('[data-field="phase"]')).to_have_text("suspended", timeout=30_000)
    screenshot(page, "allocation-suspended")
    page.click("#lifecycle button:has-text('Resume')")
    expect(heading.locator('[data-field="phase"]')).to_have_text("ready", timeout=90_000)
    page.fill("#scale-replicas", "2")
    page.click("#lifecycle button:has-text('Scale')")
    expect(heading.locator('[data-field="ready"]')).to_have_text("2/2", timeout=90_000)
    screenshot(page, "allocation-lifecycle")

    assert list(
        AuditEntry.objects.filter(target="lifelong").order_by("id").values_list("actor", "action")
    ) == [
        ("api:sh", "allocation.create"),
        ("user:grace", "allocation.suspend"),
        ("user:grace", "allocation.resume"),
        ("user:grace", "allocation.update"),
    ]

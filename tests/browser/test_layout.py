"""The dashboard's layout at 800, 1280 and 1920 px with the content that broke it: an
approval for a 2,000-character command without spaces, audit rows for 253-character context
ids, the cluster page's CRD table, the top bar on a narrow window, the form's radio buttons.
Nothing may push the page wider than the window, and every control stays on screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from approvals.models import ApprovalRequest
from approvals.services.check import approval_check
from approvals.services.decisions import approval_approve
from approvals.services.lifecycle import approval_cancel
from contextsvc.core import services
from profiles.services import profile_save

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

WIDTHS = (800, 1280, 1920)
# Harmless data: a listing of one very long file name (never run; only judged and shown).
LONG_COMMAND = "ls " + "a" * 2000
LONG_CONTEXT = "c" * 253


def page_width(page: Page) -> tuple[int, int]:
    """(scroll width of the document, the window's width)."""
    widths: list[int] = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return widths[0], widths[1]


def right_edge(page: Page, selector: str) -> float:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return float(box["x"] + box["width"])


@pytest.fixture
def crowded(service: None) -> None:
    profile_save(
        name="data-agent",
        values={
            "source": "builtin",
            "image": "busybox:1.36",
            "rules": {"permissions": {"allow": ["shell(cat:*)"]}},
        },
        actor="user:test",
        create=True,
    )
    for context in (LONG_CONTEXT, "c" * 200 + "-other"):
        approval_check(
            operation={"kind": "shell", "command": LONG_COMMAND},
            context_id=context,
            agent_type="data-agent",
            actor="api:agent",
        )
    # The queue's history: an approved and a cancelled request (their status badges).
    decided = [
        approval_check(
            operation={"kind": "shell", "command": f"head notes-{index}.txt"},
            context_id="ctx-history",
            agent_type="data-agent",
            actor="api:agent",
        ).request
        for index in range(2)
    ]
    assert decided[0] is not None
    assert decided[1] is not None
    approval_approve(request_id=decided[0].pk, actor="user:someone")
    approval_cancel(request_id=decided[1].pk, actor="api:agent")


@pytest.mark.usefixtures("crowded")
@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_overflows_the_window(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    web_server: str,
    screenshot: Callable[..., Any],
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    make_user("ada", "admin")
    login(page, "ada")
    for path in (
        "/",
        "/approvals/",
        "/approvals/analytics/",
        "/notifications/",
        "/audit/",
        "/cluster/",
        "/allocations/new/",
        "/profiles/",
    ):
        page.goto(f"{web_server}{path}")
        page.wait_for_load_state("networkidle")
        scroll, window = page_width(page)
        assert scroll <= window, (path, width, scroll)

    # The top bar: "Log out" on screen however narrow the window.
    assert right_edge(page, ".logout button") <= width

    # The approval card: the long command wraps; its controls stay on screen.
    page.goto(f"{web_server}/approvals/")
    card = ".queue article.approval"
    for control in ("button[value=deny]", "button[value=approve]", "[data-field=time-left]"):
        assert right_edge(page, f"{card} {control}") <= width, control
    card_right = right_edge(page, card)
    for badge in page.locator(f"{card} .parts .badge").all():
        box = badge.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= card_right
    # Every badge on the page — the parts' decisions, the history's statuses — is one line
    # (issue 32: "ask" squeezed to 22×44 px, letters stacked; "approv/ed" at 800 px).
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.badge')]
            .filter((e) => e.offsetParent !== null)
            .filter((e) => e.offsetHeight > 2 * parseFloat(getComputedStyle(e).fontSize) + 4
                || e.scrollWidth > e.clientWidth + 1)
            .map((e) => e.textContent)"""
    )
    assert broken == [], (width, broken)
    screenshot(page, f"approvals-{width}")

    # The audit table stays inside its card (long targets wrap).
    page.goto(f"{web_server}/audit/")
    assert right_edge(page, ".card table") <= right_edge(page, ".card") + 0.5
    screenshot(page, f"audit-{width}")

    # The cluster page's CRD table stays inside its card, "served" badges included, and
    # nothing of it hides behind a scroll bar (the badges were cut off at 1280 px).
    page.goto(f"{web_server}/cluster/")
    capabilities = page.locator("section.card", has_text="Capabilities")
    capabilities_box = capabilities.bounding_box()
    assert capabilities_box is not None
    badges = capabilities.locator("table.crds .badge").all()
    assert len(badges) == 4
    for badge in badges:
        box = badge.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= capabilities_box["x"] + capabilities_box["width"]
    hidden = capabilities.locator(".scroll").evaluate("(e) => e.scrollWidth - e.clientWidth")
    assert hidden == 0
    screenshot(page, f"cluster-{width}")

    # The form's radio buttons sit beside their labels, on one line each.
    page.goto(f"{web_server}/allocations/new/")
    radios = page.locator("fieldset input[type=radio]").all()
    assert len(radios) == 4
    for radio in radios:
        radio_box = radio.bounding_box()
        label_box = radio.locator("xpath=ancestor::label[1]").bounding_box()
        assert radio_box is not None
        assert label_box is not None
        # One line: the label is about as tall as the button, and the text is to its right.
        assert label_box["height"] < 2 * radio_box["height"] + 8
        assert label_box["width"] > radio_box["width"] + 10


# Each word of each marked cell, measured in the cell's own font, against the room the cell
# gives its text: a word wider than that has been broken inside itself.
WORDS_BROKEN = """(selector) => {
  const canvas = document.createElement('canvas').getContext('2d');
  const broken = [];
  for (const cell of document.querySelectorAll(selector)) {
    const style = getComputedStyle(cell);
    canvas.font = style.font;
    const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    for (const word of cell.innerText.split(/\\s+/).filter(Boolean)) {
      if (canvas.measureText(word).width > room + 0.5) broken.push([word, room]);
    }
  }
  return broken;
}"""


@pytest.mark.usefixtures("crowded")
@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_command_leaves_its_reasons_room_and_team_words_stay_whole(
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    web_server: str,
    screenshot: Callable[..., Any],
    width: int,
) -> None:
    """Issue 45: on the request's page a long command squeezed the reason column to 2-4
    characters a line (its table was laid out by content, the card's was not), and the
    Teams page at 800 px broke "allocations" inside the word."""
    for name in ("research-and-development", "platform-operations"):
        team = services.team_create(name=name, actor="system:test")
        services.team_set_quotas(
            team=team, actor="system:test", max_live_sandboxes=40, max_storage_bytes=2**40,
            max_pending_approvals=20, max_requests_per_minute=600,
        )  # fmt: skip
    asked = ApprovalRequest.objects.filter(normalised=LONG_COMMAND).first()
    assert asked is not None
    page.set_viewport_size({"width": width, "height": 900})
    make_user("ada", "admin")
    login(page, "ada")

    page.goto(f"{web_server}/approvals/{asked.pk}/")
    rows = page.evaluate(
        """() => [...document.querySelectorAll('table.parts tr')].map((row) =>
            [row.cells[2].getBoundingClientRect().width,
             row.closest('table').getBoundingClientRect().width])"""
    )
    assert rows, "the request's page shows its parts"
    for reason, table in rows:
        assert reason >= 0.3 * table, (width, reason, table)
    assert page.evaluate(WORDS_BROKEN, "table.parts td.muted") == []
    screenshot(page, f"approval-page-{width}")

    page.goto(f"{web_server}/teams/")
    assert page.locator("td.words").count() == 6  # limits and use of three teams
    assert page.evaluate(WORDS_BROKEN, "td.words") == []
    scroll, window = page_width(page)
    assert scroll <= window, (width, scroll)
    screenshot(page, f"teams-{width}")

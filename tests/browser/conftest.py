"""Browser tests: Debian's Chromium driven by Playwright against the real stack (web,
worker, watcher, Redis, PostgreSQL, the test control plane). Playwright never downloads a
browser here; Chromium comes from Debian's package, installed on first use."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from contextsvc.core.users import ensure_role_groups, user_set_role
from devenv.system import REPO_DIR, which_or_install

SCREENSHOTS = REPO_DIR / ".local" / "screenshots"
# Keep Chromium off the network: this machine reaches nothing but loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",  # as root, Chromium's own sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """Playwright's synchronous API runs an event loop in the test thread, from the first
    browser test's setup on; the tests' own ORM calls (and the test database's setup) are
    still synchronous and safe there. The service processes never inherit this
    (tests/support/processes.py drops it)."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if before is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    # Debian's Chromium (a test tool cannot download a browser here); on a new machine the
    # suite's two processes both ask, and one installs it while the other waits.
    return {
        "executable_path": which_or_install("chromium", "chromium"),
        "args": CHROMIUM_ARGS,
        "headless": True,
    }


@pytest.fixture
def screenshot() -> Callable[[Any, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


PASSWORD = "a-long-test-password"


@pytest.fixture
def make_user(service: None) -> Callable[[str, str], User]:
    ensure_role_groups()

    def make(username: str, role: str) -> User:
        user = User.objects.create_user(username, password=PASSWORD)
        return user_set_role(user=user, role=role, actor="user:test")

    return make


@pytest.fixture
def login(web_server: str) -> Callable[[Any, str], Any]:
    def log_in(page: Any, username: str) -> Any:
        page.goto(f"{web_server}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{web_server}/")
        return page

    return log_in


@pytest.fixture
def live_page(web_server: str) -> Callable[[Any, str], Any]:
    """Open a page and wait until its WebSocket has delivered the snapshot."""

    def open_page(page: Any, path: str) -> Any:
        page.goto(f"{web_server}{path}")
        page.wait_for_selector('#live-indicator[data-state="live"]')
        return page

    return open_page


# axe-core, pinned in frontend/package-lock.json (a dev dependency: only the tests use it).
AXE = REPO_DIR / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
# What an accessibility check may not find on any page.
BLOCKING_IMPACTS = ("serious", "critical")


@pytest.fixture
def accessibility_problems() -> Callable[[Any], list[str]]:
    """axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A and
    AA rules), one line each: rule, impact, and the elements it names."""

    def check(page: Any) -> list[str]:
        page.add_script_tag(path=str(AXE))
        result = page.evaluate(
            """() => axe.run(document, {runOnly: {type: "tag",
                values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}})"""
        )
        return [
            f"{violation['id']} ({violation['impact']}): "
            + ", ".join(" ".join(node["target"]) for node in violation["nodes"][:5])
            for violation in result["violations"]
            if violation["impact"] in BLOCKING_IMPACTS
        ]

    return check

"""The overview's plots in Chromium (drawn by the pinned Chart.js, from frontend/charts.py's
data), updating live; and an accessibility check (axe-core) of every page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page

from allocations.models import Allocation, Phase, Strategy
from allocations.services.observed import allocation_observe_ready
from allocations.tests.factories import AllocationFactory
from approvals.models import ApprovalRequest, Status
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.services import audit_record
from profiles.services import profile_save

pytestmark = [pytest.mark.browser, pytest.mark.cluster]
CHARTS = (
    "chart-time-to-phase",
    "chart-phases-over-time",
    "chart-warm-pools",
    "chart-decision-time",
)


def drawn(page: Page, chart: str) -> dict[str, Any]:
    """The labels and datasets the page handed to Chart.js for ``chart``."""
    data: dict[str, Any] = page.evaluate(
        """(id) => {
            const chart = window.Charts.drawn[id];
            return {labels: chart.data.labels,
                    series: Object.fromEntries(chart.data.datasets.map(
                        (d) => [d.label, d.data]))};
        }""",
        chart,
    )
    return data


def history() -> Allocation:
    """Three allocations made ten minutes ago, each ready 4 s after its request (objects
    after 0.5 s, Pods scheduled after 1.5 s, volumes after 3 s), one warm-pool allocation of
    two claims, a warm pool the service sized from 1 to 3, and two decided approvals.
    Returns one more allocation, still provisioning."""
    now = timezone.now()
    start = now - timedelta(minutes=10)
    for i in range(3):
        row = AllocationFactory.create(name=f"done-{i}", strategy=Strategy.DEDICATED)
        Allocation.objects.filter(pk=row.pk).update(
            phase=Phase.READY,
            ready_replicas=1,
            requested_at=start,
            provisioned_at=start + timedelta(seconds=0.5),
            pods_scheduled_at=start + timedelta(seconds=1.5),
            volumes_bound_at=start + timedelta(seconds=3),
            ready_at=start + timedelta(seconds=4),
        )
    warm = AllocationFactory.create(
        name="warm", strategy=Strategy.WARMPOOL, warm_pool="profile-coder", replicas=2
    )
    Allocation.objects.filter(pk=warm.pk).update(requested_at=now - timedelta(minutes=5))
    for action, replicas in (("warmpool.create", 1), ("warmpool.scale", [1, 3])):
        audit_record(
            actor="system:warm-pools",
            action=action,
            target_type="warm_pool",
            target="default/profile-coder",
            payload={"replicas": replicas},
        )
    for waited in (10, 200):
        decided = ApprovalRequestFactory.create(
            status=Status.APPROVED, decided_at=now, decided_by="user:ada"
        )
        ApprovalRequest.objects.filter(pk=decided.pk).update(
            created_at=now - timedelta(seconds=waited)
        )
    return AllocationFactory.create(name="coming", phase=Phase.PROVISIONING)


def test_the_plots_are_drawn_from_the_data_and_follow_it_live(
    service: None,
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    live_page: Callable[..., Any],
    screenshot: Callable[..., Any],
) -> None:
    coming = history()
    make_user("vic", "viewer")
    login(page, "vic")
    page.set_viewport_size({"width": 1280, "height": 900})
    live_page(page, "/")
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart}[data-drawn=true]")

    phases = drawn(page, "chart-time-to-phase")
    assert phases["labels"][:4] == ["≤ 1 s", "≤ 2 s", "≤ 5 s", "≤ 10 s"]
    assert [phases["series"][name][:4] for name in phases["series"]] == [
        [3, 0, 0, 0],  # objects created
        [0, 0, 3, 0],  # volumes bound
        [0, 3, 0, 0],  # Pods scheduled
        [0, 0, 3, 0],  # ready
    ]
    assert list(phases["series"]) == ["objects created", "volumes bound", "Pods scheduled", "ready"]
    over_time = drawn(page, "chart-phases-over-time")
    assert len(over_time["labels"]) == 60
    # Now: the three ready, and "warm" and "coming" provisioning.
    assert (over_time["series"]["ready"][-1], over_time["series"]["provisioning"][-1]) == (3, 2)
    warm = drawn(page, "chart-warm-pools")
    assert warm["series"]["default/profile-coder size"][-1] == 3
    assert sum(warm["series"]["default/profile-coder claims/min"]) == 2
    decisions = drawn(page, "chart-decision-time")
    assert decisions["series"]["decisions"][:3] == [0, 1, 0]  # 10 s: "≤ 15 s"
    assert decisions["series"]["decisions"][5] == 1  # 200 s: "≤ 300 s"
    screenshot(page, "overview-plots")

    # A change anywhere reaches the plots without a reload.
    allocation_observe_ready(allocation_id=coming.pk, ready=1)

    page.wait_for_function(
        """() => {
            const series = window.Charts.drawn["chart-phases-over-time"].data.datasets;
            const ready = series.find((d) => d.label === "ready").data;
            return ready[ready.length - 1] === 4;
        }"""
    )
    assert drawn(page, "chart-phases-over-time")["series"]["provisioning"][-1] == 1


def test_no_page_has_a_serious_accessibility_problem(
    service: None,
    page: Page,
    make_user: Callable[..., Any],
    login: Callable[..., Any],
    web_server: str,
    accessibility_problems: Callable[[Any], list[str]],
) -> None:
    page.goto(f"{web_server}/login/")
    found = {"/login/": accessibility_problems(page)}
    profile_save(
        name="data-agent",
        values={"source": "builtin", "image": "busybox:1.36"},
        actor="user:test",
        create=True,
    )
    coming = history()
    pending = ApprovalRequestFactory.create()
    make_user("ada", "admin")
    login(page, "ada")
    for path in (
        "/",
        "/allocations/",
        "/allocations/new/",
        f"/allocations/{coming.pk}/",
        "/approvals/",
        f"/approvals/{pending.pk}/",
        "/approvals/analytics/",
        "/notifications/",
        "/profiles/",
        "/profiles/new/",
        "/profiles/data-agent/",
        "/profiles/data-agent/edit/",
        "/audit/",
        "/cluster/",
        "/clients/",
        "/users/",
    ):
        page.goto(f"{web_server}{path}")
        page.wait_for_load_state("networkidle")
        found[path] = accessibility_problems(page)
    assert {path: problems for path, problems in found.items() if problems} == {}

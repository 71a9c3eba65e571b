"""The usage page's and CSV's period (issue 45: any other ``days`` was a week, with a 200)."""

from __future__ import annotations

import pytest

from contextsvc.core.users import ensure_role_groups
from frontend.tests.support import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/usage/", "/usage.csv"])
@pytest.mark.parametrize("days", ["abc", "-1", "99999", "0", "7.0", ""])
def test_a_period_other_than_1_7_or_30_days_is_refused(path: str, days: str) -> None:
    ensure_role_groups()

    answer = client_for("viewer").get(f"{path}?days={days}")

    assert (answer.status_code, answer["Content-Type"], answer.content.decode()) == (
        400,
        "text/plain; charset=utf-8",
        f"Bad request: days must be one of 1, 7, 30 (not {days!r})",
    )


@pytest.mark.parametrize(("days", "file_name"), [("1", "usage-1d.csv"), (None, "usage-7d.csv")])
def test_the_periods_offered_are_served(days: str | None, file_name: str) -> None:
    ensure_role_groups()
    query = f"?days={days}" if days else ""

    viewer = client_for("viewer")
    page = viewer.get(f"/usage/{query}")
    exported = viewer.get(f"/usage.csv{query}")

    assert (page.status_code, exported.status_code) == (200, 200)
    assert exported["Content-Disposition"] == f'attachment; filename="{file_name}"'

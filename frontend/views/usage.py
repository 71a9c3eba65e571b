"""The Usage page: sandbox-hours, suspended hours, storage GiB-hours and approvals decided
by team and profile over a period, with a plot of sandbox-hours per hour by team, and the
same hours as CSV. A person who is not an admin sees their own team's."""

from __future__ import annotations

import csv
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from contextsvc.core.teams import reach_of
from frontend.access import viewer_required
from usage import selectors
from usage.services import HOUR, hour_of

PERIODS = {"1": 1, "7": 7, "30": 30}  # days
DEFAULT_PERIOD = "7"
CSV_COLUMNS = (
    "hour",
    "team",
    "profile",
    "sandbox_seconds",
    "suspended_seconds",
    "storage_gib_hours",
    "approvals_decided",
)


def _period(request: HttpRequest) -> tuple[str, datetime]:
    """The period asked for; any other ``days`` is refused (a script reading the CSV must
    not get a week's hours for a period it mistyped)."""
    days = request.GET.get("days", DEFAULT_PERIOD)
    if days not in PERIODS:
        raise BadRequest(f"days must be one of {', '.join(PERIODS)} (not {days!r})")
    return days, hour_of(timezone.now() - timedelta(days=PERIODS[days]))


def usage_plot(hours: list[dict[str, Any]], since: datetime, until: datetime) -> dict[str, Any]:
    """Sandbox-hours per hour, one series per team, every hour of the period labelled."""
    labels: list[datetime] = []
    moment = since
    while moment <= until:
        labels.append(moment)
        moment += HOUR
    index = {moment: i for i, moment in enumerate(labels)}
    series: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(labels))
    for row in hours:
        if row["hour"] in index:
            series[row["team__name"]][index[row["hour"]]] += row["sandbox_seconds"] / 3600
    return {
        "labels": [moment.strftime("%m-%d %H:00") for moment in labels],
        "series": {team: [round(v, 3) for v in values] for team, values in sorted(series.items())},
    }


@viewer_required
def usage_page(request: HttpRequest) -> HttpResponse:
    days, since = _period(request)
    reach = reach_of(request.user)
    totals = selectors.usage_totals(reach=reach, since=since)
    return render(
        request,
        "frontend/usage.html",
        {
            "days": days,
            "periods": PERIODS,
            "rows": [
                {
                    "team": row.team,
                    "profile": row.profile or "(built-in runtime)",
                    "sandbox_hours": row.sandbox_seconds / 3600,
                    "suspended_hours": row.suspended_seconds / 3600,
                    "storage_gib_hours": row.storage_gib_hours,
                    "approvals_decided": row.approvals_decided,
                }
                for row in totals
            ],
            "plot": usage_plot(
                selectors.usage_hours(reach=reach, since=since), since, hour_of(timezone.now())
            ),
        },
    )


@viewer_required
def usage_csv(request: HttpRequest) -> HttpResponse:
    days, since = _period(request)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="usage-{days}d.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for row in selectors.usage_hours(reach=reach_of(request.user), since=since):
        writer.writerow(
            [
                row["hour"].isoformat().replace("+00:00", "Z"),
                row["team__name"],
                row["profile"],
                # Written whole (the shortest text that reads back as the same number).
                row["sandbox_seconds"],
                row["suspended_seconds"],
                row["storage_gib_hours"],
                row["approvals_decided"],
            ]
        )
    return response

"""Usage in ``/metrics``: counters by team and profile, from the hours the meter wrote (the
current hour's as far as it has gone)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily

from contextsvc.core.teams import EVERY_TEAM
from usage import selectors

SERIES = (
    ("sandbox_seconds", "contextsvc_usage_sandbox_seconds", "Sandbox-seconds running."),
    (
        "suspended_seconds",
        "contextsvc_usage_suspended_sandbox_seconds",
        "Sandbox-seconds suspended (volumes kept, no Pod).",
    ),
    ("storage_gib_hours", "contextsvc_usage_storage_gib_hours", "Requested storage, GiB-hours."),
    ("approvals_decided", "contextsvc_usage_approvals_decided", "Approval requests decided."),
)


class UsageCollector:
    def collect(self) -> Iterator[Any]:
        totals = selectors.usage_totals(reach=EVERY_TEAM)
        for field, name, documentation in SERIES:
            family = CounterMetricFamily(name, documentation, labels=["team", "profile"])
            for row in totals:
                family.add_metric([row.team, row.profile], float(getattr(row, field)))
            yield family

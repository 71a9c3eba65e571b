"""Retention against the real database: released allocations and finished approval requests
past their policy are removed in batches with what hangs off them, each batch audited, and
every counter and histogram of /metrics (and the analytics page's all-time counts) reads the
same after a removal as before it."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from allocations.models import Allocation, AllocationEvent, Phase, Strategy
from allocations.selectors import retention_kept as allocations_kept
from allocations.services.retention import (
    RETENTION_ACTION,
    allocations_remove_released,
    allocations_retention,
)
from allocations.tests.factories import AllocationFactory
from approvals import selectors as approvals
from approvals.models import (
    ApprovalRequest,
    ApprovalSignoff,
    Delivery,
    OperationRun,
    RunOutcome,
    Status,
)
from approvals.services.retention import RETENTION_ACTION as APPROVAL_RETENTION
from approvals.services.retention import approvals_retention
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.models import AuditEntry
from contextsvc.core.retention import retention_kept as audit_kept
from contextsvc.core.services import SERVICE_ACTOR
from tests.support.api import issue_token
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db

# What retention itself changes in /metrics: the rest must read the same after a removal.
RETENTION_SERIES = ("contextsvc_rows_kept", "contextsvc_retention_removed")


@pytest.fixture
def scrape() -> Any:
    reader = issue_token("prometheus", ["read"])

    def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        response = Client().get("/metrics", headers={"Authorization": f"Bearer {reader}"})
        assert response.status_code == 200
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.content.decode())
            for s in family.samples
        }

    return samples


def counted(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[Any, float]:
    return {key: value for key, value in samples.items() if not key[0].startswith(RETENTION_SERIES)}


def released(name: str, *, days_ago: float, took: float = 4, **fields: Any) -> Allocation:
    """A released allocation that became ready ``took`` seconds after it was asked for."""
    released_at = timezone.now() - timedelta(days=days_ago)
    requested_at = released_at - timedelta(hours=1)
    row = AllocationFactory.create(name=name, namespace="team1")
    Allocation.objects.filter(pk=row.pk).update(
        phase=Phase.RELEASED,
        requested_at=requested_at,
        provisioned_at=requested_at + timedelta(seconds=1),
        ready_at=requested_at + timedelta(seconds=took),
        release_requested_at=released_at - timedelta(seconds=5),
        released_at=released_at,
        **fields,
    )
    return Allocation.objects.get(pk=row.pk)


def event(allocation: Allocation, kind: str, **data: Any) -> None:
    AllocationEvent.objects.create(allocation=allocation, kind=kind, message=kind, data=data)


def retention_entries(action: str) -> list[dict[str, Any]]:
    return [
        entry.payload
        for entry in AuditEntry.objects.filter(action=action, actor=SERVICE_ACTOR).order_by("id")
    ]


def test_released_allocations_past_the_policy_go_with_their_timelines_and_every_counter_stays(
    settings: Any, scrape: Any
) -> None:
    settings.CS_RETENTION_RELEASED_DAYS = 30
    settings.CS_RETENTION_BATCH = 2
    oldest = released("oldest", days_ago=40)
    event(oldest, AllocationEvent.Kind.RETRY)
    event(oldest, AllocationEvent.Kind.FAILED, reason="Quota")
    older = released("older", days_ago=35, took=40)
    event(older, AllocationEvent.Kind.FAILED, reason="Quota")
    warm = released(
        "warm",
        days_ago=31,
        strategy=Strategy.WARMPOOL,
        warm_pool="hot",
        claims_bound_at=timezone.now() - timedelta(days=32),
        warm_claims=1,
        cold_claims=0,
    )
    event(warm, AllocationEvent.Kind.RETRY)
    recent = released("recent", days_ago=5)
    event(recent, AllocationEvent.Kind.FAILED, reason="Quota")
    # Old, but never released: retention only removes what is history.
    live = AllocationFactory.create(name="live", namespace="team1", phase=Phase.READY)
    Allocation.objects.filter(pk=live.pk).update(requested_at=timezone.now() - timedelta(days=60))
    AllocationFactory.create(name="releasing", namespace="team1", phase=Phase.RELEASING)
    before = scrape()

    removed = allocations_retention()

    after = scrape()
    assert removed == 3
    assert sorted(Allocation.objects.values_list("name", flat=True)) == [
        "live",
        "recent",
        "releasing",
    ]
    assert list(AllocationEvent.objects.values_list("allocation__name", "data")) == [
        ("recent", {"reason": "Quota"})
    ]
    assert counted(after) == counted(before)
    assert before[("contextsvc_reconcile_errors_total", (("reason", "Quota"),))] == 3
    assert before[("contextsvc_reconcile_errors_total", (("reason", "transient"),))] == 2
    claims = (("namespace", "team1"), ("origin", "warm"), ("pool", "hot"))
    assert before[("contextsvc_warm_pool_claims_total", claims)] == 1
    rows = "contextsvc_rows_kept"
    assert after[(rows, (("table", "allocations.Allocation"),))] == 3
    assert before[(rows, (("table", "allocations.Allocation"),))] == 6
    assert after[(rows, (("table", "allocations.AllocationEvent"),))] == 1
    gone = "contextsvc_retention_removed_total"
    assert after[(gone, (("table", "allocations.Allocation"),))] == 3
    assert after[(gone, (("table", "allocations.AllocationEvent"),))] == 4
    payloads = retention_entries(RETENTION_ACTION)
    assert [(p["removed"], p["allocations"]) for p in payloads] == [
        (2, ["team1/oldest", "team1/older"]),
        (1, ["team1/warm"]),
    ]
    assert oldest.released_at is not None
    assert warm.released_at is not None
    assert payloads[0]["oldestReleasedAt"] == oldest.released_at.isoformat()
    assert payloads[1]["newestReleasedAt"] == warm.released_at.isoformat()

    # Idempotent: nothing left past the policy, nothing changes.
    with kept():
        assert allocations_retention() == 0
    assert counted(scrape()) == counted(before)


def test_kept_for_ever_when_the_policy_is_zero(settings: Any) -> None:
    settings.CS_RETENTION_RELEASED_DAYS = 0
    settings.CS_RETENTION_APPROVALS_DAYS = 0
    released("ancient", days_ago=3650)
    ApprovalRequestFactory.create(
        status=Status.DENIED, decided_at=timezone.now() - timedelta(days=3650)
    )

    with kept():
        assert allocations_retention() == 0
        assert approvals_retention() == 0


def finished(status: str, *, days_ago: float, took: float = 30, **fields: Any) -> ApprovalRequest:
    decided_at = timezone.now() - timedelta(days=days_ago)
    row = ApprovalRequestFactory.create(status=status, decided_by="user:ann", **fields)
    ApprovalRequest.objects.filter(pk=row.pk).update(
        created_at=decided_at - timedelta(seconds=took), decided_at=decided_at
    )
    return ApprovalRequest.objects.get(pk=row.pk)


def run_of(request: ApprovalRequest, refused: list[dict[str, str]]) -> OperationRun:
    return OperationRun.objects.create(
        request=request,
        context_id=request.context_id,
        agent_type=request.agent_type,
        command="pip install pandas",
        outcome=RunOutcome.EXITED,
        exit_status=0,
        duration_ms=12,
        stdout_bytes=0,
        stderr_bytes=0,
        truncated=False,
        refused_effects=refused,
        reported_by="api:executor",
    )


def test_finished_requests_past_the_policy_go_with_their_runs_and_every_count_stays(
    settings: Any, scrape: Any
) -> None:
    settings.CS_RETENTION_APPROVALS_DAYS = 90
    approved = finished("approved", days_ago=100, escalated_at=timezone.now() - timedelta(days=101))
    run_of(approved, [{"action": "read", "path": "/etc/shadow", "error": "EACCES"}])
    ApprovalSignoff.objects.create(request=approved, actor="user:ann")
    message = {"event": "approval.created", "medium": "webhook", "target": "ops", "address": "x",
               "message": {}, "next_attempt_at": timezone.now()}  # fmt: skip
    Delivery.objects.create(request=approved, status=Delivery.Status.DELIVERED, **message)
    # Older still, but its message is still being tried: it stays until that ends.
    sending = finished("denied", days_ago=120)
    Delivery.objects.create(request=sending, **message)
    denied = finished("denied", days_ago=95, took=400)
    expired = finished("expired", days_ago=91)
    recent = finished("approved", days_ago=10)
    run_of(recent, [{"action": "write", "path": "/x", "error": "EROFS"}])
    pending = ApprovalRequestFactory.create()
    ApprovalRequest.objects.filter(pk=pending.pk).update(
        created_at=timezone.now() - timedelta(days=200)
    )
    # The request's own audit entry: the audit log is never trimmed.
    AuditEntry.objects.create(actor="user:ann", action="approval.approve", target_type="approval",
                              target=str(approved.pk))  # fmt: skip
    before, outcomes, escalations = (
        scrape(),
        approvals.outcome_counts_all(),
        approvals.escalation_counts_all(),
    )

    removed = approvals_retention()

    after = scrape()
    assert removed == 3
    assert set(ApprovalRequest.objects.values_list("pk", flat=True)) == {
        recent.pk,
        pending.pk,
        sending.pk,
    }
    assert list(OperationRun.objects.values_list("request_id", flat=True)) == [recent.pk]
    assert ApprovalSignoff.objects.count() == 0
    assert list(Delivery.objects.values_list("request_id", flat=True)) == [sending.pk]
    assert counted(after) == counted(before)
    assert (
        approvals.outcome_counts_all()
        == outcomes
        == [
            ("data-agent", "approved", 2),
            ("data-agent", "denied", 2),
            ("data-agent", "expired", 1),
        ]
    )
    assert approvals.escalation_counts_all() == escalations == [("data-agent", 1)]
    assert approvals.outcome_counts() == [
        ("data-agent", "approved", 1),
        ("data-agent", "denied", 1),
    ]
    refused = "contextsvc_executor_refused_effects_total"
    program = ("reported_by", "program")
    assert after[(refused, (("action", "read"), ("agent_type", "data-agent"), program))] == 1
    assert after[(refused, (("action", "write"), ("agent_type", "data-agent"), program))] == 1
    latency = "contextsvc_approval_decision_latency_seconds"
    assert (after[(f"{latency}_count", ())], after[(f"{latency}_sum", ())]) == (4, 490)
    deliveries = "contextsvc_notification_deliveries"
    assert after[(deliveries, (("medium", "webhook"), ("status", "delivered")))] == 1
    assert after[(deliveries, (("medium", "webhook"), ("status", "pending")))] == 1
    gone = "contextsvc_retention_removed_total"
    assert {
        table: after[(gone, (("table", table),))]
        for table in ("approvals.ApprovalRequest", "approvals.OperationRun",
                      "approvals.ApprovalSignoff", "approvals.Delivery")
    } == {"approvals.ApprovalRequest": 3, "approvals.OperationRun": 1,
          "approvals.ApprovalSignoff": 1, "approvals.Delivery": 1}  # fmt: skip
    assert (
        AuditEntry.objects.filter(action="approval.approve", target=str(approved.pk)).count() == 1
    )
    [payload] = retention_entries(APPROVAL_RETENTION)
    assert (payload["removed"], payload["runsRemoved"], set(payload["requests"])) == (
        3,
        1,
        {str(approved.pk), str(denied.pk), str(expired.pk)},
    )


@pytest.mark.django_db(transaction=True)
def test_two_removals_at_once_remove_and_count_each_row_once(scrape: Any) -> None:
    for index in range(12):
        released(f"gone-{index}", days_ago=40, took=index + 1)
    before = scrape()
    cutoff: datetime = timezone.now() - timedelta(days=30)
    start = threading.Barrier(2)
    removed: list[int] = []

    def remove() -> None:
        try:
            start.wait()
            while done := allocations_remove_released(cutoff, 2):
                removed.append(done)
        finally:
            connection.close()

    threads = [threading.Thread(target=remove) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(removed) == 12
    assert Allocation.objects.count() == 0
    assert counted(scrape()) == counted(before)
    assert sum(p["removed"] for p in retention_entries(RETENTION_ACTION)) == 12


def test_every_table_retention_looks_after_is_counted_from_zero(scrape: Any) -> None:
    """Issue 45: before the first removal the counter had no series at all, while the
    Retention card showed 0 per table; it now says the same as the card."""
    tables = [*allocations_kept(), *approvals.retention_kept(), *audit_kept()]
    removed = {
        dict(labels)["table"]: value
        for (name, labels), value in scrape().items()
        if name == "contextsvc_retention_removed_total"
    }

    assert removed == {table.table: 0 for table in tables}
    assert len(removed) == len(tables) >= 3

"""The meter against lifecycles whose every timestamp is known: each hour's sandbox-seconds,
suspended seconds, storage GiB-hours and approvals decided are exactly what the timestamps
say, computing again changes nothing, and an hour once closed stays as it was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.tests.factories import AllocationFactory
from approvals.models import Status
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.models import Team
from usage.models import UsageHour, UsageMeter
from usage.services import BACKFILL, HOUR, HOURS_PER_RUN, usage_meter

pytestmark = pytest.mark.django_db

GIB = 1024**3
DAY = datetime(2026, 11, 20, tzinfo=UTC)


def at(hour: int, minute: int = 0) -> datetime:
    return DAY + timedelta(hours=hour, minutes=minute)


def event(allocation: Allocation, kind: str, moment: datetime, **data: object) -> None:
    made = AllocationEvent.objects.create(allocation=allocation, kind=kind, data=data)
    # ``at`` is the moment a row is written: set as the lifecycle had it.
    AllocationEvent.objects.filter(pk=made.pk).update(at=moment)


def rows() -> list[tuple[object, ...]]:
    return list(
        UsageHour.objects.order_by("hour", "team__name", "profile").values_list(
            "hour",
            "team__name",
            "profile",
            "sandbox_seconds",
            "suspended_seconds",
            "storage_gib_hours",
            "approvals_decided",
        )
    )


def test_each_hour_is_what_the_lifecycle_timestamps_say() -> None:
    research, billing = Team.objects.create(name="research"), Team.objects.create(name="billing")
    # 10:20 objects made with 2 replicas (1Gi each); 10:50 scaled to 3; suspended 11:10 to
    # 11:40; released 12:30.
    pool = AllocationFactory.create(
        team=research,
        profile_name="data-agent",
        replicas=3,
        requested_storage=3 * GIB,
        phase=Phase.RELEASED,
        provisioned_at=at(10, 20),
        released_at=at(12, 30),
    )
    event(
        pool, AllocationEvent.Kind.SCALED, at(10, 50), replicas=[2, 3], storage=[2 * GIB, 3 * GIB]
    )
    event(pool, AllocationEvent.Kind.SUSPENDED, at(11, 10))
    event(pool, AllocationEvent.Kind.RESUMED, at(11, 40))
    # Another team's pool, still live at the end: 1 replica, nothing requested (a warm
    # pool's claim), from 12:45.
    AllocationFactory.create(
        team=billing, replicas=1, requested_storage=0, phase=Phase.READY, provisioned_at=at(12, 45)
    )
    # A pool whose objects were never made counts for nothing.
    AllocationFactory.create(team=research, phase=Phase.FAILED, provisioned_at=None)
    for status, decided in (
        (Status.APPROVED, at(11, 5)),
        (Status.DENIED, at(12, 10)),
        (Status.EXPIRED, at(12, 20)),  # not decided by a person
    ):
        ApprovalRequestFactory.create(team=research, status=status, decided_at=decided)
    ApprovalRequestFactory.create(
        team=billing, agent_type="coder", status=Status.APPROVED, decided_at=at(11, 30)
    )

    assert usage_meter(now=at(13, 5)) == 4  # 10:00, 11:00, 12:00 (closed), 13:00 (so far)

    expected = [
        # 10:20–10:50 2 × 1,800 s, 10:50–11:00 3 × 600 s; 2Gi × ½ h + 3Gi × ⅙ h.
        (at(10), "research", "data-agent", 5400.0, 0.0, 1.5, 0),
        (at(11), "billing", "coder", 0.0, 0.0, 0.0, 1),
        # 3 × (600 + 1,200) s running, 3 × 1,800 s suspended; 3Gi × 1 h; one approval.
        (at(11), "research", "data-agent", 5400.0, 5400.0, 3.0, 1),
        (at(12), "billing", "", 900.0, 0.0, 0.0, 0),
        (at(12), "research", "data-agent", 5400.0, 0.0, 1.5, 1),
        (at(13), "billing", "", 300.0, 0.0, 0.0, 0),
    ]
    assert rows() == expected
    assert UsageMeter.objects.get().closed_until == at(13)

    # Computed again at the same moment: the same rows; later: only the open hour grows.
    assert usage_meter(now=at(13, 5)) == 1
    assert rows() == expected
    assert usage_meter(now=at(13, 35)) == 1
    assert rows() == [*expected[:-1], (at(13), "billing", "", 2100.0, 0.0, 0.0, 0)]


def test_a_closed_hour_is_final_and_a_live_pool_counts_up_to_now() -> None:
    team = Team.objects.create(name="solo")
    AllocationFactory.create(
        team=team, replicas=2, requested_storage=GIB, phase=Phase.READY, provisioned_at=at(9, 30)
    )
    assert usage_meter(now=at(9, 45)) == 1
    assert rows() == [(at(9), "solo", "", 1800.0, 0.0, 0.25, 0)]
    assert UsageMeter.objects.count() == 0  # nothing closed yet

    assert usage_meter(now=at(10, 3)) == 2
    assert rows() == [
        (at(9), "solo", "", 3600.0, 0.0, 0.5, 0),
        (at(10), "solo", "", 360.0, 0.0, 0.05, 0),
    ]
    assert UsageMeter.objects.get().closed_until == at(10)
    # A closed hour is not computed again, even if a row it counted changed since.
    UsageHour.objects.filter(hour=at(9)).update(sandbox_seconds=1.0)
    usage_meter(now=at(10, 4))
    assert rows()[0] == (at(9), "solo", "", 1.0, 0.0, 0.5, 0)


def test_a_first_run_backfills_in_steps_and_the_current_hour_is_there_at_once() -> None:
    team = Team.objects.create(name="old")
    now = at(12, 30)
    AllocationFactory.create(
        team=team, replicas=1, phase=Phase.READY, provisioned_at=now - timedelta(days=40)
    )
    # 31 days back at most; 48 of those hours closed per run, and the current one besides.
    assert usage_meter(now=now) == HOURS_PER_RUN + 1
    first = at(12) - BACKFILL
    assert UsageMeter.objects.get().closed_until == first + HOURS_PER_RUN * HOUR
    assert UsageHour.objects.get(hour=at(12)).sandbox_seconds == 1800.0
    assert UsageHour.objects.get(hour=first).sandbox_seconds == 3600.0
    assert UsageHour.objects.count() == HOURS_PER_RUN + 1

"""Usage by team and profile, per UTC hour, computed from the lifecycles themselves.

An allocation uses ``replicas`` sandboxes from the moment its objects were created
(``provisioned_at``) until they were gone (``released_at``, or the end of a rollback), and
the storage its PVCs request over the same time; a stretch between ``suspended`` and
``resumed`` is counted apart (its Pods are gone, its volumes are not). A scale changes both
from its own moment (the ``scaled`` event records the replicas and the storage before and
after). Approvals decided are the requests a person approved or denied in the hour.

An hour's rows are computed whole from every lifecycle that overlaps it, so computing it
again gives the same rows: the meter (beat) recomputes the current hour on every run and
closes an hour once it has ended (``UsageMeter``), after which it is final. Nothing is
sampled, so the sums equal what the timestamps say (usage/tests/)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from allocations.models import Allocation, AllocationEvent
from approvals.models import ApprovalRequest, Status
from usage.models import UsageHour, UsageMeter

HOUR = timedelta(hours=1)
GIB = 1024**3
# An hour is closed this long after its end: a row's timestamp is the moment it was
# written, so what happened in an hour has been committed by then.
CLOSE_AFTER = timedelta(minutes=2)
# How far back a first run looks (older lifecycles are history, and retention may have
# removed them).
BACKFILL = timedelta(days=31)
# Hours closed per run at most (a first run's backfill is spread over several runs).
HOURS_PER_RUN = 48
# The events that change what an allocation uses.
CHANGES = (
    AllocationEvent.Kind.SCALED,
    AllocationEvent.Kind.SUSPENDED,
    AllocationEvent.Kind.RESUMED,
    AllocationEvent.Kind.ROLLED_BACK,
)
DECIDED = (Status.APPROVED, Status.DENIED)


@dataclass(frozen=True)
class Stretch:
    """A stretch of an allocation's life in one state."""

    start: datetime
    end: datetime
    replicas: int
    storage: int  # bytes requested
    suspended: bool


def stretches(
    allocation: Allocation, events: Iterable[AllocationEvent], *, now: datetime
) -> list[Stretch]:
    """The allocation's life from its objects' creation until they were gone (or ``now``),
    cut where a scale, a suspend or a resume changed what it used."""
    start = allocation.provisioned_at
    if start is None:
        return []  # its objects were never made
    changes = sorted((e for e in events if e.kind in CHANGES), key=lambda e: (e.at, e.pk or 0))
    end = allocation.released_at or now
    for event in changes:
        if event.kind == AllocationEvent.Kind.ROLLED_BACK:
            end = min(end, event.at)
    scaled = [e for e in changes if e.kind == AllocationEvent.Kind.SCALED and "replicas" in e.data]
    # The state it started in: what the first scale changed from, else what it still is.
    replicas = int(scaled[0].data["replicas"][0]) if scaled else allocation.replicas
    storage = int(scaled[0].data["storage"][0]) if scaled else allocation.requested_storage
    suspended = False
    found: list[Stretch] = []
    at = start
    for event in changes:
        moment = min(max(event.at, start), end)
        if moment > at:
            found.append(Stretch(at, moment, replicas, storage, suspended))
            at = moment
        if event.kind == AllocationEvent.Kind.SCALED and "replicas" in event.data:
            replicas = int(event.data["replicas"][1])
            storage = int(event.data["storage"][1])
        elif event.kind == AllocationEvent.Kind.SUSPENDED:
            suspended = True
        elif event.kind == AllocationEvent.Kind.RESUMED:
            suspended = False
    if end > at:
        found.append(Stretch(at, end, replicas, storage, suspended))
    return found


@dataclass
class Use:
    sandbox_seconds: float = 0.0
    suspended_seconds: float = 0.0
    storage_gib_hours: float = 0.0
    approvals_decided: int = 0

    def add(self, stretch: Stretch, start: datetime, end: datetime) -> None:
        """What ``stretch`` used between ``start`` and ``end``."""
        seconds = (min(stretch.end, end) - max(stretch.start, start)).total_seconds()
        if seconds <= 0:
            return
        if stretch.suspended:
            self.suspended_seconds += stretch.replicas * seconds
        else:
            self.sandbox_seconds += stretch.replicas * seconds
        self.storage_gib_hours += stretch.storage / GIB * seconds / 3600


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def usage_of_hour(hour: datetime, *, now: datetime) -> dict[tuple[int, str], Use]:
    """Every team's and profile's use in the hour from ``hour`` (up to ``now`` if it has
    not ended)."""
    end = min(hour + HOUR, now)
    found: dict[tuple[int | None, str], Use] = defaultdict(Use)
    alive = (
        Allocation.objects.filter(provisioned_at__lt=end)
        .filter(Q(released_at__isnull=True) | Q(released_at__gt=hour))
        .prefetch_related("events")
    )
    for allocation in alive:
        use = found[allocation.team_id, allocation.profile_name]
        for stretch in stretches(allocation, allocation.events.all(), now=now):
            use.add(stretch, hour, end)
    decided = (
        ApprovalRequest.objects.filter(status__in=DECIDED, decided_at__gte=hour, decided_at__lt=end)
        .values("team_id", "agent_type")
        .annotate(count=Count("pk"))
    )
    for row in decided:
        found[row["team_id"], row["agent_type"]].approvals_decided += row["count"]
    # (Every row has a team: the key is never None, whatever its type says.)
    return {
        (team, profile): use
        for (team, profile), use in found.items()
        if team is not None and _used(use)
    }


def _used(use: Use) -> bool:
    return bool(use.sandbox_seconds or use.suspended_seconds or use.storage_gib_hours) or bool(
        use.approvals_decided
    )


def _first_hour(now: datetime) -> datetime:
    """Where the meter goes on from: its first hour not closed, or (a first run) the hour of
    the first lifecycle within BACKFILL."""
    meter = UsageMeter.objects.first()
    if meter is not None:
        return meter.closed_until
    earliest = [
        Allocation.objects.aggregate(first=Min("provisioned_at"))["first"],
        ApprovalRequest.objects.aggregate(first=Min("decided_at"))["first"],
    ]
    first = min([moment for moment in earliest if moment is not None], default=now)
    return hour_of(max(first, now - BACKFILL))


def usage_meter(*, now: datetime | None = None) -> int:
    """Compute the hours that can be closed, from the first one not closed yet (at most
    HOURS_PER_RUN: a first run's backfill is spread over several), and the hours still open
    (the current one, and the last one in its first minutes) on every run, so that they are
    current even while a backfill goes on. Each hour is written whole, in a transaction of
    its own. Returns how many hours were written."""
    now = now or timezone.now()
    first = _first_hour(now)
    hours: list[datetime] = []
    hour = first
    while hour + HOUR + CLOSE_AFTER <= now and len(hours) < HOURS_PER_RUN:
        hours.append(hour)
        hour += HOUR
    current = hour_of(now)
    for still_open in (current - HOUR, current):
        if still_open >= first and still_open + HOUR + CLOSE_AFTER > now:
            hours.append(still_open)
    for hour in hours:
        use = usage_of_hour(hour, now=now)
        with transaction.atomic():
            UsageHour.objects.filter(hour=hour).delete()
            UsageHour.objects.bulk_create(
                UsageHour(
                    team_id=team_id,
                    profile=profile,
                    hour=hour,
                    sandbox_seconds=found.sandbox_seconds,
                    suspended_seconds=found.suspended_seconds,
                    storage_gib_hours=found.storage_gib_hours,
                    approvals_decided=found.approvals_decided,
                )
                for (team_id, profile), found in sorted(use.items())
            )
            if hour + HOUR + CLOSE_AFTER <= now:
                UsageMeter.objects.update_or_create(pk=1, defaults={"closed_until": hour + HOUR})
    return len(hours)

"""What every write of an allocation shares: its timeline events, the live announcement
of its row (the dashboard's and ``?watch`` streams), and times written as the API writes
them. (The service's own actor in the audit log is ``contextsvc.core.services.SERVICE_ACTOR``.)"""

from __future__ import annotations

from typing import Any

from allocations.models import Allocation, AllocationEvent
from allocations.selectors import allocation_row
from contextsvc.infra import events


def announce(allocation: Allocation, event_type: str = "allocation.changed") -> None:
    events.publish(
        # The allocation's own group first: its callers waiting on ``?wait`` are there, and
        # the groups are sent to one after another.
        events.allocation_group(allocation.pk),
        events.ALLOCATIONS,
        events.team_group(events.ALLOCATIONS, allocation.team_id),
        event_type=event_type,
        data=allocation_row(allocation),
    )


def record_event(allocation: Allocation, kind: str, message: str = "", **data: Any) -> None:
    AllocationEvent.objects.create(allocation=allocation, kind=kind, message=message, data=data)


def iso_time(moment: Any) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None

"""What the watcher (from its caches) and the resync (from list calls) observe of an
allocation's objects, recorded: one decision for both (allocation_record_observed), the
ready count and the controller's report, the readiness milestones, and the resync's own
notes (surplus replicas, the fingerprint of what it found); and, for names no live
allocation holds, the leftovers the watcher sees (PoolPresence)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Q, TextField, Value, When
from django.db.models.functions import Least, Now
from django.utils import timezone

from allocations import queue
from allocations.models import (
    OBSERVED_PHASES,
    Allocation,
    AllocationEvent,
    Phase,
    PoolPresence,
    Strategy,
)
from allocations.observe import (
    MILESTONES,
    Milestones,
    Observation,
    PoolObjects,
    Seen,
    group_by_pool,
    milestones,
    observe,
)
from allocations.selectors import seen_of
from allocations.services.reconcile import (
    allocation_fail,
    locked_while_observed,
    reconcile_deadline,
)
from allocations.services.release import allocation_mark_released
from allocations.services.timeline import announce, record_event
from contextsvc.infra.queue import RetryLater
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import POD, PVC, SANDBOX, SANDBOX_CLAIM, ApiKind
from contextsvc.kube.objects.labels import pool_selector


class Recorded(StrEnum):
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    FAILED = "failed"
    RELEASED = "released"


def _changes_nothing(phase: str, seen: Seen, observation: Observation) -> bool:
    """True when recording ``observation`` over ``seen`` would write nothing: the UPDATE of
    allocation_observe_ready would match no row. Most watch events (a status timestamp, a
    condition of no consequence) are such, and skipping them skips the write's cost."""
    if observation.failure is not None:
        return False
    if observation.problem is not None:
        reported = (seen.reason, seen.message) == observation.problem
    else:
        reported = seen.reason == ""
    return (
        seen.ready_replicas == min(observation.ready, seen.replicas)
        and (seen.replicas <= observation.ready) == (phase == Phase.READY)
        and reported
    )


OBSERVE_RETRY_SECONDS = 2.0


def allocation_observe_now(allocation_id: int) -> Recorded | None:
    """Record one live allocation's objects as the API server holds them now (its watch
    cache, as the resync reads it): for a pool whose objects no event will bring up again
    (allocation_reconcile says when). None when it has moved on meanwhile."""
    allocation = Allocation.objects.filter(pk=allocation_id, phase__in=OBSERVED_PHASES).first()
    if allocation is None:
        return None
    namespace, selector = allocation.namespace, pool_selector(allocation.name)

    def listed(kind: ApiKind) -> list[dict[str, Any]]:
        return kube.list_objects(kind, namespace, selector, cached=True)

    try:
        found = group_by_pool(
            sandboxes=listed(SANDBOX),
            claims=listed(SANDBOX_CLAIM) if allocation.strategy == Strategy.WARMPOOL else (),
            pods=listed(POD),
            pvcs=listed(PVC),
        ).get((namespace, allocation.name), PoolObjects())
    except kube.KubeError as exc:
        if exc.transient:
            raise RetryLater(OBSERVE_RETRY_SECONDS) from exc
        raise
    return allocation_record_observed(
        allocation_id=allocation.pk,
        phase=allocation.phase,
        strategy=allocation.strategy,
        requested_at=allocation.requested_at,
        pool=found,
        seen=seen_of(allocation),
    )


def allocation_record_observed(
    *,
    allocation_id: int,
    phase: str,
    strategy: str,
    requested_at: Any,
    pool: PoolObjects,
    seen: Seen,
) -> Recorded:
    """The one decision the watcher (from its caches) and the resync (from list calls) make
    about an allocation's objects: a release finishes when nothing is left; a live
    allocation fails, or records its ready count and the controller's report
    (allocations/observe.py). Failed allocations are left to their rollback. ``seen`` is
    the row as read with ``phase``: an observation that changes nothing writes nothing (the
    write itself still checks the row as it is then); readiness phases reached for the first
    time are recorded with it."""
    if phase == Phase.RELEASING:
        released = pool.empty() and allocation_mark_released(allocation_id=allocation_id)
        return Recorded.RELEASED if released else Recorded.UNCHANGED
    if phase not in (Phase.REQUESTED, *OBSERVED_PHASES):
        return Recorded.UNCHANGED
    observation = observe(
        strategy, pool, requested_at=requested_at, now=timezone.now(), deadline=reconcile_deadline()
    )
    marks = (
        milestones(strategy, pool, seen, ready=observation.ready)
        if observation.failure is None
        else None
    )
    new_marks = marks if marks is not None and marks.reached - seen.noted else None
    if new_marks is None and _changes_nothing(phase, seen, observation):
        return Recorded.UNCHANGED
    # One transaction and one announcement: a claim bound and Ready in the same event is one
    # change. Announced with its milestone first, a caller waiting on ?wait woke to a row
    # not yet ready, read it, and waited again for the second.
    with transaction.atomic():
        noted = (
            allocation_note_milestones(allocation_id=allocation_id, milestones=new_marks)
            if new_marks is not None
            else None
        )
        changed = not _changes_nothing(phase, seen, observation) and allocation_observe(
            allocation_id=allocation_id, observation=observation
        )
        if noted is not None and not changed:
            announce(noted)
    if not changed:
        return Recorded.CHANGED if noted is not None else Recorded.UNCHANGED
    return Recorded.FAILED if observation.failure is not None else Recorded.CHANGED


# Each milestone's field, and the timeline's event for it.
MILESTONE_EVENTS = {
    "volumes_bound": AllocationEvent.Kind.VOLUMES_BOUND,
    "pods_scheduled": AllocationEvent.Kind.PODS_SCHEDULED,
    "claims_bound": AllocationEvent.Kind.CLAIMS_BOUND,
}


def allocation_note_milestones(*, allocation_id: int, milestones: Milestones) -> Allocation | None:
    """Record the readiness phases reached for the first time (each time stamped once, by
    whoever saw it first: the watcher or the resync), with a timeline event each; the row as
    written (None: nothing new). A warm-pool allocation's warm and cold counts are those of
    the moment its claims were all bound. The caller announces the change (with the
    observation it came with, allocation_record_observed)."""
    # Inside allocation_record_observed's transaction: no savepoint of its own.
    with transaction.atomic(savepoint=False):
        allocation = locked_while_observed(allocation_id)
        if allocation is None:
            return None
        now = timezone.now()
        new = [
            name
            for name in MILESTONES
            if name in milestones.reached and getattr(allocation, f"{name}_at") is None
        ]
        if not new:
            return None
        for name in new:
            setattr(allocation, f"{name}_at", now)
        fields = [f"{name}_at" for name in new]
        if "claims_bound" in new:
            allocation.warm_claims, allocation.cold_claims = milestones.warm, milestones.cold
            fields += ["warm_claims", "cold_claims"]
        allocation.save(update_fields=[*fields, "updated_at"])
        for name in new:
            seconds = (now - allocation.requested_at).total_seconds()
            data: dict[str, Any] = {"seconds": round(seconds, 3)}
            text = f"{MILESTONE_EVENTS[name].label} {seconds:.1f} s after the request"
            if name == "claims_bound":
                data |= {"warm": milestones.warm, "cold": milestones.cold}
                text += f" ({milestones.warm} warm, {milestones.cold} cold-started)"
            record_event(allocation, MILESTONE_EVENTS[name], text, **data)
    return allocation


def allocation_note_surplus(*, allocation_id: int) -> None:
    """The resync found more replicas than the row wants (a prune that never ran)."""
    Allocation.objects.filter(pk=allocation_id).update(prune_pending=True)
    queue.reconcile(allocation_id)


def allocation_note_resynced(*, allocation_id: int, fingerprint: str) -> None:
    """What the resync found this allocation's objects to be (bookkeeping of the resync's
    own, not a change of the allocation: no event, no audit entry)."""
    Allocation.objects.filter(pk=allocation_id).update(resync_fingerprint=fingerprint)


def allocation_observe(*, allocation_id: int, observation: Observation) -> bool:
    """Record what the watcher or the resync observed (allocations/observe.py): a failure,
    or the ready count and the controller's report on the rest. True when it changed."""
    if observation.failure is not None:
        reason, message = observation.failure
        return allocation_fail(allocation_id=allocation_id, reason=reason, message=message)
    return allocation_observe_ready(
        allocation_id=allocation_id, ready=observation.ready, problem=observation.problem
    )


def allocation_observe_ready(
    *, allocation_id: int, ready: int, problem: tuple[str, str] | None = None
) -> bool:
    """Record a ready-replica count and what the controller says about the replicas that
    are not ready (``problem``: reason, message): one UPDATE that also moves the phase
    between provisioning and ready. Returns whether anything changed (then it is
    announced). A problem is kept in ``reason`` and ``message`` while it lasts; messages of
    the reconciler's own retries (no reason) are left alone."""
    becomes_ready = Q(replicas__lte=ready)
    reason, message = problem if problem is not None else ("", "")
    reported = Q(reason=reason, message=message) if problem else Q(reason="")
    # While scaling down, the Sandboxes past the new count are still there (and ready)
    # until the prune removes them: never more ready than wanted ("3/1" on the timeline).
    counted = Least(Value(ready), F("replicas"))
    changed = (
        Allocation.objects.filter(pk=allocation_id, phase__in=(Phase.REQUESTED, *OBSERVED_PHASES))
        .filter(
            ~Q(ready_replicas=counted)
            | (becomes_ready & ~Q(phase=Phase.READY))
            | (~becomes_ready & Q(phase=Phase.READY))
            | ~reported
        )
        .update(
            ready_replicas=counted,
            phase=Case(
                When(becomes_ready, then=Value(Phase.READY)),
                When(phase=Phase.REQUESTED, then=Value(Phase.REQUESTED)),
                default=Value(Phase.PROVISIONING),
            ),
            ready_at=Case(
                When(becomes_ready & Q(ready_at__isnull=True), then=Now()), default=F("ready_at")
            ),
            reason=Value(reason[:64]) if problem else Value(""),
            message=(
                Value(message)
                if problem
                else Case(
                    When(~Q(reason=""), then=Value("")),
                    default=F("message"),
                    output_field=TextField(),
                )
            ),
            updated_at=Now(),
        )
    )
    if not changed:
        return False
    # Inside allocation_record_observed's transaction when called from it: no savepoint.
    with transaction.atomic(savepoint=False):
        allocation = Allocation.objects.get(pk=allocation_id)
        kind = (
            AllocationEvent.Kind.READY
            if allocation.phase == Phase.READY
            else AllocationEvent.Kind.REPLICAS
        )
        text = f"{allocation.ready_replicas}/{allocation.replicas} replicas ready"
        if problem:
            text += f"; {reason}: {message}"
        record_event(allocation, kind, text, ready=allocation.ready_replicas, reason=reason)
        announce(allocation)
    return True


def pool_presence_record(*, namespace: str, pool: str, leftovers: list[str]) -> None:
    """What the watcher sees of a pool that no live allocation has: its leftovers (the name
    stays taken while there are any), or nothing (the row goes)."""
    if leftovers:
        PoolPresence.objects.update_or_create(
            namespace=namespace, pool=pool, defaults={"objects_seen": leftovers}
        )
    else:
        PoolPresence.objects.filter(namespace=namespace, pool=pool).delete()


def pool_presence_reconcile(
    *, seen: dict[tuple[str, str], list[str]], owns: Callable[[tuple[str, str]], bool]
) -> None:
    """Once a watcher's caches are filled: the rows of the pools it records (``owns``) are
    what it sees now. Rows of pools whose leftovers went while no watcher ran are removed."""
    with transaction.atomic():
        for namespace, pool in PoolPresence.objects.values_list("namespace", "pool"):
            if owns((namespace, pool)) and (namespace, pool) not in seen:
                PoolPresence.objects.filter(namespace=namespace, pool=pool).delete()
        for (namespace, pool), leftovers in seen.items():
            pool_presence_record(namespace=namespace, pool=pool, leftovers=leftovers)

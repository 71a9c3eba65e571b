"""The reconcile: the cluster made to hold what a live allocation wants, with its
bookkeeping (objects applied, retries, the deadline), and the failure of an allocation that
cannot get there (or that the watcher or the resync sees fail)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from allocations import provisioning, queue
from allocations.models import (
    OBSERVED_PHASES,
    RECONCILED_PHASES,
    Allocation,
    AllocationEvent,
    Phase,
)
from allocations.services.timeline import announce, record_event
from contextsvc.core.services import SERVICE_ACTOR, audit_record
from contextsvc.infra import locks
from contextsvc.infra.queue import LOCK_BUSY_COUNTDOWN, Retry, RetryLater
from contextsvc.kube import client as kube

logger = logging.getLogger(__name__)


def reconcile_deadline() -> timedelta:
    """How long transient trouble may last before an allocation fails."""
    return timedelta(seconds=settings.CS_RECONCILE_DEADLINE_SECONDS)


# Why an allocation failed when somebody else's object holds one of its names.
NAME_COLLISION = "NameCollision"

# What a reconcile that failed the allocation returns.
FAILED = "failed"

# How soon a reconcile runs again when a wanted object's name is still held by one of ours
# being deleted (a Sandbox's deletion waits for its Pod).
WAITING_COUNTDOWN = 2.0


def allocation_reconcile(allocation_id: int, attempt: int = 0) -> str:
    """Make the cluster hold what a live allocation wants (provisioning.sync, idempotent:
    missing objects created, Sandboxes suspended or resumed, surplus replicas deleted).
    Transient trouble is retried until the reconcile deadline; past it, or for a permanent
    refusal, the allocation fails."""
    allocation = Allocation.objects.filter(pk=allocation_id, phase__in=RECONCILED_PHASES).first()
    if allocation is None:
        return "nothing to do"
    try:
        synced = provisioning.sync(allocation)
    except provisioning.NameCollision as exc:
        allocation_fail(
            allocation_id=allocation_id,
            reason=NAME_COLLISION,
            message=f'sandbox pool "{allocation.name}" already exists: {exc}',
        )
        return FAILED
    except kube.KubeError as exc:
        later = Retry(deadline=reconcile_deadline()).again(
            transient=exc.transient, attempt=attempt, since=allocation.requested_at
        )
        if later is not None:
            allocation_note_retry(allocation_id=allocation_id, message=exc.message)
            raise later from exc
        reason = exc.reason if not exc.transient else "DeadlineExceeded"
        allocation_fail(
            allocation_id=allocation_id, reason=reason or "KubernetesError", message=exc.message
        )
        return FAILED
    if allocation.prune_pending:
        # Done for this many replicas; a scale since then keeps it pending.
        Allocation.objects.filter(pk=allocation_id, replicas=allocation.replicas).update(
            prune_pending=False
        )
    allocation_mark_applied(allocation_id=allocation_id, synced=synced)
    if synced.waiting:
        # Nothing else would notice: the watcher records what is there, and makes nothing.
        queue.reconcile(allocation_id, countdown=WAITING_COUNTDOWN)
    elif not synced.changed() and allocation.phase == Phase.PROVISIONING and allocation.ready_at:
        # It had been ready, waits to be again, and its objects needed nothing: resumed
        # before its suspension reached the cluster, its Pods never stopped, and no watch
        # event will say they are ready. Read them once (rare: new pools have no ready_at,
        # and a scale or a resume that changes objects brings its own events).
        queue.observe(allocation_id)
    return (
        f"created {len(synced.created)}, patched {len(synced.patched)}, "
        f"deleted {len(synced.deleted)}, waiting {len(synced.waiting)}"
    )


def allocation_reconcile_now(allocation_id: int) -> str:
    """The reconcile run by the request that made the allocation, not by a worker: a
    warm-pool allocation's claims are made before the POST answers, as a direct claim is
    made by its caller (a queue and a worker in between would cost more than the claim
    does). Whatever it does not finish (the lock held, trouble worth a retry, a failure of
    this process) is queued for a worker, as any reconcile is; the resync requeues an
    allocation left requested should this process die before either."""
    try:
        with locks.try_advisory_lock(locks.ALLOCATION, allocation_id) as acquired:
            if acquired:
                return allocation_reconcile(allocation_id)
    except RetryLater as later:
        queue.reconcile(allocation_id, countdown=later.countdown)
        return f"retry queued: {later}"
    except Exception:
        logger.exception("reconcile of allocation %s in the request failed; queued", allocation_id)
        queue.reconcile(allocation_id)
        return "queued"
    queue.reconcile(allocation_id, countdown=LOCK_BUSY_COUNTDOWN)
    return "queued: another holds its lock"


def allocation_mark_applied(*, allocation_id: int, synced: provisioning.Synced) -> None:
    with transaction.atomic():
        allocation = Allocation.objects.select_for_update().get(pk=allocation_id)
        if allocation.phase == Phase.REQUESTED:
            allocation.phase = Phase.PROVISIONING
        if allocation.provisioned_at is None:
            allocation.provisioned_at = timezone.now()
        allocation.save(update_fields=["phase", "provisioned_at", "updated_at"])
        if synced.changed():
            parts = [
                f"{verb} {len(names)} object(s)"
                for verb, names in (
                    ("created", synced.created),
                    ("updated", synced.patched),
                    ("deleted", synced.deleted),
                )
                if names
            ]
            record_event(
                allocation,
                AllocationEvent.Kind.APPLIED,
                ", ".join(parts),
                objects=synced.created,
                updated=synced.patched,
                deleted=synced.deleted,
            )
        announce(allocation)


def allocation_note_retry(*, allocation_id: int, message: str) -> None:
    with transaction.atomic():
        allocation = Allocation.objects.select_for_update().get(pk=allocation_id)
        allocation.reconcile_attempts = F("reconcile_attempts") + 1
        allocation.message = message
        allocation.save(update_fields=["reconcile_attempts", "message", "updated_at"])
        record_event(allocation, AllocationEvent.Kind.RETRY, message)


KEPT_FOR_INSPECTION = "it had been ready, so its objects are kept until it is released"


def locked_while_observed(allocation_id: int) -> Allocation | None:
    """The allocation, locked for this transaction, while observations still change it
    (requested, provisioning, ready); None once it has moved on."""
    return (
        Allocation.objects.select_for_update()
        .filter(pk=allocation_id, phase__in=(Phase.REQUESTED, *OBSERVED_PHASES))
        .first()
    )


def allocation_fail(
    *, allocation_id: int, reason: str, message: str, actor: str = SERVICE_ACTOR
) -> bool:
    """Mark failed and roll back what was created. False when it had already ended.

    An allocation that had been ready keeps its objects: its workspaces may hold the
    caller's work, and a Pod that exited is worth inspecting. Its DELETE releases them."""
    with transaction.atomic():
        allocation = locked_while_observed(allocation_id)
        if allocation is None:
            return False
        keep = allocation.ready_at is not None
        allocation.phase = Phase.FAILED
        allocation.reason = reason[:64]
        allocation.message = f"{message} ({KEPT_FOR_INSPECTION})" if keep else message
        allocation.failed_at = timezone.now()
        allocation.save(update_fields=["phase", "reason", "message", "failed_at", "updated_at"])
        record_event(allocation, AllocationEvent.Kind.FAILED, message, reason=reason)
        audit_record(
            actor=actor,
            team_id=allocation.team_id,
            action="allocation.fail",
            target_type="allocation",
            target=allocation.name,
            payload={"reason": reason, "message": message, "objects_kept": keep},
        )
        announce(allocation)
        if not keep:
            queue.rollback(allocation_id)
    return True

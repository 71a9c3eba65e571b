"""Ending an allocation: the release asked for, its objects deleted until none is left
(its artifacts first kept as a named context when asked), the name freed; and the rollback
of a failed allocation's objects."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from allocations import provisioning, queue
from allocations.models import VISIBLE_PHASES, Allocation, AllocationEvent, Phase
from allocations.selectors import pool_not_found
from allocations.services.timeline import announce, iso_time, record_event
from contexts.services import context_keep_artifacts
from contextsvc.core.services import SERVICE_ACTOR, audit_record
from contextsvc.core.teams import Reach
from contextsvc.infra.queue import Retry, RetryLater
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.names import artifacts_context_name, artifacts_pvc_name
from contextsvc.kube.objects.pvc import artifacts_retain_patch

logger = logging.getLogger(__name__)
# A release keeps trying through transient trouble for as long as it takes: what it
# deletes must go.
RELEASE_RETRY = Retry()


# A rollback's deletes are quick, but Pods and PVCs leave through controllers; it polls
# that long at most before leaving the rest to the periodic resync.
ROLLBACK_POLLS = 60


def allocation_release(*, name: str, actor: str, reach: Reach, expired: bool = False) -> Allocation:
    with transaction.atomic():
        allocation = reach.narrow(
            Allocation.objects.select_for_update().filter(name=name, phase__in=VISIBLE_PHASES)
        ).first()
        if allocation is None:
            raise pool_not_found(name)
        previous = allocation.phase
        allocation.phase = Phase.RELEASING
        allocation.release_requested_at = timezone.now()
        allocation.save(update_fields=["phase", "release_requested_at", "updated_at"])
        if expired:
            record_event(
                allocation,
                AllocationEvent.Kind.EXPIRED,
                f"expired at {iso_time(allocation.expires_at)}: released",
            )
        else:
            record_event(
                allocation, AllocationEvent.Kind.RELEASING, f"release requested by {actor}"
            )
        audit_record(
            actor=actor,
            team_id=allocation.team_id,
            action="allocation.release",
            target_type="allocation",
            target=allocation.name,
            payload={
                "namespace": allocation.namespace,
                "previous_phase": previous,
                **({"expired": True} if expired else {}),
            },
        )
        announce(allocation)
        queue.release(allocation.pk)
    return allocation


def allocation_mark_released(*, allocation_id: int, actor: str = SERVICE_ACTOR) -> bool:
    """Nothing of it is left in the cluster: the name is free again."""
    with transaction.atomic():
        allocation = (
            Allocation.objects.select_for_update()
            .filter(pk=allocation_id, phase=Phase.RELEASING)
            .first()
        )
        if allocation is None:
            return False
        allocation.phase = Phase.RELEASED
        allocation.released_at = timezone.now()
        allocation.ready_replicas = 0
        allocation.profile = None  # history keeps profile_name; the profile may go now
        allocation.save(
            update_fields=["phase", "released_at", "ready_replicas", "profile", "updated_at"]
        )
        record_event(allocation, AllocationEvent.Kind.RELEASED, "all objects deleted")
        audit_record(
            actor=actor,
            team_id=allocation.team_id,
            action="allocation.released",
            target_type="allocation",
            target=allocation.name,
            payload={"namespace": allocation.namespace},
        )
        announce(allocation)
    return True


def _retain_artifacts(allocation: Allocation, attempt: int) -> None:
    """Make the allocation's artifacts PVC a named context (type artifacts) of its own,
    before the release deletes what the pool owns. Idempotent: a release that runs again
    finds the row and the labels already there."""
    context_name = artifacts_context_name(allocation.name)
    with transaction.atomic():
        kept = context_keep_artifacts(
            namespace=allocation.namespace,
            name=context_name,
            size=allocation.artifacts_size,
            access_mode=allocation.artifacts_access_mode,
            storage_class=allocation.artifacts_storage_class,
            requester=allocation.requester,
            from_allocation=allocation.name,
            team_id=allocation.team_id,
        )
        if kept is not None:
            record_event(
                allocation,
                AllocationEvent.Kind.RETAINED,
                f"artifacts kept as context {allocation.namespace}/{context_name}",
            )
    try:
        kube.patch_object(
            PVC,
            allocation.namespace,
            artifacts_pvc_name(allocation.name),
            artifacts_retain_patch(allocation.name),
        )
    except kube.KubeError as exc:
        if exc.status == 404:
            return  # it was never made: nothing to keep (the context reports it missing)
        later = RELEASE_RETRY.again(transient=exc.transient, attempt=attempt)
        if later is not None:
            raise later from exc
        raise


def _delete_owned(allocation: Allocation, attempt: int) -> provisioning.Owned | None:
    """Delete what the allocation owns; what was still there (empty: nothing), or None when
    the cluster refused for good. Transient trouble is tried again (RetryLater)."""
    try:
        return provisioning.delete_owned(allocation)
    except kube.KubeError as exc:
        later = RELEASE_RETRY.again(transient=exc.transient, attempt=attempt)
        if later is not None:
            raise later from exc
        logger.error("cannot delete objects of %s: %s", allocation.name, exc.message)
        return None


def allocation_release_objects(allocation_id: int, attempt: int = 0) -> str:
    """Delete what a releasing allocation owns, once. The objects leave through their
    controllers (a Sandbox's Pod first, then the PVC it held); the watcher sees the last one
    go and records the release (allocation_record_observed), or the resync does when the
    watcher is down. Polling the cluster here as well would be the same answer, bought again
    with a list per kind every second of every release."""
    allocation = Allocation.objects.filter(pk=allocation_id, phase=Phase.RELEASING).first()
    if allocation is None:
        return "nothing to do"
    if allocation.has_artifacts and allocation.artifacts_retain:
        # Before anything is deleted: the artifacts stop being the pool's.
        _retain_artifacts(allocation, attempt)
    found = _delete_owned(allocation, attempt)
    if found is None:
        return "pending"
    if found.empty():
        allocation_mark_released(allocation_id=allocation_id)
        return "released"
    return f"deleting {len(found.names())}"


def allocation_rollback_objects(allocation_id: int, attempt: int = 0) -> str:
    """Delete what a failed allocation created, polling until nothing is left: a rollback's
    end is an event of its own, which nothing else records."""
    allocation = Allocation.objects.filter(
        pk=allocation_id, phase=Phase.FAILED, ready_at__isnull=True
    ).first()
    if allocation is None:
        return "nothing to do"
    found = _delete_owned(allocation, attempt)
    if found is None:
        return "pending"
    if found.empty():
        allocation_note_rolled_back(allocation_id=allocation_id)
        return "rolled back"
    if attempt < ROLLBACK_POLLS:
        raise RetryLater(1.0)
    logger.warning("%s still owns %s; the resync will finish", allocation.name, found.names())
    return "pending"


def allocation_note_rolled_back(*, allocation_id: int) -> None:
    allocation = Allocation.objects.get(pk=allocation_id)
    if not allocation.events.filter(kind=AllocationEvent.Kind.ROLLED_BACK).exists():
        record_event(
            allocation, AllocationEvent.Kind.ROLLED_BACK, "deleted every object it created"
        )

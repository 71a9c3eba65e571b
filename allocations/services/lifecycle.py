"""Changing a live allocation: scale and expiry (update), suspend and resume, and the
release of those whose expiry has passed. Each records its timeline event and audit entry
and queues the reconcile that makes the cluster match."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from allocations import queue
from allocations.models import VISIBLE_PHASES, Allocation, AllocationEvent, Phase, Strategy
from allocations.requests import ARTIFACTS_SHARED_MESSAGE, KEEP, PoolUpdate
from allocations.selectors import pool_not_found
from allocations.services.create import pool_storage
from allocations.services.quotas import quotas_check
from allocations.services.release import allocation_release
from allocations.services.timeline import announce, iso_time, record_event
from allocations.services.warmpool import warm_pool_check
from contextsvc.core.models import Team
from contextsvc.core.services import audit_record
from contextsvc.core.teams import EVERY_TEAM, Reach, team_lock
from contextsvc.infra.errors import Conflict, InvalidRequest, NotFound, cluster_call
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.pvc import pvc_shape


def _live_for_update(name: str, reach: Reach) -> tuple[Allocation, Team]:
    """The allocation a caller may change, locked; a failed one only waits for its release.
    Its team's row is locked first (the order every quota check takes), so that a scale or
    a resume counts the team's use as a create does."""
    found = _live(name, reach)
    if found is None:
        raise pool_not_found(name)
    team = team_lock(found.team_id)
    allocation = (
        Allocation.objects.select_for_update().filter(pk=found.pk, phase__in=VISIBLE_PHASES).first()
    )
    if allocation is None:
        raise pool_not_found(name)
    if allocation.phase == Phase.FAILED:
        raise Conflict(f'sandbox pool "{name}" has failed; it can only be released')
    return allocation, team


def _check_scale(allocation: Allocation, replicas: int) -> None:
    """What a create would refuse for this many replicas (outside any transaction: the
    caller's PVC and the warm pool's template are read from the cluster)."""
    if allocation.strategy == Strategy.WARMPOOL and replicas > allocation.replicas:
        # More claims hand out more of the template's Pods: it must still be hardened.
        warm_pool_check(allocation.warm_pool, allocation.namespace, vouched=False)
    if replicas <= 1:
        return
    if allocation.has_artifacts and allocation.artifacts_access_mode == "ReadWriteOnce":
        raise InvalidRequest(ARTIFACTS_SHARED_MESSAGE)
    if allocation.strategy == Strategy.EXISTING:
        with cluster_call():
            pvc = kube.get_object(PVC, allocation.namespace, allocation.claim_name)
        if pvc is None or pvc_shape(pvc).access_mode != "ReadWriteMany":
            raise InvalidRequest(
                f'workspace.claimName "{allocation.claim_name}" must allow ReadWriteMany to be '
                f"shared by {replicas} replicas"
            )


def _live(name: str, reach: Reach) -> Allocation | None:
    return reach.narrow(Allocation.objects.filter(name=name, phase__in=VISIBLE_PHASES)).first()


def allocation_update(*, name: str, update: PoolUpdate, actor: str, reach: Reach) -> Allocation:
    """Scale (replicas: Sandboxes, with their PVCs or claims, added or removed from the
    highest index) and set or clear the expiry; the reconcile makes the cluster match."""
    if update.replicas is not None:
        current = _live(name, reach)
        if current is not None and update.replicas != current.replicas:
            _check_scale(current, update.replicas)
    with transaction.atomic():
        allocation, team = _live_for_update(name, reach)
        changes: dict[str, Any] = {}
        if update.replicas is not None and update.replicas != allocation.replicas:
            changes["replicas"] = [allocation.replicas, update.replicas]
            if update.replicas < allocation.replicas:
                allocation.prune_pending = True
            before_storage = allocation.requested_storage
            running = allocation.phase != Phase.SUSPENDED
            more = update.replicas - allocation.replicas
            allocation.replicas = update.replicas
            allocation.requested_storage = pool_storage(allocation)
            quotas_check(
                team,
                sandboxes=more if running else 0,
                storage=allocation.requested_storage - before_storage,
            )
            allocation.ready_replicas = min(allocation.ready_replicas, update.replicas)
            if allocation.phase in (Phase.PROVISIONING, Phase.READY):
                ready = allocation.ready_replicas >= allocation.replicas
                allocation.phase = Phase.READY if ready else Phase.PROVISIONING
            # What usage counts from this moment on (usage/services.py).
            record_event(
                allocation,
                AllocationEvent.Kind.SCALED,
                f"{changes['replicas'][0]} → {update.replicas} replicas, by {actor}",
                replicas=changes["replicas"],
                storage=[before_storage, allocation.requested_storage],
            )
        if update.expires_at is not KEEP and update.expires_at != allocation.expires_at:
            before = allocation.expires_at
            allocation.expires_at = update.expires_at  # type: ignore[assignment]
            changes["expiresAt"] = [iso_time(before), iso_time(allocation.expires_at)]
            record_event(
                allocation,
                AllocationEvent.Kind.EXPIRY,
                f"expires {iso_time(allocation.expires_at) or 'never'}, set by {actor}",
            )
        if not changes:
            return allocation
        allocation.save()
        audit_record(
            actor=actor,
            team_id=allocation.team_id,
            action="allocation.update",
            target_type="allocation",
            target=allocation.name,
            payload=changes,
        )
        announce(allocation)
        queue.reconcile(allocation.pk)
    return allocation


NOT_SUSPENDABLE = (
    "suspend and resume apply to direct allocations: a warm-pool claim's Sandbox belongs to "
    "its pool (release the allocation instead)"
)


def allocation_suspend(*, name: str, actor: str, reach: Reach) -> Allocation:
    """Every Sandbox to ``Suspended``: its Pod goes, its PVCs and the name stay."""
    return _set_suspended(name=name, actor=actor, reach=reach, suspended=True)


def allocation_resume(*, name: str, actor: str, reach: Reach) -> Allocation:
    """Every Sandbox back to ``Running``: new Pods from the same template; ready again when
    they are. Its sandboxes count for the team's quota again."""
    return _set_suspended(name=name, actor=actor, reach=reach, suspended=False)


def _set_suspended(*, name: str, actor: str, reach: Reach, suspended: bool) -> Allocation:
    """Suspend or resume: the row, its timeline event and audit entry, and a reconcile
    that brings the Sandboxes to it. Asking for what already is changes nothing."""
    with transaction.atomic():
        allocation, team = _live_for_update(name, reach)
        if allocation.strategy == Strategy.WARMPOOL:
            raise Conflict(NOT_SUSPENDABLE)
        if (allocation.phase == Phase.SUSPENDED) == suspended:
            return allocation
        if not suspended:
            quotas_check(team, sandboxes=allocation.replicas)
        previous = allocation.phase
        allocation.suspended = suspended
        if suspended:
            allocation.phase, allocation.ready_replicas = Phase.SUSPENDED, 0
            kind, done, action = AllocationEvent.Kind.SUSPENDED, "suspended", "suspend"
            payload: dict[str, Any] = {"previous_phase": previous}
        else:
            allocation.phase = Phase.PROVISIONING
            kind, done, action = AllocationEvent.Kind.RESUMED, "resumed", "resume"
            payload = {}
        allocation.save()
        record_event(allocation, kind, f"{done} by {actor}")
        audit_record(
            actor=actor,
            team_id=allocation.team_id,
            action=f"allocation.{action}",
            target_type="allocation",
            target=allocation.name,
            payload=payload,
        )
        announce(allocation)
        queue.reconcile(allocation.pk)
    return allocation


EXPIRY_ACTOR = "system:expiry"


def allocations_expire_due(*, now: Any = None) -> list[str]:
    """Release every allocation past its expiry (beat, every few seconds)."""
    due = Allocation.objects.filter(
        phase__in=VISIBLE_PHASES, expires_at__lte=now or timezone.now()
    ).values_list("name", flat=True)
    released = []
    for name in list(due):
        try:
            allocation_release(name=name, actor=EXPIRY_ACTOR, reach=EVERY_TEAM, expired=True)
        except NotFound:
            continue  # released by its caller meanwhile
        released.append(name)
    return released

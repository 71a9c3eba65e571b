"""Writes for allocations. Every state change that matters records its
timeline event and audit entry in the same transaction, and queues work after commit
(allocations/queue.py); the tasks only hand ids to the functions here."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, TextField, Value, When
from django.db.models.functions import Least, Now
from django.utils import timezone

from allocations import provisioning, queue, selectors
from allocations.models import (
    OBSERVED_PHASES,
    RECONCILED_PHASES,
    VISIBLE_PHASES,
    Allocation,
    AllocationEvent,
    Phase,
    Strategy,
)
from allocations.observe import (
    MILESTONES,
    Milestones,
    Observation,
    PoolObjects,
    Seen,
    milestones,
    observe,
)
from allocations.requests import (
    ARTIFACTS_SHARED_MESSAGE,
    KEEP,
    PoolRequest,
    PoolUpdate,
)
from allocations.selectors import allocation_row
from contexts.models import ContextResource, ContextType
from contextsvc.core import capabilities, events, namespaces
from contextsvc.core.errors import (
    AlreadyExists,
    Conflict,
    InvalidRequest,
    NotFound,
    Unavailable,
    cluster_call,
)
from contextsvc.core.queue import RetryLater, backoff
from contextsvc.core.services import audit_record
from contextsvc.core.storage import check_storage_classes
from contextsvc.kube import client as kube
from contextsvc.kube import objects, podsecurity
from profiles import warmpools
from profiles.services import profile_blueprint, profile_for_allocation

logger = logging.getLogger(__name__)

SYSTEM_ACTOR = "system:context-service"
# Deletes are quick, but Pods and PVCs leave through controllers; poll that long at most
# before leaving the rest to the watcher and the periodic resync.
RELEASE_POLLS = 60


# --- Announcements ------------------------------------------------------------------------


def announce(allocation: Allocation, event_type: str = "allocation.changed") -> None:
    events.publish(
        events.ALLOCATIONS,
        events.allocation_group(allocation.pk),
        event_type=event_type,
        data=allocation_row(allocation),
    )


def _event(allocation: Allocation, kind: str, message: str = "", **data: Any) -> None:
    AllocationEvent.objects.create(allocation=allocation, kind=kind, message=message, data=data)


# --- Create ---------------------------------------------------------------------------------


def _check_managed_claim(request: PoolRequest, namespace: str, pvc: dict[str, Any]) -> None:
    """A PVC this service manages is mounted through claimName only as its rule says:
    retained artifacts read-only; another allocation's volume and an agent type's
    workspace never (they hold other conversations), unless an admin names the PVC in
    CS_CLAIMS_ALLOWED. A PVC the service does not manage is the caller's: as v1 did."""
    managed = objects.managed_claim(pvc)
    if managed is None or f"{namespace}/{request.claim_name}" in settings.CS_CLAIMS_ALLOWED:
        return
    kind, owner = managed
    claim = f'workspace.claimName "{request.claim_name}"'
    if kind == "artifacts":
        if request.read_only is True:
            return
        raise InvalidRequest(
            f"{claim} holds the artifacts retained as context {owner}: mount it with "
            "workspace.readOnly true"
        )
    whose = f'allocation "{owner}"' if kind == "allocation" else f'agent type "{owner}"'
    raise InvalidRequest(
        f"{claim} is the workspace of {whose}, which this service does not mount into "
        "another allocation (an admin may allow it by name: CS_CLAIMS_ALLOWED)"
    )


def _existing_workspace(request: PoolRequest, namespace: str) -> tuple[str, str, str]:
    """(size, accessMode, storageClass) of the caller's PVC, which must fit the request."""
    with cluster_call():
        pvc = kube.get_object(objects.PVC, namespace, request.claim_name)
    if pvc is None:
        raise InvalidRequest(
            f'workspace.claimName "{request.claim_name}" does not exist in namespace "{namespace}"'
        )
    _check_managed_claim(request, namespace, pvc)
    shape = objects.pvc_shape(pvc)
    if request.replicas > 1 and shape.access_mode != "ReadWriteMany":
        raise InvalidRequest(
            f'workspace.claimName "{request.claim_name}" must allow ReadWriteMany to be shared '
            f"by {request.replicas} replicas"
        )
    return shape.size, shape.access_mode, shape.storage_class


@dataclass(frozen=True)
class WarmPoolCheck:
    relaxations: frozenset[str]
    # NetworkPolicy rules for the claimed Pods (objects.warm_pool_fence).
    fence: dict[str, list[dict[str, Any]]]


def _warm_pool_check(warm_pool: str, namespace: str) -> WarmPoolCheck:
    """The pool exists, and its template passes the Pod Security table (podsecurity) but
    for the restricted rules its owner relaxed on the pool, by name: the service does not
    own the template, but it does not hand out unhardened sandboxes silently — at create,
    and at every scale-up (the template may have been edited since)."""
    with cluster_call():
        pool = kube.get_object(objects.SANDBOX_WARM_POOL, namespace, warm_pool)
        template_name = objects.warm_pool_template_name(pool) if pool is not None else None
        template = (
            kube.get_object(objects.SANDBOX_TEMPLATE, namespace, template_name)
            if template_name
            else None
        )
    if pool is None:
        raise InvalidRequest(f'warmPoolRef "{warm_pool}" does not exist in namespace "{namespace}"')
    if template is None:
        raise InvalidRequest(
            f'warmPoolRef "{warm_pool}": its SandboxTemplate "{template_name or ""}" '
            f'does not exist in namespace "{namespace}"'
        )
    relaxations = objects.warm_pool_relaxations(pool) & podsecurity.RELAXABLE
    pod_spec, annotations = objects.template_pod(template)
    problems = podsecurity.violations(pod_spec, annotations=annotations, relaxations=relaxations)
    if problems:
        refused = InvalidRequest(
            f'warmPoolRef "{warm_pool}": its SandboxTemplate "{template_name}" is not '
            f"hardened ({problems[0]}); harden it, or relax rules by name in the pool's "
            f"{objects.WARM_POOL_RELAXATIONS_ANNOTATION} annotation"
        )
        refused.details = {"problems": {"warmPoolRef": problems}}
        raise refused
    return WarmPoolCheck(relaxations, objects.warm_pool_fence(template))


def _taken(name: str) -> AlreadyExists:
    return AlreadyExists(f'sandbox pool "{name}" already exists')


def _check_name_free(allocation: Allocation, *, claims: bool) -> None:
    """409 while a row or any object labelled with this pool name still exists, or while
    an object of somebody else's sits under a name this allocation would create (the Go
    service met that as AlreadyExists in the request, and its callers expect the 409)."""
    name, namespace = allocation.name, allocation.namespace
    if Allocation.objects.filter(name=name).exclude(phase=Phase.RELEASED).exists():
        raise _taken(name)
    selector = objects.pool_selector(name)
    labelled = [objects.SANDBOX, objects.PVC]
    if claims:
        labelled.append(objects.SANDBOX_CLAIM)
    # Every check at once: the POST waits for the slowest, not for their sum.
    checks: list[Callable[[], Any]] = [
        functools.partial(kube.list_objects, kind, namespace, selector) for kind in labelled
    ]
    checks.append(functools.partial(provisioning.sandbox_pods, namespace, name))
    checks += [
        functools.partial(kube.get_object, kind, namespace, objects.name_of(body))
        for kind, body in provisioning.desired_objects(allocation)
    ]
    with cluster_call():
        if any(found for found in kube.concurrently(checks)):
            raise _taken(name)


WARM_POOL_PROFILE_IGNORED = (
    "profile is ignored for warm-pool allocations: the pool's SandboxTemplate decides the runtime"
)


@dataclass(frozen=True)
class Created:
    allocation: Allocation
    warnings: tuple[str, ...] = ()


def _runtime(
    request: PoolRequest, caps: capabilities.Capabilities
) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """(profile, blueprint JSON, warnings) for a new allocation. The blueprint is copied
    now, so that editing the profile later never changes this allocation's Sandboxes."""
    if request.strategy == Strategy.WARMPOOL:
        problem = caps.extensions_problem()
        if problem:
            raise InvalidRequest(f"warm-pool allocations need {problem.removeprefix('the ')}")
        if request.profile and request.warm_pool == objects.profile_warm_pool_name(request.profile):
            # Its own warm pool: the profile's blueprint is what runs.
            return profile_for_allocation(request.profile), {}, ()
        return None, {}, (WARM_POOL_PROFILE_IGNORED,) if request.profile else ()
    profile = profile_for_allocation(request.profile)
    service_account = settings.CS_SANDBOX_SERVICE_ACCOUNT
    if profile is None:
        blueprint = objects.builtin_blueprint(
            image=settings.CS_SANDBOX_IMAGE or "", service_account=service_account
        )
    else:
        blueprint = profile_blueprint(profile, service_account=service_account)
    return profile, blueprint.to_json(), ()


def warm_pools_scale(*, now: datetime | None = None) -> warmpools.Report:
    """Every profile's warm pool made and kept in step, and sized from the claims asked of
    it over the last CS_WARM_POOL_WINDOW_SECONDS."""
    now = now or timezone.now()
    since = now - timedelta(seconds=settings.CS_WARM_POOL_WINDOW_SECONDS)
    return warmpools.warm_pools_sync(demand=selectors.warm_pool_demand(since=since), now=now)


def _profile_warm_pool(request: PoolRequest, namespace: str) -> PoolRequest:
    """A request that names a profile and no workspace takes the profile's warm pool."""
    if request.strategy != Strategy.WARMPOOL or request.warm_pool:
        return request
    profile = profile_for_allocation(request.profile)
    if profile is None or not profile.has_warm_pool or profile.warm_pool_namespace != namespace:
        raise InvalidRequest(
            f'profile "{request.profile}" has no warm pool in namespace "{namespace}": '
            "give a workspace, or a warmPoolRef"
        )
    return dataclasses.replace(request, warm_pool=objects.profile_warm_pool_name(profile.name))


def allocation_create(*, request: PoolRequest, actor: str) -> Created:
    """Validate against the cluster, record the allocation, reconcile it after commit."""
    namespace = namespaces.check_requested(request.namespace)
    caps = capabilities.current()
    problem = caps.core_problem()
    if problem:
        raise Unavailable(problem)
    request = _profile_warm_pool(request, namespace)
    profile, blueprint, warnings = _runtime(request, caps)
    size, access_mode, storage_class = request.size, request.access_mode, request.storage_class
    relaxations: frozenset[str] = frozenset()
    check_storage_classes(
        {
            "workspace.storageClass": storage_class,
            "artifacts.storageClass": request.artifacts.storage_class if request.artifacts else "",
        }
    )
    if request.strategy == Strategy.EXISTING:
        size, access_mode, storage_class = _existing_workspace(request, namespace)
    elif request.strategy == Strategy.WARMPOOL:
        checked = _warm_pool_check(request.warm_pool, namespace)
        relaxations = checked.relaxations
        blueprint = {"fence": checked.fence, "relaxations": sorted(relaxations)}

    allocation = Allocation(
        name=request.name,
        namespace=namespace,
        replicas=request.replicas,
        strategy=request.strategy,
        workspace_size=size,
        workspace_access_mode=access_mode,
        workspace_storage_class=storage_class,
        claim_name=request.claim_name,
        read_only=request.read_only,
        warm_pool=request.warm_pool,
        profile=profile,
        profile_name=profile.name if profile else "",
        blueprint=blueprint,
        requester=actor,
        expires_at=request.expires_at,
        artifacts_size=request.artifacts.size if request.artifacts else "",
        artifacts_access_mode=request.artifacts.access_mode if request.artifacts else "",
        artifacts_storage_class=request.artifacts.storage_class if request.artifacts else "",
        artifacts_retain=bool(request.artifacts and request.artifacts.retain),
    )
    allocation.full_clean(validate_constraints=False)
    _check_name_free(allocation, claims=caps.extensions)
    try:
        with transaction.atomic():
            allocation.save()
            relaxed = (
                [f"The warm pool's owner relaxes: {', '.join(sorted(relaxations))}."]
                if relaxations
                else []
            )
            _event(
                allocation,
                AllocationEvent.Kind.CREATED,
                " ".join([f"requested by {actor}.", *warnings, *relaxed]).strip(),
            )
            audit_record(
                actor=actor,
                action="allocation.create",
                target_type="allocation",
                target=allocation.name,
                payload={
                    "namespace": namespace,
                    "replicas": allocation.replicas,
                    "strategy": allocation.strategy,
                    "profile": allocation.profile_name,
                    **({"relaxations": sorted(relaxations)} if relaxations else {}),
                },
            )
            announce(allocation, "allocation.created")
            queue.reconcile(allocation.pk)
    except IntegrityError:
        # Another request took the name between our check and our insert.
        raise _taken(request.name) from None
    return Created(allocation, warnings)


# --- Lifecycle: update (scale, expiry), suspend, resume, expire ------------------------------


def _live_for_update(name: str) -> Allocation:
    """The allocation a caller may change, locked; a failed one only waits for its release."""
    allocation = (
        Allocation.objects.select_for_update().filter(name=name, phase__in=VISIBLE_PHASES).first()
    )
    if allocation is None:
        raise NotFound(f'sandbox pool "{name}" not found')
    if allocation.phase == Phase.FAILED:
        raise Conflict(f'sandbox pool "{name}" has failed; it can only be released')
    return allocation


def _check_scale(allocation: Allocation, replicas: int) -> None:
    """What a create would refuse for this many replicas (outside any transaction: the
    caller's PVC and the warm pool's template are read from the cluster)."""
    if allocation.strategy == Strategy.WARMPOOL and replicas > allocation.replicas:
        # More claims hand out more of the template's Pods: it must still be hardened.
        _warm_pool_check(allocation.warm_pool, allocation.namespace)
    if replicas <= 1:
        return
    if allocation.has_artifacts and allocation.artifacts_access_mode == "ReadWriteOnce":
        raise InvalidRequest(ARTIFACTS_SHARED_MESSAGE)
    if allocation.strategy == Strategy.EXISTING:
        with cluster_call():
            pvc = kube.get_object(objects.PVC, allocation.namespace, allocation.claim_name)
        if pvc is None or objects.pvc_shape(pvc).access_mode != "ReadWriteMany":
            raise InvalidRequest(
                f'workspace.claimName "{allocation.claim_name}" must allow ReadWriteMany to be '
                f"shared by {replicas} replicas"
            )


def allocation_update(*, name: str, update: PoolUpdate, actor: str) -> Allocation:
    """Scale (replicas: Sandboxes, with their PVCs or claims, added or removed from the
    highest index) and set or clear the expiry; the reconcile makes the cluster match."""
    if update.replicas is not None:
        current = Allocation.objects.filter(name=name, phase__in=VISIBLE_PHASES).first()
        if current is not None and update.replicas != current.replicas:
            _check_scale(current, update.replicas)
    with transaction.atomic():
        allocation = _live_for_update(name)
        changes: dict[str, Any] = {}
        if update.replicas is not None and update.replicas != allocation.replicas:
            changes["replicas"] = [allocation.replicas, update.replicas]
            if update.replicas < allocation.replicas:
                allocation.prune_pending = True
            allocation.replicas = update.replicas
            allocation.ready_replicas = min(allocation.ready_replicas, update.replicas)
            if allocation.phase in (Phase.PROVISIONING, Phase.READY):
                ready = allocation.ready_replicas >= allocation.replicas
                allocation.phase = Phase.READY if ready else Phase.PROVISIONING
            _event(
                allocation,
                AllocationEvent.Kind.SCALED,
                f"{changes['replicas'][0]} → {update.replicas} replicas, by {actor}",
            )
        if update.expires_at is not KEEP and update.expires_at != allocation.expires_at:
            before = allocation.expires_at
            allocation.expires_at = update.expires_at  # type: ignore[assignment]
            changes["expiresAt"] = [_when(before), _when(allocation.expires_at)]
            _event(
                allocation,
                AllocationEvent.Kind.EXPIRY,
                f"expires {_when(allocation.expires_at) or 'never'}, set by {actor}",
            )
        if not changes:
            return allocation
        allocation.save()
        audit_record(
            actor=actor,
            action="allocation.update",
            target_type="allocation",
            target=allocation.name,
            payload=changes,
        )
        announce(allocation)
        queue.reconcile(allocation.pk)
    return allocation


def _when(moment: Any) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None


NOT_SUSPENDABLE = (
    "suspend and resume apply to direct allocations: a warm-pool claim's Sandbox belongs to "
    "its pool (release the allocation instead)"
)


def allocation_suspend(*, name: str, actor: str) -> Allocation:
    """Every Sandbox to ``Suspended``: its Pod goes, its PVCs and the name stay."""
    return _set_suspended(name=name, actor=actor, suspended=True)


def allocation_resume(*, name: str, actor: str) -> Allocation:
    """Every Sandbox back to ``Running``: new Pods from the same template; ready again when
    they are."""
    return _set_suspended(name=name, actor=actor, suspended=False)


def _set_suspended(*, name: str, actor: str, suspended: bool) -> Allocation:
    """Suspend or resume: the row, its timeline event and audit entry, and a reconcile
    that brings the Sandboxes to it. Asking for what already is changes nothing."""
    with transaction.atomic():
        allocation = _live_for_update(name)
        if allocation.strategy == Strategy.WARMPOOL:
            raise Conflict(NOT_SUSPENDABLE)
        if (allocation.phase == Phase.SUSPENDED) == suspended:
            return allocation
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
        _event(allocation, kind, f"{done} by {actor}")
        audit_record(
            actor=actor,
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
            allocation_release(name=name, actor=EXPIRY_ACTOR, expired=True)
        except NotFound:
            continue  # released by its caller meanwhile
        released.append(name)
    return released


def _retain_artifacts(allocation: Allocation, attempt: int) -> None:
    """Make the allocation's artifacts PVC a named context (type artifacts) of its own,
    before the release deletes what the pool owns. Idempotent: a release that runs again
    finds the row and the labels already there."""
    context_name = objects.artifacts_context_name(allocation.name)
    with transaction.atomic():
        context = (
            ContextResource.objects.filter(namespace=allocation.namespace, name=context_name)
            .exclude(status=ContextResource.Status.DELETED)
            .first()
        )
        if context is None:
            context = ContextResource.objects.create(
                namespace=allocation.namespace,
                name=context_name,
                type=ContextType.ARTIFACTS,
                size=allocation.artifacts_size,
                access_mode=allocation.artifacts_access_mode,
                storage_class=allocation.artifacts_storage_class,
                requester=allocation.requester,
            )
            _event(
                allocation,
                AllocationEvent.Kind.RETAINED,
                f"artifacts kept as context {allocation.namespace}/{context_name}",
            )
            audit_record(
                actor=SYSTEM_ACTOR,
                action="context.create",
                target_type="context",
                target=f"{allocation.namespace}/{context_name}",
                payload={"type": "artifacts", "from_allocation": allocation.name},
            )
    try:
        kube.patch_object(
            objects.PVC,
            allocation.namespace,
            objects.artifacts_pvc_name(allocation.name),
            objects.artifacts_retain_patch(allocation.name),
        )
    except kube.KubeError as exc:
        if exc.status == 404:
            return  # it was never made: nothing to keep (the context reports it missing)
        if exc.transient:
            raise RetryLater(backoff(attempt)) from exc
        raise


# --- Release --------------------------------------------------------------------------------


def allocation_release(*, name: str, actor: str, expired: bool = False) -> Allocation:
    with transaction.atomic():
        allocation = (
            Allocation.objects.select_for_update()
            .filter(name=name, phase__in=VISIBLE_PHASES)
            .first()
        )
        if allocation is None:
            raise NotFound(f'sandbox pool "{name}" not found')
        previous = allocation.phase
        allocation.phase = Phase.RELEASING
        allocation.release_requested_at = timezone.now()
        allocation.save(update_fields=["phase", "release_requested_at", "updated_at"])
        if expired:
            _event(
                allocation,
                AllocationEvent.Kind.EXPIRED,
                f"expired at {_when(allocation.expires_at)}: released",
            )
        else:
            _event(allocation, AllocationEvent.Kind.RELEASING, f"release requested by {actor}")
        audit_record(
            actor=actor,
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


def allocation_mark_released(*, allocation_id: int, actor: str = SYSTEM_ACTOR) -> bool:
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
        _event(allocation, AllocationEvent.Kind.RELEASED, "all objects deleted")
        audit_record(
            actor=actor,
            action="allocation.released",
            target_type="allocation",
            target=allocation.name,
            payload={"namespace": allocation.namespace},
        )
        announce(allocation)
    return True


# --- Reconcile bookkeeping ------------------------------------------------------------------


def reconcile_deadline() -> timedelta:
    """How long transient trouble may last before an allocation fails."""
    return timedelta(seconds=settings.CS_RECONCILE_DEADLINE_SECONDS)


def allocation_reconcile_deadline(allocation: Allocation) -> Any:
    return allocation.requested_at + reconcile_deadline()


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
        allocation_fail(allocation_id=allocation_id, reason="NameCollision", message=str(exc))
        return "failed"
    except kube.KubeError as exc:
        if exc.transient and timezone.now() < allocation_reconcile_deadline(allocation):
            allocation_note_retry(allocation_id=allocation_id, message=exc.message)
            raise RetryLater(backoff(attempt)) from exc
        reason = exc.reason if not exc.transient else "DeadlineExceeded"
        allocation_fail(
            allocation_id=allocation_id, reason=reason or "KubernetesError", message=exc.message
        )
        return "failed"
    if allocation.prune_pending:
        # Done for this many replicas; a scale since then keeps it pending.
        Allocation.objects.filter(pk=allocation_id, replicas=allocation.replicas).update(
            prune_pending=False
        )
    allocation_mark_applied(allocation_id=allocation_id, synced=synced)
    return (
        f"created {len(synced.created)}, patched {len(synced.patched)}, "
        f"deleted {len(synced.deleted)}"
    )


def _delete_until_gone(allocation: Allocation, attempt: int) -> bool:
    """Delete what the allocation owns. True when nothing is left; otherwise asks to be
    called again (RetryLater) until the polls run out, after which the resync finishes."""
    try:
        left = provisioning.delete_owned(allocation)
    except kube.KubeError as exc:
        if exc.transient:
            raise RetryLater(backoff(attempt)) from exc
        logger.error("cannot delete objects of %s: %s", allocation.name, exc.message)
        return False
    if left.empty():
        return True
    if attempt < RELEASE_POLLS:
        raise RetryLater(1.0)
    logger.warning("%s still owns %s; the resync will finish", allocation.name, left.names())
    return False


def allocation_release_objects(allocation_id: int, attempt: int = 0) -> str:
    allocation = Allocation.objects.filter(pk=allocation_id, phase=Phase.RELEASING).first()
    if allocation is None:
        return "nothing to do"
    if allocation.has_artifacts and allocation.artifacts_retain:
        # Before anything is deleted: the artifacts stop being the pool's.
        _retain_artifacts(allocation, attempt)
    if _delete_until_gone(allocation, attempt):
        allocation_mark_released(allocation_id=allocation_id)
        return "released"
    return "pending"


def allocation_rollback_objects(allocation_id: int, attempt: int = 0) -> str:
    allocation = Allocation.objects.filter(
        pk=allocation_id, phase=Phase.FAILED, ready_at__isnull=True
    ).first()
    if allocation is None:
        return "nothing to do"
    if _delete_until_gone(allocation, attempt):
        allocation_note_rolled_back(allocation_id=allocation_id)
        return "rolled back"
    return "pending"


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
            _event(
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
        _event(allocation, AllocationEvent.Kind.RETRY, message)


KEPT_FOR_INSPECTION = "it had been ready, so its objects are kept until it is released"


def _locked_while_observed(allocation_id: int) -> Allocation | None:
    """The allocation, locked for this transaction, while observations still change it
    (requested, provisioning, ready); None once it has moved on."""
    return (
        Allocation.objects.select_for_update()
        .filter(pk=allocation_id, phase__in=(Phase.REQUESTED, *OBSERVED_PHASES))
        .first()
    )


def allocation_fail(
    *, allocation_id: int, reason: str, message: str, actor: str = SYSTEM_ACTOR
) -> bool:
    """Mark failed and roll back what was created. False when it had already ended.

    An allocation that had been ready keeps its objects: its workspaces may hold the
    caller's work, and a Pod that exited is worth inspecting. Its DELETE releases them."""
    with transaction.atomic():
        allocation = _locked_while_observed(allocation_id)
        if allocation is None:
            return False
        keep = allocation.ready_at is not None
        allocation.phase = Phase.FAILED
        allocation.reason = reason[:64]
        allocation.message = f"{message} ({KEPT_FOR_INSPECTION})" if keep else message
        allocation.failed_at = timezone.now()
        allocation.save(update_fields=["phase", "reason", "message", "failed_at", "updated_at"])
        _event(allocation, AllocationEvent.Kind.FAILED, message, reason=reason)
        audit_record(
            actor=actor,
            action="allocation.fail",
            target_type="allocation",
            target=allocation.name,
            payload={"reason": reason, "message": message, "objects_kept": keep},
        )
        announce(allocation)
        if not keep:
            queue.rollback(allocation_id)
    return True


def allocation_note_rolled_back(*, allocation_id: int) -> None:
    allocation = Allocation.objects.get(pk=allocation_id)
    if not allocation.events.filter(kind=AllocationEvent.Kind.ROLLED_BACK).exists():
        _event(allocation, AllocationEvent.Kind.ROLLED_BACK, "deleted every object it created")


# --- Observed readiness ---------------------------------------------------------------------


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
    noted = False
    if observation.failure is None:
        marks = milestones(strategy, pool, seen)
        if marks.reached - seen.noted:
            noted = allocation_note_milestones(allocation_id=allocation_id, milestones=marks)
    if _changes_nothing(phase, seen, observation) or not allocation_observe(
        allocation_id=allocation_id, observation=observation
    ):
        return Recorded.CHANGED if noted else Recorded.UNCHANGED
    return Recorded.FAILED if observation.failure is not None else Recorded.CHANGED


# Each milestone's field, and the timeline's event for it.
MILESTONE_EVENTS = {
    "volumes_bound": AllocationEvent.Kind.VOLUMES_BOUND,
    "pods_scheduled": AllocationEvent.Kind.PODS_SCHEDULED,
    "claims_bound": AllocationEvent.Kind.CLAIMS_BOUND,
}


def allocation_note_milestones(*, allocation_id: int, milestones: Milestones) -> bool:
    """Record the readiness phases reached for the first time (each time stamped once, by
    whoever saw it first: the watcher or the resync), with a timeline event each. A warm-pool
    allocation's warm and cold counts are those of the moment its claims were all bound."""
    with transaction.atomic():
        allocation = _locked_while_observed(allocation_id)
        if allocation is None:
            return False
        now = timezone.now()
        new = [
            name
            for name in MILESTONES
            if name in milestones.reached and getattr(allocation, f"{name}_at") is None
        ]
        if not new:
            return False
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
            _event(allocation, MILESTONE_EVENTS[name], text, **data)
        announce(allocation)
    return True


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
    with transaction.atomic():
        allocation = Allocation.objects.get(pk=allocation_id)
        kind = (
            AllocationEvent.Kind.READY
            if allocation.phase == Phase.READY
            else AllocationEvent.Kind.REPLICAS
        )
        text = f"{allocation.ready_replicas}/{allocation.replicas} replicas ready"
        if problem:
            text += f"; {reason}: {message}"
        _event(allocation, kind, text, ready=allocation.ready_replicas, reason=reason)
        announce(allocation)
    return True

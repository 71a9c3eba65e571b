"""Per-context workspaces (seed 001): the shared ReadWriteMany PVC of each agent type,
the registry of context ids on it, TTL cleanup through a Job, and volume expansion.

Writes record their audit entry in the same transaction and touch Kubernetes after
commit, through the tasks in workspaces/tasks.py (queued by workspaces/queue.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from contextsvc.core.models import default_team_pk
from contextsvc.core.services import audit_record
from contextsvc.core.teams import Reach, check_team_namespace, storage_check, team_lock
from contextsvc.infra import namespaces
from contextsvc.infra.errors import AlreadyExists, Conflict, InvalidRequest, cluster_call
from contextsvc.infra.queue import Retry, RetryLater
from contextsvc.infra.validators import is_dns1123_label, is_dns1123_subdomain
from contextsvc.infra.volumes import ResyncReport, Volume, VolumeKey, VolumeTaken
from contextsvc.kube import client as kube
from contextsvc.kube.objects.job import cleanup_job_manifest, job_outcome
from contextsvc.kube.objects.kinds import JOB, PVC, STORAGE_CLASS
from contextsvc.kube.objects.names import agent_workspace_pvc_name, cleanup_job_name
from contextsvc.kube.objects.pvc import (
    agent_workspace_pvc_manifest,
    is_agent_workspace_pvc,
    managed_label_patch,
    pvc_capacity,
    pvc_is_bound,
    pvc_resize_patch,
    pvc_shape,
    storage_class_expansion_problem,
)
from contextsvc.quantity import format_bytes, is_positive_quantity, parse_quantity
from rules.model import OperationError, check_context_id
from workspaces import queue
from workspaces.models import AgentWorkspace, WorkspaceContext
from workspaces.selectors import LIVE, contexts_due, workspace_get, workspace_not_found

logger = logging.getLogger(__name__)
SYSTEM_ACTOR = "system:workspaces"
# A PVC create that keeps failing transiently is given up (the workspace fails) after this
# many retries; a delete is retried for as long as it takes.
CREATE_RETRY = Retry(attempts=10)
DELETE_RETRY = Retry()
# Why a workspace fails when its PVC's name is somebody else's.
NAME_HELD = "its PVC name is held by an object the service does not own"
# Deletes are quick, but a PVC leaves through its controller: poll that long at most before
# leaving the rest to housekeeping.
DELETE_POLLS = 60
STALLED_AFTER = timedelta(minutes=1)


MAX_BYTES = 2**63 - 1  # 8Ei less one byte: the largest a bigint column holds


def _bytes(text: str) -> int:
    return int(parse_quantity(text))


# --- Workspaces ---------------------------------------------------------------------------------


def _check_request(
    agent_type: str, namespace: str, initial: str, maximum: str, storage_class: str
) -> None:
    # <agent>-workspace must stay a valid name and the agent a valid label value.
    if not agent_type:
        raise InvalidRequest("agentType is required")
    if not is_dns1123_label(agent_type) or len(agent_type) > 54:
        raise InvalidRequest("agentType must be a DNS-1123 label of at most 54 characters")
    if not namespace:
        raise InvalidRequest("namespace is required")
    if not is_dns1123_label(namespace):
        raise InvalidRequest("namespace must be a DNS-1123 label")
    namespaces.check_managed(namespace)
    for field, value in (("initialSize", initial), ("maxSize", maximum)):
        if not is_positive_quantity(value):
            raise InvalidRequest(f"{field} must be a positive Kubernetes quantity")
        if _bytes(value) > MAX_BYTES:
            # Sizes are kept in bytes in a bigint: a larger one was a database error.
            raise InvalidRequest(f"{field} must be at most 8Ei")
    if _bytes(maximum) < _bytes(initial):
        raise InvalidRequest("maxSize must not be smaller than initialSize")
    if storage_class and not is_dns1123_subdomain(storage_class):
        raise InvalidRequest("storageClass must be a DNS-1123 subdomain")


def workspace_ensure(
    *,
    agent_type: str,
    namespace: str,
    initial_size: str = "",
    max_size: str = "",
    storage_class: str = "",
    actor: str,
    team_id: int | None = None,
) -> tuple[AgentWorkspace, bool]:
    """Create the agent type's workspace PVC (the team's, the default team's without one),
    or adopt the one that exists with the seed's labels. Returns (workspace, created)."""
    initial = initial_size or settings.CS_WORKSPACE_INITIAL_SIZE
    maximum = max_size or settings.CS_WORKSPACE_MAX_SIZE
    storage_class = storage_class or settings.CS_WORKSPACE_STORAGE_CLASS or ""
    _check_request(agent_type, namespace, initial, maximum, storage_class)
    owner = team_id if team_id is not None else default_team_pk()
    check_team_namespace(owner, namespace)
    existing = AgentWorkspace.objects.filter(
        agent_type=agent_type, namespace=namespace, status__in=LIVE
    ).first()
    if existing is not None:
        if existing.team_id != owner:
            raise _workspace_taken(agent_type, namespace)
        return existing, False
    name = agent_workspace_pvc_name(agent_type)
    with cluster_call():
        pvc = kube.get_object(PVC, namespace, name)
    workspace = AgentWorkspace(
        agent_type=agent_type,
        namespace=namespace,
        storage_class=storage_class,
        initial_size=initial,
        max_size=maximum,
        requested_bytes=_bytes(initial),
        created_by=actor,
        team_id=owner,
    )
    if pvc is not None:
        if not is_agent_workspace_pvc(pvc, agent_type):
            raise AlreadyExists(
                f'PVC "{name}" exists in namespace "{namespace}" and is not an agent workspace'
            )
        shape = pvc_shape(pvc)
        workspace.adopted = True
        workspace.storage_class = shape.storage_class
        workspace.requested_bytes = _bytes(shape.size)
        _observe_pvc(workspace, pvc)
    try:
        with transaction.atomic():
            # An adopted PVC is the team's from now on (expanded, deleted): it counts too.
            storage_check(team_lock(owner), more=workspace.requested_bytes)
            workspace.save()
            audit_record(
                actor=actor,
                team_id=workspace.team_id,
                action="workspace.adopt" if workspace.adopted else "workspace.create",
                target_type="workspace",
                target=f"{namespace}/{agent_type}",
                payload={"initial": initial, "max": maximum, "storage_class": storage_class},
            )
            if not workspace.adopted:
                queue.create_pvc(workspace.pk)
    except IntegrityError:
        raise _workspace_taken(agent_type, namespace) from None
    if workspace.adopted:
        _label_adopted(workspace)
    return workspace, True


def _label_adopted(workspace: AgentWorkspace) -> None:
    """Our managed-by label on an adopted PVC, so that the watches see it from now on; one
    the cluster refuses now is labelled by the next resync (resync_workspaces)."""
    try:
        kube.patch_object(PVC, workspace.namespace, workspace.pvc_name, managed_label_patch())
    except kube.KubeError as error:
        logger.warning("could not label the adopted PVC of %s: %s", workspace, error.message)


def workspace_volume(workspace: AgentWorkspace) -> Volume:
    return Volume(
        workspace.namespace,
        workspace.pvc_name,
        owns=lambda pvc: is_agent_workspace_pvc(pvc, workspace.agent_type),
    )


def _workspace_taken(agent_type: str, namespace: str) -> AlreadyExists:
    # Never says whose: another team's workspace is one this caller cannot see.
    return AlreadyExists(f'the workspace of "{agent_type}" in "{namespace}" already exists')


def _observe_pvc(workspace: AgentWorkspace, pvc: Mapping[str, Any]) -> None:
    capacity = pvc_capacity(pvc)
    workspace.capacity_bytes = _bytes(capacity) if capacity else None
    if pvc_is_bound(pvc):
        workspace.status = AgentWorkspace.Status.READY


def workspace_create_pvc(workspace_id: int, attempt: int = 0) -> str:
    """Create a provisioning workspace's PVC (idempotent); a cluster that refuses it, or
    keeps failing past CREATE_ATTEMPTS, fails the workspace with the cluster's message."""
    workspace = AgentWorkspace.objects.filter(
        pk=workspace_id, status=AgentWorkspace.Status.PROVISIONING
    ).first()
    if workspace is None:
        return "nothing to do"
    body = agent_workspace_pvc_manifest(
        agent_type=workspace.agent_type,
        namespace=workspace.namespace,
        size=workspace.initial_size,
        storage_class=workspace.storage_class or None,
    )
    try:
        created = workspace_volume(workspace).apply(body)
    except VolumeTaken:
        workspace_fail(workspace_id=workspace_id, message=NAME_HELD)
        return "failed"
    except kube.KubeError as error:
        later = CREATE_RETRY.again(transient=error.transient, attempt=attempt)
        if later is not None:
            raise later from error
        workspace_fail(workspace_id=workspace_id, message=error.message)
        return "failed"
    # Bound, its capacity: the watcher records them from the PVC's events.
    return "created" if created else "exists"


def workspace_fail(*, workspace_id: int, message: str) -> bool:
    with transaction.atomic():
        workspace = (
            AgentWorkspace.objects.select_for_update()
            .filter(pk=workspace_id, status=AgentWorkspace.Status.PROVISIONING)
            .first()
        )
        if workspace is None:
            return False
        workspace.status = AgentWorkspace.Status.FAILED
        workspace.message = message
        workspace.save(update_fields=["status", "message", "updated_at"])
        audit_record(
            actor=SYSTEM_ACTOR,
            team_id=workspace.team_id,
            action="workspace.fail",
            target_type="workspace",
            target=str(workspace),
            payload={"message": message},
        )
    return True


def workspace_delete(
    *, namespace: str, agent_type: str, force: bool, actor: str, reach: Reach
) -> AgentWorkspace:
    with transaction.atomic():
        workspace = reach.narrow(
            AgentWorkspace.objects.select_for_update().filter(
                namespace=namespace, agent_type=agent_type, status__in=LIVE
            )
        ).first()
        if workspace is None:
            raise workspace_not_found(namespace, agent_type)
        active = workspace.contexts.filter(status=WorkspaceContext.Status.ACTIVE).count()
        if active and not force:
            raise Conflict(
                f"the workspace has {active} active context(s); "
                "delete with force=true to remove it anyway"
            )
        workspace.status = AgentWorkspace.Status.DELETING
        workspace.save(update_fields=["status", "updated_at"])
        audit_record(
            actor=actor,
            team_id=workspace.team_id,
            action="workspace.delete",
            target_type="workspace",
            target=f"{namespace}/{agent_type}",
            payload={"force": force, "active_contexts": active},
        )
        queue.delete_pvc(workspace.pk)
    return workspace


def workspace_delete_pvc(workspace_id: int, attempt: int = 0) -> str:
    """Delete a deleting workspace's PVC and poll until it is gone (then housekeeping)."""
    workspace = AgentWorkspace.objects.filter(
        pk=workspace_id, status=AgentWorkspace.Status.DELETING
    ).first()
    if workspace is None:
        return "nothing to do"
    try:
        left = workspace_volume(workspace).delete()
    except kube.KubeError as error:
        later = DELETE_RETRY.again(transient=error.transient, attempt=attempt)
        if later is not None:
            raise later from error
        raise
    if left is None:
        workspace_record_observed(workspace=workspace, pvc=None)
        return AgentWorkspace.Status.DELETED
    if attempt < DELETE_POLLS:
        raise RetryLater(1.0)
    return workspace.status


# --- Contexts -----------------------------------------------------------------------------------


def context_touch(
    *,
    namespace: str,
    agent_type: str,
    context_id: str,
    disk_usage_bytes: int | None = None,
    actor: str,
    reach: Reach,
) -> tuple[WorkspaceContext, bool]:
    """Register or touch a context; an expired one comes back empty. (context, created)"""
    try:
        check_context_id(context_id)
    except OperationError as exc:
        raise InvalidRequest(f"contextId {str(exc).split(': ', 1)[1]}") from None
    if disk_usage_bytes is not None and disk_usage_bytes < 0:
        raise InvalidRequest("diskUsageBytes must not be negative")
    workspace = workspace_get(namespace=namespace, agent_type=agent_type, reach=reach)
    now = timezone.now()
    with transaction.atomic():
        context, created = WorkspaceContext.objects.select_for_update().get_or_create(
            workspace=workspace,
            context_id=context_id,
            defaults={
                "created_at": now,
                "last_accessed_at": now,
                "ttl_seconds": settings.CS_CONTEXT_TTL_SECONDS,
                "disk_usage_bytes": disk_usage_bytes or 0,
            },
        )
        if context.status == WorkspaceContext.Status.EXPIRING:
            raise Conflict(f'context "{context_id}" is being cleaned up; try again in a minute')
        if not created and context.status == WorkspaceContext.Status.EXPIRED:
            # Its directory is gone: it starts over, empty.
            context.status = WorkspaceContext.Status.ACTIVE
            context.created_at = now
            context.disk_usage_bytes = 0
            context.cleanup_job = context.cleanup_result = ""
            context.expired_at = None
            created = True
        context.last_accessed_at = now
        if disk_usage_bytes is not None:
            context.disk_usage_bytes = disk_usage_bytes
        context.save()
        if created:
            audit_record(
                actor=actor,
                team_id=workspace.team_id,
                action="context.register",
                target_type="workspace-context",
                target=f"{namespace}/{agent_type}/{context_id}",
            )
    return context, created


def workspace_report_usage(
    *, namespace: str, agent_type: str, used_bytes: int, actor: str, reach: Reach
) -> AgentWorkspace:
    """The agents' measure of the whole PVC (``df``); may trigger an expansion."""
    if used_bytes < 0:
        raise InvalidRequest("usedBytes must not be negative")
    workspace = workspace_get(namespace=namespace, agent_type=agent_type, reach=reach)
    AgentWorkspace.objects.filter(pk=workspace.pk).update(
        usage_bytes=used_bytes, usage_reported_at=timezone.now()
    )
    queue.expand(workspace.pk)
    workspace.refresh_from_db()
    return workspace


# --- Expansion ----------------------------------------------------------------------------------


def expansion_target(workspace: AgentWorkspace) -> int | None:
    """The new request in bytes when usage has passed the threshold: double, capped at the
    maximum, never smaller than now. None when nothing should change."""
    if not workspace.usage_bytes or not workspace.requested_bytes:
        return None
    threshold = workspace.requested_bytes * settings.CS_WORKSPACE_EXPAND_AT_PERCENT / 100
    if workspace.usage_bytes < threshold:
        return None
    target = min(workspace.requested_bytes * 2, _bytes(workspace.max_size))
    return target if target > workspace.requested_bytes else None


def _class_cannot_expand(workspace: AgentWorkspace, pvc: dict[str, Any]) -> str | None:
    name = pvc_shape(pvc).storage_class or workspace.storage_class
    if not name:
        return "the PVC has no StorageClass, so nothing says it can expand"
    return storage_class_expansion_problem(
        kube.get_object(STORAGE_CLASS, None, name),
        name,
        settings.CS_ELASTIC_PROVISIONERS,
    )


def workspace_expand(workspace_id: int) -> str:
    """Grow the PVC if usage asks for it; records what it did or why it did not."""
    workspace = AgentWorkspace.objects.get(pk=workspace_id)
    target = expansion_target(workspace)
    if target is None:
        if (
            workspace.usage_bytes
            and workspace.requested_bytes >= _bytes(workspace.max_size)
            and (
                workspace.usage_bytes
                >= workspace.requested_bytes * settings.CS_WORKSPACE_EXPAND_AT_PERCENT / 100
            )
        ):
            _note(workspace, f"at its maximum size ({workspace.max_size}); not expanded further")
        return "nothing to do"
    pvc = kube.get_object(PVC, workspace.namespace, workspace.pvc_name)
    if pvc is None:
        _note(workspace, "the PVC is missing")
        return "missing"
    reason = _class_cannot_expand(workspace, pvc)
    if reason is not None:
        _note(workspace, f"not expanded: {reason}")
        return "skipped"
    size = format_bytes(target)
    kube.patch_object(PVC, workspace.namespace, workspace.pvc_name, pvc_resize_patch(size))
    with transaction.atomic():
        updated = AgentWorkspace.objects.filter(
            pk=workspace.pk, requested_bytes=workspace.requested_bytes
        ).update(
            requested_bytes=target,
            expansion_note=f"expanded to {size} at {timezone.now():%Y-%m-%d %H:%M} UTC",
        )
        if not updated:
            # Another worker grew it first (the patch above asked for the same size).
            return "already expanded"
        audit_record(
            actor=SYSTEM_ACTOR,
            team_id=workspace.team_id,
            action="workspace.expand",
            target_type="workspace",
            target=str(workspace),
            payload={
                "from": format_bytes(workspace.requested_bytes),
                "to": size,
                "usage_bytes": workspace.usage_bytes,
            },
        )
    return f"expanded to {size}"


def _note(workspace: AgentWorkspace, note: str) -> None:
    AgentWorkspace.objects.filter(pk=workspace.pk).update(expansion_note=note[:500])


# --- TTL cleanup --------------------------------------------------------------------------------


def contexts_expire(*, dry_run: bool = False, limit: int = 100) -> list[WorkspaceContext]:
    """Start a cleanup Job for each expired context (or, dry, just say which)."""
    due = list(contexts_due()[:limit])
    if dry_run:
        return due
    for context in due:
        _start_cleanup(context)
    return due


def _start_cleanup(context: WorkspaceContext) -> None:
    workspace = context.workspace
    name = cleanup_job_name(workspace.agent_type, context.pk)
    with transaction.atomic():
        claimed = WorkspaceContext.objects.filter(
            pk=context.pk, status=WorkspaceContext.Status.ACTIVE
        ).update(status=WorkspaceContext.Status.EXPIRING, cleanup_job=name)
        if not claimed:
            return  # touched again, or another worker took it
        audit_record(
            actor=SYSTEM_ACTOR,
            team_id=workspace.team_id,
            action="context.expire",
            target_type="workspace-context",
            target=f"{workspace}/{context.context_id}",
            payload={"job": name},
        )
    body = cleanup_job_manifest(
        name=name,
        namespace=workspace.namespace,
        agent_type=workspace.agent_type,
        context_id=context.context_id,
        image=settings.CS_CLEANUP_IMAGE,
    )
    try:
        kube.create_if_absent(JOB, body)
    except kube.KubeError as error:
        # Try again at the next run; the context stays, with the reason.
        WorkspaceContext.objects.filter(pk=context.pk).update(
            status=WorkspaceContext.Status.ACTIVE, cleanup_job="", cleanup_result=error.message
        )


def cleanup_jobs_observe() -> int:
    """Finish contexts whose cleanup Job has completed (or failed: then they stay, with the
    reason, and are tried again at the next expiry run)."""
    finished = 0
    for context in WorkspaceContext.objects.filter(
        status=WorkspaceContext.Status.EXPIRING
    ).select_related("workspace"):
        job = kube.get_object(JOB, context.workspace.namespace, context.cleanup_job)
        outcome = job_outcome(job) if job else ("failed", "the cleanup Job disappeared")
        if outcome is None:
            continue
        result, message = outcome
        with transaction.atomic():
            if result == "succeeded":
                WorkspaceContext.objects.filter(pk=context.pk).update(
                    status=WorkspaceContext.Status.EXPIRED,
                    expired_at=timezone.now(),
                    disk_usage_bytes=0,
                    cleanup_result=f"removed /workspace/{context.context_id}",
                )
            else:
                WorkspaceContext.objects.filter(pk=context.pk).update(
                    status=WorkspaceContext.Status.ACTIVE,
                    cleanup_result=f"cleanup failed: {message}",
                )
            audit_record(
                actor=SYSTEM_ACTOR,
                team_id=context.workspace.team_id,
                action=f"context.cleanup.{result}",
                target_type="workspace-context",
                target=f"{context.workspace}/{context.context_id}",
                payload={"message": message},
            )
        finished += 1
    return finished


def workspace_record_observed(*, workspace: AgentWorkspace, pvc: Mapping[str, Any] | None) -> bool:
    """The one decision the watcher, the resync and the delete task make about a
    workspace's PVC (None: none of the workspace's own is there): a deleting workspace is
    deleted once it is gone; otherwise Bound means ready, and its capacity is recorded.
    True when it changed."""
    if pvc is not None and not is_agent_workspace_pvc(pvc, workspace.agent_type):
        pvc = None
    if workspace.status == AgentWorkspace.Status.DELETING:
        return pvc is None and bool(
            AgentWorkspace.objects.filter(
                pk=workspace.pk, status=AgentWorkspace.Status.DELETING
            ).update(status=AgentWorkspace.Status.DELETED, updated_at=timezone.now())
        )
    if pvc is None or workspace.status not in LIVE:
        return False
    before = (workspace.status, workspace.capacity_bytes)
    _observe_pvc(workspace, pvc)
    if (workspace.status, workspace.capacity_bytes) == before:
        return False
    return bool(
        AgentWorkspace.objects.filter(pk=workspace.pk, status__in=LIVE).update(
            status=workspace.status, capacity_bytes=workspace.capacity_bytes
        )
    )


def workspace_pvc_observed(key: VolumeKey, pvc: Mapping[str, Any] | None) -> bool:
    """What the watcher saw of an agent workspace's PVC, recorded on the workspace
    (volumes.VolumeKind.record)."""
    namespace, agent_type = key
    workspace = (
        AgentWorkspace.objects.filter(namespace=namespace, agent_type=agent_type)
        .exclude(status=AgentWorkspace.Status.DELETED)
        .first()
    )
    return workspace is not None and workspace_record_observed(workspace=workspace, pvc=pvc)


def resync_workspaces(
    pvcs: dict[VolumeKey, Mapping[str, Any]], report: ResyncReport, grace: timedelta
) -> set[VolumeKey]:
    """The periodic resync's part (allocations/resync.py lists the managed PVCs once for
    every kind): each workspace recomputed from its PVC. A live workspace whose PVC the
    list did not find is looked up once: an adopted PVC our label did not reach yet is
    labelled (the watches see it from then on) and recorded. Stalled creates and deletes
    are housekeeping's (every minute)."""
    workspaces = list(AgentWorkspace.objects.exclude(status=AgentWorkspace.Status.DELETED))
    for workspace in workspaces:
        key = (workspace.namespace, workspace.agent_type)
        pvc = pvcs.get(key)
        if pvc is None and workspace.adopted and workspace.status in LIVE:
            pvc = workspace_volume(workspace).own(
                kube.get_object(PVC, workspace.namespace, workspace.pvc_name)
            )
            if pvc is not None:
                _label_adopted(workspace)
        if workspace_record_observed(workspace=workspace, pvc=pvc):
            report.changed += 1
    return {(workspace.namespace, workspace.agent_type) for workspace in workspaces}


def housekeeping() -> str:
    """What beat runs every minute: stalled PVC creates and deletes, finished cleanup
    Jobs, expired contexts, and the expansions usage reports ask for. (The PVCs' states
    come from the watcher: workspace_pvc_observed.)"""
    requeued = _requeue_stalled()
    finished = cleanup_jobs_observe()
    started = len(contexts_expire())
    for workspace_id in AgentWorkspace.objects.filter(
        status=AgentWorkspace.Status.READY, usage_bytes__isnull=False
    ).values_list("pk", flat=True):
        workspace_expand(workspace_id)
    return f"requeued {requeued}, cleanups finished {finished}, started {started}"


def _requeue_stalled() -> int:
    """PVC creates and deletes whose task never ran (the broker was down when it was
    queued) or gave up: queued again once they have waited a minute."""
    cutoff = timezone.now() - STALLED_AFTER
    stalled = AgentWorkspace.objects.filter(
        status__in=(AgentWorkspace.Status.PROVISIONING, AgentWorkspace.Status.DELETING),
        updated_at__lt=cutoff,
    )
    for workspace in stalled:
        if workspace.status == AgentWorkspace.Status.PROVISIONING:
            queue.create_pvc(workspace.pk)
        else:
            queue.delete_pvc(workspace.pk)
    return len(stalled)

"""Per-context workspaces (seed 001): the shared ReadWriteMany PVC of each agent type,
the registry of context ids on it, TTL cleanup through a Job, and volume expansion.

Writes record their audit entry in the same transaction and touch Kubernetes after
commit, through the tasks in allocations/tasks.py.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from allocations.models import AgentWorkspace, WorkspaceContext
from rules.model import OperationError, check_context_id
from contextsvc.core import namespaces
from contextsvc.core.errors import (
    AlreadyExists,
    Conflict,
    InvalidRequest,
    KubernetesFailure,
    NotFound,
)
from contextsvc.core.services import audit_record
from contextsvc.core.validators import is_dns1123_label, is_dns1123_subdomain
from contextsvc.kube import client as kube
from contextsvc.kube import objects
from contextsvc.quantity import format_bytes, is_positive_quantity, parse_quantity

SYSTEM_ACTOR = "system:workspaces"
LIVE = (
    AgentWorkspace.Status.PROVISIONING,
    AgentWorkspace.Status.READY,
    AgentWorkspace.Status.FAILED,
)


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
) -> tuple[AgentWorkspace, bool]:
    """Create the agent type's workspace PVC, or adopt the one that exists with the seed's
    labels. Returns (workspace, created)."""
    from allocations.tasks import create_workspace_pvc

    initial = initial_size or settings.CS_WORKSPACE_INITIAL_SIZE
    maximum = max_size or settings.CS_WORKSPACE_MAX_SIZE
    storage_class = storage_class or settings.CS_WORKSPACE_STORAGE_CLASS or ""
    _check_request(agent_type, namespace, initial, maximum, storage_class)
    existing = AgentWorkspace.objects.filter(
        agent_type=agent_type, namespace=namespace, status__in=LIVE
    ).first()
    if existing is not None:
        return existing, False
    name = objects.agent_workspace_pvc_name(agent_type)
    try:
        pvc = kube.get_object(objects.PVC, namespace, name)
    except kube.KubeError as exc:
        raise KubernetesFailure(exc.message) from exc
    workspace = AgentWorkspace(
        agent_type=agent_type,
        namespace=namespace,
        storage_class=storage_class,
        initial_size=initial,
        max_size=maximum,
        requested_bytes=_bytes(initial),
        created_by=actor,
    )
    if pvc is not None:
        labels = objects.labels_of(pvc)
        if labels.get(objects.WORKSPACE_TYPE_LABEL) != objects.AGENT_WORKSPACE or (
            labels.get(objects.WORKSPACE_AGENT_LABEL) != agent_type
        ):
            raise AlreadyExists(
                f'PVC "{name}" exists in namespace "{namespace}" and is not an agent workspace'
            )
        spec = pvc.get("spec") or {}
        workspace.adopted = True
        workspace.storage_class = str(spec.get("storageClassName") or "")
        workspace.requested_bytes = _bytes(str(spec["resources"]["requests"]["storage"]))
        _observe_pvc(workspace, pvc)
    try:
        with transaction.atomic():
            workspace.save()
            audit_record(
                actor=actor,
                action="workspace.adopt" if workspace.adopted else "workspace.create",
                target_type="workspace",
                target=f"{namespace}/{agent_type}",
                payload={"initial": initial, "max": maximum, "storage_class": storage_class},
            )
            if not workspace.adopted:
                workspace_id = workspace.pk
                transaction.on_commit(lambda: create_workspace_pvc.delay(workspace_id))
    except IntegrityError:
        raise AlreadyExists(
            f'the workspace of "{agent_type}" in "{namespace}" already exists'
        ) from None
    return workspace, True


def _observe_pvc(workspace: AgentWorkspace, pvc: dict[str, Any]) -> None:
    status = pvc.get("status") or {}
    capacity = (status.get("capacity") or {}).get("storage")
    workspace.capacity_bytes = _bytes(str(capacity)) if capacity else None
    if status.get("phase") == "Bound":
        workspace.status = AgentWorkspace.Status.READY


def workspace_list_live() -> QuerySet[AgentWorkspace]:
    """Live workspaces, each with ``active_contexts`` counted (one query)."""
    return (
        AgentWorkspace.objects.filter(status__in=LIVE)
        .annotate(
            active_contexts=Count(
                "contexts", filter=Q(contexts__status=WorkspaceContext.Status.ACTIVE)
            )
        )
        .order_by("namespace", "agent_type")
    )


def workspace_get(*, namespace: str, agent_type: str) -> AgentWorkspace:
    found = AgentWorkspace.objects.filter(
        namespace=namespace, agent_type=agent_type, status__in=LIVE
    ).first()
    if found is None:
        raise NotFound(f'no workspace for agent "{agent_type}" in namespace "{namespace}"')
    return found


def workspace_delete(*, namespace: str, agent_type: str, force: bool, actor: str) -> AgentWorkspace:
    from allocations.tasks import delete_workspace_pvc

    with transaction.atomic():
        workspace = (
            AgentWorkspace.objects.select_for_update()
            .filter(namespace=namespace, agent_type=agent_type, status__in=LIVE)
            .first()
        )
        if workspace is None:
            raise NotFound(f'no workspace for agent "{agent_type}" in namespace "{namespace}"')
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
            action="workspace.delete",
            target_type="workspace",
            target=f"{namespace}/{agent_type}",
            payload={"force": force, "active_contexts": active},
        )
        workspace_id = workspace.pk
        transaction.on_commit(lambda: delete_workspace_pvc.delay(workspace_id))
    return workspace


# --- Contexts -----------------------------------------------------------------------------------


def context_json(context: WorkspaceContext) -> dict[str, Any]:
    """The ``.context.json`` the agent writes into /workspace/<context id> (seed 001)."""
    return {
        "context_id": context.context_id,
        "agent": context.workspace.agent_type,
        "namespace": context.workspace.namespace,
        "created_at": context.created_at.isoformat().replace("+00:00", "Z"),
        "last_accessed_at": context.last_accessed_at.isoformat().replace("+00:00", "Z"),
        "ttl_days": round(context.ttl_seconds / 86400, 2),
        "disk_usage_bytes": context.disk_usage_bytes,
    }


def context_touch(
    *,
    namespace: str,
    agent_type: str,
    context_id: str,
    disk_usage_bytes: int | None = None,
    actor: str,
) -> tuple[WorkspaceContext, bool]:
    """Register or touch a context; an expired one comes back empty. (context, created)"""
    try:
        check_context_id(context_id)
    except OperationError as exc:
        raise InvalidRequest(f"contextId {str(exc).split(': ', 1)[1]}") from None
    if disk_usage_bytes is not None and disk_usage_bytes < 0:
        raise InvalidRequest("diskUsageBytes must not be negative")
    workspace = workspace_get(namespace=namespace, agent_type=agent_type)
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
                action="context.register",
                target_type="workspace-context",
                target=f"{namespace}/{agent_type}/{context_id}",
            )
    return context, created


def workspace_report_usage(
    *, namespace: str, agent_type: str, used_bytes: int, actor: str
) -> AgentWorkspace:
    """The agents' measure of the whole PVC (``df``); may trigger an expansion."""
    from allocations.tasks import expand_workspace

    if used_bytes < 0:
        raise InvalidRequest("usedBytes must not be negative")
    workspace = workspace_get(namespace=namespace, agent_type=agent_type)
    AgentWorkspace.objects.filter(pk=workspace.pk).update(
        usage_bytes=used_bytes, usage_reported_at=timezone.now()
    )
    workspace_id = workspace.pk
    transaction.on_commit(lambda: expand_workspace.delay(workspace_id))
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
    name = (pvc.get("spec") or {}).get("storageClassName") or workspace.storage_class
    if not name:
        return "the PVC has no StorageClass, so nothing says it can expand"
    storage_class = kube.get_object(objects.STORAGE_CLASS, None, name)
    if storage_class is None:
        return f'StorageClass "{name}" does not exist'
    if storage_class.get("provisioner") in settings.CS_ELASTIC_PROVISIONERS:
        return f'StorageClass "{name}" ({storage_class["provisioner"]}) grows by itself'
    if not storage_class.get("allowVolumeExpansion"):
        return f'StorageClass "{name}" does not allow volume expansion'
    return None


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
    pvc = kube.get_object(objects.PVC, workspace.namespace, workspace.pvc_name)
    if pvc is None:
        _note(workspace, "the PVC is missing")
        return "missing"
    reason = _class_cannot_expand(workspace, pvc)
    if reason is not None:
        _note(workspace, f"not expanded: {reason}")
        return "skipped"
    size = format_bytes(target)
    kube.patch_object(
        objects.PVC,
        workspace.namespace,
        workspace.pvc_name,
        {"spec": {"resources": {"requests": {"storage": size}}}},
    )
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


def contexts_due(now: Any = None) -> QuerySet[WorkspaceContext]:
    """Active contexts not touched within their TTL."""
    from django.db.models import DurationField, ExpressionWrapper, F

    now = now or timezone.now()
    return (
        WorkspaceContext.objects.filter(status=WorkspaceContext.Status.ACTIVE)
        .annotate(
            expires=ExpressionWrapper(
                F("last_accessed_at") + F("ttl_seconds") * timedelta(seconds=1),
                output_field=DurationField(),
            )
        )
        .select_related("workspace")
    ).filter(expires__lte=now)


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
    name = objects.cleanup_job_name(workspace.agent_type, context.pk)
    with transaction.atomic():
        claimed = WorkspaceContext.objects.filter(
            pk=context.pk, status=WorkspaceContext.Status.ACTIVE
        ).update(status=WorkspaceContext.Status.EXPIRING, cleanup_job=name)
        if not claimed:
            return  # touched again, or another worker took it
        audit_record(
            actor=SYSTEM_ACTOR,
            action="context.expire",
            target_type="workspace-context",
            target=f"{workspace}/{context.context_id}",
            payload={"job": name},
        )
    body = objects.cleanup_job_manifest(
        name=name,
        namespace=workspace.namespace,
        agent_type=workspace.agent_type,
        context_id=context.context_id,
        image=settings.CS_CLEANUP_IMAGE,
    )
    try:
        kube.create_if_absent(objects.JOB, body)
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
        job = kube.get_object(objects.JOB, context.workspace.namespace, context.cleanup_job)
        outcome = objects.job_outcome(job) if job else ("failed", "the cleanup Job disappeared")
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
                action=f"context.cleanup.{result}",
                target_type="workspace-context",
                target=f"{context.workspace}/{context.context_id}",
                payload={"message": message},
            )
        finished += 1
    return finished


def workspaces_observe() -> int:
    """Workspace PVCs: Bound → ready, capacity, and PVCs gone → deleted."""
    changed = 0
    for workspace in AgentWorkspace.objects.exclude(status=AgentWorkspace.Status.DELETED):
        pvc = kube.get_object(objects.PVC, workspace.namespace, workspace.pvc_name)
        if workspace.status == AgentWorkspace.Status.DELETING:
            if pvc is None:
                AgentWorkspace.objects.filter(pk=workspace.pk).update(
                    status=AgentWorkspace.Status.DELETED
                )
                changed += 1
            continue
        if pvc is None:
            continue
        before = (workspace.status, workspace.capacity_bytes)
        _observe_pvc(workspace, pvc)
        if (workspace.status, workspace.capacity_bytes) != before:
            AgentWorkspace.objects.filter(pk=workspace.pk).update(
                status=workspace.status, capacity_bytes=workspace.capacity_bytes
            )
            changed += 1
    return changed

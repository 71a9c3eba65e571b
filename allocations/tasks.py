"""Celery tasks. Each takes an id, re-reads the row, returns early when the work is done,
and holds the allocation's advisory lock while it talks to Kubernetes, so two workers on
the same allocation take turns instead of fighting."""

from __future__ import annotations

import logging

from celery import Task, shared_task
from django.utils import timezone

from allocations import provisioning, services
from allocations.models import Allocation, ContextResource, Phase
from contextsvc.core import locks
from contextsvc.kube import client as kube
from contextsvc.kube import objects

logger = logging.getLogger(__name__)

LOCK_BUSY_COUNTDOWN = 1.0
MAX_BACKOFF = 30.0
# Deletes are quick, but Pods and PVCs leave through controllers; poll that long at most
# before leaving the rest to the watcher and the periodic resync.
RELEASE_POLLS = 60


def _backoff(retries: int) -> float:
    return float(min(2**retries, MAX_BACKOFF))


@shared_task(bind=True, name="allocations.tasks.reconcile_allocation", max_retries=None)
def reconcile_allocation(self: Task, allocation_id: int) -> str:
    with locks.try_advisory_lock(locks.ALLOCATION, allocation_id) as acquired:
        if not acquired:
            raise self.retry(countdown=LOCK_BUSY_COUNTDOWN)
        allocation = Allocation.objects.filter(pk=allocation_id).first()
        if allocation is None or allocation.phase not in (
            Phase.REQUESTED,
            Phase.PROVISIONING,
            Phase.READY,
        ):
            return "nothing to do"
        try:
            created = provisioning.apply(allocation)
        except provisioning.NameCollision as exc:
            services.allocation_fail(
                allocation_id=allocation_id, reason="NameCollision", message=str(exc)
            )
            return "failed"
        except kube.KubeError as exc:
            deadline = services.allocation_reconcile_deadline(allocation)
            if exc.transient and timezone.now() < deadline:
                services.allocation_note_retry(allocation_id=allocation_id, message=exc.message)
                raise self.retry(countdown=_backoff(self.request.retries)) from exc
            reason = exc.reason if not exc.transient else "DeadlineExceeded"
            services.allocation_fail(
                allocation_id=allocation_id, reason=reason or "KubernetesError", message=exc.message
            )
            return "failed"
        services.allocation_mark_applied(allocation_id=allocation_id, created=created)
        return f"applied {len(created)}"


def _delete_until_gone(task: Task, allocation: Allocation) -> bool:
    """Delete what the allocation owns. True when nothing is left; otherwise the task is
    retried (raising) until the polls run out, after which the resync finishes the job."""
    try:
        left = provisioning.delete_owned(allocation)
    except kube.KubeError as exc:
        if exc.transient:
            raise task.retry(countdown=_backoff(task.request.retries)) from exc
        logger.error("cannot delete objects of %s: %s", allocation.name, exc.message)
        return False
    if left.empty():
        return True
    if task.request.retries < RELEASE_POLLS:
        raise task.retry(countdown=1.0)
    logger.warning("%s still owns %s; the resync will finish", allocation.name, left.names())
    return False


@shared_task(bind=True, name="allocations.tasks.release_allocation", max_retries=None)
def release_allocation(self: Task, allocation_id: int) -> str:
    with locks.try_advisory_lock(locks.ALLOCATION, allocation_id) as acquired:
        if not acquired:
            raise self.retry(countdown=LOCK_BUSY_COUNTDOWN)
        allocation = Allocation.objects.filter(pk=allocation_id, phase=Phase.RELEASING).first()
        if allocation is None:
            return "nothing to do"
        if _delete_until_gone(self, allocation):
            services.allocation_mark_released(allocation_id=allocation_id)
            return "released"
        return "pending"


@shared_task(bind=True, name="allocations.tasks.rollback_allocation", max_retries=None)
def rollback_allocation(self: Task, allocation_id: int) -> str:
    with locks.try_advisory_lock(locks.ALLOCATION, allocation_id) as acquired:
        if not acquired:
            raise self.retry(countdown=LOCK_BUSY_COUNTDOWN)
        allocation = Allocation.objects.filter(
            pk=allocation_id, phase=Phase.FAILED, ready_at__isnull=True
        ).first()
        if allocation is None:
            return "nothing to do"
        if _delete_until_gone(self, allocation):
            services.allocation_note_rolled_back(allocation_id=allocation_id)
            return "rolled back"
        return "pending"


# --- Named contexts -----------------------------------------------------------------------------


@shared_task(bind=True, name="allocations.tasks.reconcile_context", max_retries=None)
def reconcile_context(self: Task, context_id: int) -> str:
    """The safety net behind ``POST /v1/contexts``, which creates the PVC itself: this
    runs when that create failed transiently, or when the resync finds a context whose PVC
    never appeared."""
    with locks.try_advisory_lock(locks.CONTEXT, context_id) as acquired:
        if not acquired:
            raise self.retry(countdown=LOCK_BUSY_COUNTDOWN)
        try:
            return services.context_apply(context_id=context_id)
        except services.ContextNameTaken:
            return "name taken"
        except kube.KubeError as error:
            if error.transient and self.request.retries < 10:
                raise self.retry(countdown=_backoff(self.request.retries)) from error
            services.context_fail(context_id=context_id, message=error.message)
            return "failed"


@shared_task(bind=True, name="allocations.tasks.delete_context", max_retries=None)
def delete_context(self: Task, context_id: int) -> str:
    context = ContextResource.objects.filter(
        pk=context_id, status=ContextResource.Status.DELETING
    ).first()
    if context is None:
        return "nothing to do"
    name = objects.context_pvc_name(context.name)
    try:
        pvc = kube.get_object(objects.PVC, context.namespace, name)
        # Only the context's own PVC is deleted: a failed context may never have had one,
        # and an object of somebody else's under that name is theirs.
        if pvc is not None and objects.is_context_pvc(pvc, context.name):
            kube.delete_object(objects.PVC, context.namespace, name)
            pvc = kube.get_object(objects.PVC, context.namespace, name)
        gone = pvc is None or not objects.is_context_pvc(pvc, context.name)
    except kube.KubeError as exc:
        raise self.retry(countdown=_backoff(self.request.retries)) from exc
    if not gone and self.request.retries < RELEASE_POLLS:
        raise self.retry(countdown=1.0)
    if gone:
        services.context_observe(context_id=context_id, bound=None, gone=True)
        return "deleted"
    return "pending"


@shared_task(name="allocations.tasks.resync")
def resync() -> str:
    """Beat's safety net: recompute every allocation from list calls."""
    from allocations.resync import resync_all

    with locks.try_advisory_lock(locks.SINGLETON, locks.singleton_key("resync")) as acquired:
        if not acquired:
            return "another resync is running"
        return resync_all().summary()


# --- Agent workspaces -----------------------------------------------------------------------------


@shared_task(bind=True, name="allocations.tasks.create_workspace_pvc", max_retries=10)
def create_workspace_pvc(self: Task, workspace_id: int) -> str:
    from allocations import workspaces
    from allocations.models import AgentWorkspace

    workspace = AgentWorkspace.objects.filter(
        pk=workspace_id, status=AgentWorkspace.Status.PROVISIONING
    ).first()
    if workspace is None:
        return "nothing to do"
    body = objects.agent_workspace_pvc_manifest(
        agent_type=workspace.agent_type,
        namespace=workspace.namespace,
        size=workspace.initial_size,
        storage_class=workspace.storage_class or None,
    )
    try:
        kube.create_if_absent(objects.PVC, body)
    except kube.KubeError as error:
        if error.transient:
            raise self.retry(countdown=_backoff(self.request.retries)) from error
        AgentWorkspace.objects.filter(pk=workspace_id).update(
            status=AgentWorkspace.Status.FAILED, message=error.message
        )
        return "failed"
    workspaces.workspaces_observe()
    return "created"


@shared_task(bind=True, name="allocations.tasks.delete_workspace_pvc", max_retries=None)
def delete_workspace_pvc(self: Task, workspace_id: int) -> str:
    from allocations import workspaces
    from allocations.models import AgentWorkspace

    workspace = AgentWorkspace.objects.filter(
        pk=workspace_id, status=AgentWorkspace.Status.DELETING
    ).first()
    if workspace is None:
        return "nothing to do"
    try:
        kube.delete_object(objects.PVC, workspace.namespace, workspace.pvc_name)
        workspaces.workspaces_observe()
    except kube.KubeError as error:
        raise self.retry(countdown=_backoff(self.request.retries)) from error
    workspace.refresh_from_db()
    if workspace.status != AgentWorkspace.Status.DELETED and self.request.retries < RELEASE_POLLS:
        raise self.retry(countdown=1.0)
    return workspace.status


@shared_task(bind=True, name="allocations.tasks.expand_workspace", max_retries=30)
def expand_workspace(self: Task, workspace_id: int) -> str:
    from allocations import workspaces

    with locks.try_advisory_lock(locks.WORKSPACE, workspace_id) as acquired:
        if not acquired:
            # The running one judged older usage; this report may ask for more.
            raise self.retry(countdown=LOCK_BUSY_COUNTDOWN)
        return workspaces.workspace_expand(workspace_id)


@shared_task(name="allocations.tasks.workspace_housekeeping")
def workspace_housekeeping() -> str:
    """Beat: PVC states, finished cleanup Jobs, expired contexts, expansions."""
    from allocations import workspaces
    from allocations.models import AgentWorkspace

    with locks.try_advisory_lock(locks.SINGLETON, locks.singleton_key("workspaces")) as acquired:
        if not acquired:
            return "another housekeeping run is active"
        observed = workspaces.workspaces_observe()
        finished = workspaces.cleanup_jobs_observe()
        started = len(workspaces.contexts_expire())
        for workspace_id in AgentWorkspace.objects.filter(
            status=AgentWorkspace.Status.READY, usage_bytes__isnull=False
        ).values_list("pk", flat=True):
            workspaces.workspace_expand(workspace_id)
        return f"observed {observed}, cleanups finished {finished}, started {started}"

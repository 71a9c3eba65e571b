"""Celery tasks for agent workspaces: each hands its id to a service (workspaces/services.py)."""

from __future__ import annotations

from celery import Task, shared_task

from contextsvc.infra import locks, queue
from workspaces import services
from workspaces.queue import CREATE_PVC, DELETE_PVC, EXPAND, HOUSEKEEPING


@shared_task(bind=True, name=CREATE_PVC, max_retries=10)
def create_workspace_pvc(self: Task, workspace_id: int) -> str:
    return queue.run(self, services.workspace_create_pvc, workspace_id, self.request.retries)


@shared_task(bind=True, name=DELETE_PVC, max_retries=None)
def delete_workspace_pvc(self: Task, workspace_id: int) -> str:
    return queue.run(self, services.workspace_delete_pvc, workspace_id, self.request.retries)


@shared_task(bind=True, name=EXPAND, max_retries=30)
def expand_workspace(self: Task, workspace_id: int) -> str:
    # One expansion at a time per workspace; a report that finds the lock busy retries,
    # since it may ask for more than the one that is running judged.
    return queue.run(
        self, services.workspace_expand, workspace_id, lock=(locks.WORKSPACE, workspace_id)
    )


@shared_task(name=HOUSEKEEPING)
def housekeeping() -> str:
    """Beat: PVC states, finished cleanup Jobs, expired contexts, expansions."""
    with locks.try_advisory_lock(locks.SINGLETON, locks.singleton_key("workspaces")) as acquired:
        if not acquired:
            return "another housekeeping run is active"
        return services.housekeeping()

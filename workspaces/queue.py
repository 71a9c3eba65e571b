"""The workspaces' tasks by name, queued after commit (contextsvc/infra/queue.py)."""

from __future__ import annotations

from contextsvc.infra.queue import after_commit

CREATE_PVC = "workspaces.tasks.create_workspace_pvc"
DELETE_PVC = "workspaces.tasks.delete_workspace_pvc"
EXPAND = "workspaces.tasks.expand_workspace"
HOUSEKEEPING = "workspaces.tasks.housekeeping"


def create_pvc(workspace_id: int) -> None:
    after_commit(CREATE_PVC, workspace_id)


def delete_pvc(workspace_id: int) -> None:
    after_commit(DELETE_PVC, workspace_id)


def expand(workspace_id: int) -> None:
    after_commit(EXPAND, workspace_id)

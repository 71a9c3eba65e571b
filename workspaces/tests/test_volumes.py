"""An agent workspace's PVC through the one volume lifecycle (contextsvc/infra/volumes.py):
a PVC of somebody else's under its name is never taken for it nor deleted, and its state
comes from the watcher, with no GET per workspace."""

from __future__ import annotations

import pytest

from contextsvc.core.models import AuditEntry
from tests.support.kube import kube_calls, make_pvc
from tests.support.unchanged import cluster
from workspaces.models import AgentWorkspace
from workspaces.services import (
    NAME_HELD,
    housekeeping,
    workspace_create_pvc,
    workspace_delete_pvc,
)
from workspaces.tests.factories import AgentWorkspaceFactory

pytestmark = [pytest.mark.cluster, pytest.mark.django_db]
NAME = "weather-service-workspace"


def test_a_pvc_of_somebody_elses_under_the_name_fails_the_workspace_and_is_left_alone(
    namespace: str,
) -> None:
    workspace = AgentWorkspaceFactory.create(
        namespace=namespace, agent_type="weather-service", status=AgentWorkspace.Status.PROVISIONING
    )
    make_pvc(namespace, NAME, modes=["ReadWriteMany"], labels={"team": "theirs"})
    # What a write of ours would change (its status, which the PV controller writes, aside).
    before = cluster(namespace)

    assert workspace_create_pvc(workspace.pk) == "failed"

    workspace.refresh_from_db()
    assert (workspace.status, workspace.message) == (AgentWorkspace.Status.FAILED, NAME_HELD)
    assert list(
        AuditEntry.objects.filter(target=str(workspace)).values_list("action", "payload")
    ) == [("workspace.fail", {"message": NAME_HELD})]
    assert cluster(namespace) == before


def test_a_deleting_workspace_never_deletes_somebody_elses_pvc_under_its_name(
    namespace: str,
) -> None:
    # Its own PVC went while no worker ran, and somebody else made one under the name.
    workspace = AgentWorkspaceFactory.create(
        namespace=namespace, agent_type="weather-service", status=AgentWorkspace.Status.DELETING
    )
    make_pvc(namespace, NAME, modes=["ReadWriteMany"], labels={"team": "theirs"})
    # What a write of ours would change (its status, which the PV controller writes, aside).
    before = cluster(namespace)

    assert workspace_delete_pvc(workspace.pk) == AgentWorkspace.Status.DELETED

    workspace.refresh_from_db()
    assert workspace.status == AgentWorkspace.Status.DELETED
    assert cluster(namespace) == before


def test_housekeeping_reads_no_workspace_pvc(namespace: str) -> None:
    """The watcher records the PVCs' states; housekeeping no longer reads each one."""
    for agent_type in ("a", "b", "c"):
        AgentWorkspaceFactory.create(
            namespace=namespace, agent_type=agent_type, status=AgentWorkspace.Status.READY
        )

    with kube_calls() as calls:
        assert housekeeping() == "requeued 0, cleanups finished 0, started 0"

    assert [call for call in calls.log if "persistentvolumeclaims" in call[2]] == []

"""Agent workspace services against the real control plane: TTL cleanup through a Job,
and expansion."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import JOB, PVC
from contextsvc.quantity import format_bytes
from tests.support.api import ApiClient
from tests.support.processes import wait_until
from tests.support.unchanged import kept
from tests.support.workspaces import complete_job, ensure, ready
from workspaces import services as workspaces
from workspaces.models import AgentWorkspace, WorkspaceContext

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
GiB = 2**30


def test_contexts_register_touch_expire_and_come_back_empty(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    path = f"/v1/agent-workspaces/{namespace}/weather-service/contexts"

    registered = agent.post(path, {"contextId": "ctx-abc123", "diskUsageBytes": 52428800})
    assert registered.status_code == 201
    body = registered.json()
    assert (body["path"], body["status"]) == ("/workspace/ctx-abc123", "active")
    assert set(body["contextJson"]) == {
        "context_id",
        "agent",
        "namespace",
        "created_at",
        "last_accessed_at",
        "ttl_days",
        "disk_usage_bytes",
    }
    assert (
        body["contextJson"]["agent"],
        body["contextJson"]["ttl_days"],
        body["contextJson"]["disk_usage_bytes"],
    ) == ("weather-service", 7, 52428800)
    # A touch moves the last access to now (from two days ago here), which the TTL counts from.
    two_days_ago = timezone.now() - timedelta(days=2)
    WorkspaceContext.objects.update(last_accessed_at=two_days_ago)
    before_touch = timezone.now()
    touched = agent.post(path, {"contextId": "ctx-abc123"})
    assert touched.status_code == 200
    last_access = datetime.fromisoformat(touched.json()["contextJson"]["last_accessed_at"])
    assert before_touch <= last_access <= timezone.now()
    assert WorkspaceContext.objects.get().last_accessed_at == last_access

    WorkspaceContext.objects.update(last_accessed_at=timezone.now() - timedelta(days=8))
    out = StringIO()
    call_command("expire_contexts", "--dry-run", stdout=out)
    assert f"would clean up {namespace}/weather-service/ctx-abc123" in out.getvalue()
    assert WorkspaceContext.objects.get().status == WorkspaceContext.Status.ACTIVE

    due = workspaces.contexts_expire()
    assert [c.context_id for c in due] == ["ctx-abc123"]
    context = WorkspaceContext.objects.get()
    assert context.status == WorkspaceContext.Status.EXPIRING
    job = kube.get_object(JOB, namespace, context.cleanup_job)
    assert job is not None
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["env"] == [{"name": "CONTEXT_ID", "value": "ctx-abc123"}]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    assert 'rm -rf -- "/workspace/$CONTEXT_ID"' in container["command"][2]
    assert container["volumeMounts"] == [
        {"name": "workspace", "mountPath": "/workspace"},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    assert pod["volumes"][0] == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": "weather-service-workspace"},
    }
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
    }
    assert pod["automountServiceAccountToken"] is False
    assert pod["restartPolicy"] == "Never"
    # Touching a context while its directory is being removed is refused, not raced.
    # (The cleanup Job's Pod is the Job controller's to make meanwhile: the rows are compared.)
    with kept():
        assert agent.post(path, {"contextId": "ctx-abc123"}).status_code == 409

    complete_job(namespace, context.cleanup_job)
    assert workspaces.cleanup_jobs_observe() == 1
    context.refresh_from_db()
    assert (context.status, context.disk_usage_bytes, context.cleanup_result) == (
        WorkspaceContext.Status.EXPIRED,
        0,
        "removed /workspace/ctx-abc123",
    )

    back = agent.post(path, {"contextId": "ctx-abc123"})
    assert back.status_code == 201
    assert (back.json()["status"], back.json()["contextJson"]["disk_usage_bytes"]) == ("active", 0)
    assert list(
        AuditEntry.objects.filter(target_type="workspace-context")
        .order_by("id")
        .values_list("action", flat=True)
    ) == [
        "context.register",
        "context.expire",
        "context.cleanup.succeeded",
        "context.register",
    ]


def test_usage_over_80_percent_doubles_the_pvc_up_to_the_cap(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace, storageClass="standard")
    workspace = ready(namespace)
    usage = f"/v1/agent-workspaces/{namespace}/weather-service/usage"

    def report(used: int) -> None:
        # Each report queues an expansion on the real worker.
        assert agent.post(usage, {"usedBytes": used}).status_code == 200

    def requested() -> str:
        pvc = kube.get_object(PVC, namespace, "weather-service-workspace")
        assert pvc is not None
        return str(pvc["spec"]["resources"]["requests"]["storage"])

    def grows_to(size: str) -> None:
        def grown() -> bool:
            row = AgentWorkspace.objects.get(pk=workspace.pk)
            return requested() == size and format_bytes(row.requested_bytes) == size

        wait_until(grown, timeout=30, message=f"the PVC to ask for {size}")

    # Below the threshold, and at the cap, an expansion (the worker's or this one) does
    # nothing, whoever runs first.
    report(3 * GiB)
    assert workspaces.workspace_expand(workspace.pk) == "nothing to do"
    assert requested() == "5Gi"
    report(int(4.5 * GiB))
    grows_to("10Gi")
    report(9 * GiB)
    grows_to("20Gi")
    report(19 * GiB)
    assert workspaces.workspace_expand(workspace.pk) == "nothing to do"
    assert requested() == "20Gi"
    workspace.refresh_from_db()
    assert workspace.expansion_note == "at its maximum size (20Gi); not expanded further"
    assert list(
        AuditEntry.objects.filter(action="workspace.expand")
        .values_list("payload__to", flat=True)
        .order_by("id")
    ) == ["10Gi", "20Gi"]


def test_classes_that_cannot_expand_are_skipped_with_the_reason(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace, storageClass="standard-fixed")
    workspace = ready(namespace)

    agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/usage", {"usedBytes": int(4.9 * GiB)}
    )

    assert workspaces.workspace_expand(workspace.pk) == "skipped"
    workspace.refresh_from_db()
    assert (
        workspace.expansion_note
        == 'not expanded: StorageClass "standard-fixed" does not allow volume expansion'
    )
    pvc = kube.get_object(PVC, namespace, "weather-service-workspace")
    assert pvc is not None
    assert pvc["spec"]["resources"]["requests"]["storage"] == "5Gi"

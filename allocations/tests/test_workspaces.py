"""Agent workspaces against the real control plane: the seed's PVC, the context registry,
TTL cleanup through a Job, expansion, and the metrics."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from allocations import workspaces
from allocations.models import AgentWorkspace, Allocation, WorkspaceContext
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube import objects
from contextsvc.quantity import format_bytes
from cs_agent.workspace import WorkspaceClient
from tests.support.api import ApiClient, issue_token
from tests.support.kube import admin_patch_status, make_pvc
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
GiB = 2**30


@pytest.fixture
def rossoctl() -> ApiClient:
    return ApiClient(issue_token("rossoctl", ["allocations"]))


@pytest.fixture
def agent() -> ApiClient:
    return ApiClient(issue_token("weather-agent", ["agent"]))


def ensure(client: ApiClient, namespace: str, **extra: Any) -> Any:
    return client.post(
        "/v1/agent-workspaces",
        {
            "agentType": "weather-service",
            "namespace": namespace,
            "initialSize": "5Gi",
            "maxSize": "20Gi",
            **extra,
        },
    )


def ready(namespace: str) -> AgentWorkspace:
    def bound() -> AgentWorkspace | None:
        workspaces.workspaces_observe()
        found = AgentWorkspace.objects.filter(namespace=namespace).first()
        return found if found and found.status == AgentWorkspace.Status.READY else None

    found = wait_until(bound, timeout=60, interval=0.3, message="the workspace PVC to bind")
    assert isinstance(found, AgentWorkspace)
    return found


def test_workspace_pvc_has_the_seed_labels_and_binds(rossoctl: ApiClient, namespace: str) -> None:
    created = ensure(rossoctl, namespace, storageClass="standard")

    assert created.status_code == 201
    assert created.json()["pvcName"] == "weather-service-workspace"
    workspace = ready(namespace)
    pvc = kube.get_object(objects.PVC, namespace, "weather-service-workspace")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {
        "rossoctl.io/type": "agent-workspace",
        "rossoctl.io/agent": "weather-service",
        "app.kubernetes.io/managed-by": "context-service",
    }
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["storageClassName"] == "standard"
    assert pvc["status"]["phase"] == "Bound"
    assert workspace.capacity_bytes == 5 * GiB
    again = ensure(rossoctl, namespace)
    assert again.status_code == 200
    assert AgentWorkspace.objects.count() == 1


def test_existing_pvcs_are_adopted_or_refused(rossoctl: ApiClient, namespace: str) -> None:
    make_pvc(
        namespace,
        "weather-service-workspace",
        modes=["ReadWriteMany"],
        size="8Gi",
        labels={"rossoctl.io/type": "agent-workspace", "rossoctl.io/agent": "weather-service"},
    )
    make_pvc(namespace, "other-workspace", modes=["ReadWriteMany"])

    adopted = ensure(rossoctl, namespace)
    refused = rossoctl.post("/v1/agent-workspaces", {"agentType": "other", "namespace": namespace})

    assert adopted.status_code == 201
    assert (adopted.json()["adopted"], adopted.json()["size"]) == (True, "8Gi")
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        f'PVC "other-workspace" exists in namespace "{namespace}" and is not an agent workspace'
    )
    assert list(AgentWorkspace.objects.values_list("agent_type", flat=True)) == ["weather-service"]


def test_an_agent_registers_contexts_only_for_its_own_type(
    rossoctl: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace)
    other = ApiClient(issue_token("coder-agent", ["agent"], agent_types=["coder"]))

    response = other.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": "ctx-1"}
    )

    assert response.status_code == 403
    assert response.json()["message"] == (
        'API client "coder-agent" may not act for agent type "weather-service"'
    )
    assert WorkspaceContext.objects.count() == 0


@pytest.mark.parametrize(
    "context_id",
    ["../etc", "a/b", "..", ".", "ctx\x00", "x" * 254, "", "-rf", " ctx", "ctx\n", "ctx\r"],
)
def test_unsafe_context_ids_are_refused(
    rossoctl: ApiClient, agent: ApiClient, namespace: str, context_id: str
) -> None:
    ensure(rossoctl, namespace)

    response = agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": context_id}
    )

    assert response.status_code == 400
    # A NUL never reaches the context-id check: every JSON body refuses it first.
    expected = (
        'field "contextId" contains a NUL character'
        if "\x00" in context_id
        else "contextId must be 1-253 of A-Z a-z 0-9 . _ : @ + - ; got"
    )
    assert response.json()["message"].startswith(expected)
    assert WorkspaceContext.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"agentType": "weather-service"}, "namespace is required"),
        ({"agentType": "weather-service", "namespace": ""}, "namespace is required"),
        ({"namespace": "team1"}, "agentType is required"),
        (
            {"agentType": "weather-service", "namespace": "Team_1"},
            "namespace must be a DNS-1123 label",
        ),
    ],
)
def test_missing_fields_are_named(rossoctl: ApiClient, body: dict[str, Any], message: str) -> None:
    response = rossoctl.post("/v1/agent-workspaces", body)

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )
    assert AgentWorkspace.objects.count() == 0
    assert not AuditEntry.objects.filter(target_type="workspace").exists()


@pytest.mark.parametrize("body", [{"usedBytes": 2**63}, {"usedBytes": -1}])
def test_a_usage_report_out_of_range_is_refused(
    rossoctl: ApiClient, agent: ApiClient, namespace: str, body: dict[str, Any]
) -> None:
    """Found by schemathesis: 960254641067783136215040 bytes was a 500."""
    ensure(rossoctl, namespace)

    response = agent.post(f"/v1/agent-workspaces/{namespace}/weather-service/usage", body)

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": f"usedBytes must be between 0 and {2**63 - 1}"},
    )
    assert AgentWorkspace.objects.get().usage_bytes is None


@pytest.mark.parametrize("length", [225, 253])
def test_the_longest_context_ids_are_registered_and_audited_whole(
    rossoctl: ApiClient, agent: ApiClient, namespace: str, length: int
) -> None:
    """Valid up to 253 characters; the audit target (namespace/agent type/id) used to
    overflow its column from 225 on, a 500 with nothing written."""
    ensure(rossoctl, namespace)
    context_id = "c" * length

    response = agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": context_id}
    )

    assert response.status_code == 201
    assert response.json()["contextId"] == context_id
    assert list(
        AuditEntry.objects.filter(target_type="workspace-context").values_list("target", flat=True)
    ) == [f"{namespace}/weather-service/{context_id}"]


def test_the_agent_client_opens_its_context_directory_and_reports_usage(
    rossoctl: ApiClient, namespace: str, web_server: str, tmp_path: Path
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    token = issue_token("weather-pod", ["agent"], agent_types=["weather-service"])
    # tmp_path stands in for the PVC mounted at /workspace.
    client = WorkspaceClient(
        web_server, token, agent_type="weather-service", namespace=namespace, root=tmp_path
    )

    directory = client.open_context("ctx-7")

    assert directory == tmp_path / "ctx-7"
    written = json.loads((directory / ".context.json").read_text())
    assert (written["context_id"], written["agent"], written["namespace"]) == (
        "ctx-7",
        "weather-service",
        namespace,
    )
    (directory / "data.csv").write_bytes(b"x" * 1000)
    expected = 1000 + (directory / ".context.json").stat().st_size

    reported = client.report_usage("ctx-7")

    assert WorkspaceContext.objects.get(context_id="ctx-7").disk_usage_bytes == expected
    row = AgentWorkspace.objects.get(namespace=namespace)
    assert reported["usageBytes"] == row.usage_bytes
    assert row.usage_bytes is not None
    assert row.usage_bytes > 0


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
    touched = agent.post(path, {"contextId": "ctx-abc123"})
    assert touched.status_code == 200
    assert (
        touched.json()["contextJson"]["last_accessed_at"] >= body["contextJson"]["last_accessed_at"]
    )

    WorkspaceContext.objects.update(last_accessed_at=timezone.now() - timedelta(days=8))
    out = StringIO()
    call_command("expire_contexts", "--dry-run", stdout=out)
    assert f"would clean up {namespace}/weather-service/ctx-abc123" in out.getvalue()
    assert WorkspaceContext.objects.get().status == WorkspaceContext.Status.ACTIVE

    due = workspaces.contexts_expire()
    assert [c.context_id for c in due] == ["ctx-abc123"]
    context = WorkspaceContext.objects.get()
    assert context.status == WorkspaceContext.Status.EXPIRING
    job = kube.get_object(objects.JOB, namespace, context.cleanup_job)
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


def complete_job(namespace: str, name: str) -> None:
    """What the Job controller and a kubelet would write when the Pod succeeded."""
    now = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    admin_patch_status(
        objects.JOB,
        namespace,
        name,
        {
            "startTime": now,
            "completionTime": now,
            "succeeded": 1,
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "lastTransitionTime": now,
                    "lastProbeTime": now,
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                },
                {
                    "type": "Complete",
                    "status": "True",
                    "lastTransitionTime": now,
                    "lastProbeTime": now,
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                },
            ],
        },
    )


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
        pvc = kube.get_object(objects.PVC, namespace, "weather-service-workspace")
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
    pvc = kube.get_object(objects.PVC, namespace, "weather-service-workspace")
    assert pvc is not None
    assert pvc["spec"]["resources"]["requests"]["storage"] == "5Gi"


def test_metrics_parse_and_carry_every_series(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts",
        {"contextId": "ctx-1", "diskUsageBytes": 1234},
    )
    agent.post(f"/v1/agent-workspaces/{namespace}/weather-service/usage", {"usedBytes": 4321})
    reader = issue_token("prometheus", ["read"])
    now = timezone.now()
    # Became ready three days ago in 4 s, and just now in 40 s: both count, for ever.
    for name, ago, took in (("old", timedelta(days=3), 4), ("new", timedelta(0), 40)):
        row = Allocation.objects.create(
            name=name, namespace=namespace, replicas=1, strategy="shared", requester="user:test"
        )
        Allocation.objects.filter(pk=row.pk).update(
            phase="released",
            requested_at=now - ago - timedelta(seconds=took),
            ready_at=now - ago,
        )

    refused = Client().get("/metrics")
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {reader}"})

    assert refused.status_code == 401
    assert response.status_code == 200
    families = {
        family.name: family for family in text_string_to_metric_families(response.content.decode())
    }
    assert set(families) >= {
        "rossoctl_context_workspace_bytes",
        "rossoctl_workspace_pvc_usage_bytes",
        "rossoctl_workspace_pvc_capacity_bytes",
        "rossoctl_context_last_accessed_timestamp",
        "contextsvc_allocations",
        "contextsvc_allocation_time_to_ready_seconds",
        "contextsvc_approvals_pending",
        "contextsvc_approval_decision_latency_seconds",
        "contextsvc_reconcile_errors",
    }
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in families.values()
        for s in family.samples
    }
    labels = (("agent", "weather-service"), ("context_id", "ctx-1"), ("namespace", namespace))
    assert samples[("rossoctl_context_workspace_bytes", labels)] == 1234
    workspace_labels = (("agent", "weather-service"), ("namespace", namespace))
    assert samples[("rossoctl_workspace_pvc_usage_bytes", workspace_labels)] == 4321
    assert samples[("rossoctl_workspace_pvc_capacity_bytes", workspace_labels)] == 5 * GiB
    ready_seconds = "contextsvc_allocation_time_to_ready_seconds"
    assert [
        samples[(f"{ready_seconds}_bucket", (("le", le),))] for le in ("2.0", "5.0", "60.0", "+Inf")
    ] == [0, 1, 2, 2]
    assert samples[(f"{ready_seconds}_sum", ())] == 44


def test_a_workspace_with_active_contexts_is_only_deleted_by_force(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    agent.post(f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": "ctx-1"})
    path = f"/v1/agent-workspaces/{namespace}/weather-service"

    refused = rossoctl.delete(path)
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        "the workspace has 1 active context(s); delete with force=true to remove it anyway"
    )
    assert kube.get_object(objects.PVC, namespace, "weather-service-workspace") is not None

    assert rossoctl.delete(path + "?force=true").status_code == 204
    wait_until(
        lambda: AgentWorkspace.objects.get().status == AgentWorkspace.Status.DELETED,
        timeout=60,
        message="the workspace PVC to be deleted",
    )
    assert kube.get_object(objects.PVC, namespace, "weather-service-workspace") is None

"""/v1/agent-workspaces against the real control plane: the seed's PVC, adoption, the context
registry as agents use it, validation, and deletion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.pvc import pvc_is_bound
from cs_agent.sandbox import SandboxError
from cs_agent.workspace import WorkspaceClient
from tests.support.api import ApiClient, issue_token
from tests.support.kube import make_pvc
from tests.support.processes import wait_until
from tests.support.unchanged import kept
from tests.support.workspaces import ensure, ready
from workspaces.models import AgentWorkspace, WorkspaceContext

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
GiB = 2**30


def test_workspace_pvc_has_the_seed_labels_and_binds(rossoctl: ApiClient, namespace: str) -> None:
    created = ensure(rossoctl, namespace, storageClass="standard")

    assert created.status_code == 201
    assert created.json()["pvcName"] == "weather-service-workspace"
    workspace = ready(namespace)
    pvc = kube.get_object(PVC, namespace, "weather-service-workspace")
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
    wait_until(
        lambda: all(
            pvc_is_bound(kube.get_object(PVC, namespace, name) or {})
            for name in ("weather-service-workspace", "other-workspace")
        ),
        timeout=60,
        message="both PVCs to bind",
    )
    ready(namespace)
    # Somebody else's PVC under the name: refused, and it (and everything else) untouched
    # (compared once the adoption's own writes have settled).
    with kept(namespace):
        refused = rossoctl.post(
            "/v1/agent-workspaces", {"agentType": "other", "namespace": namespace}
        )

    assert adopted.status_code == 201
    assert (adopted.json()["adopted"], adopted.json()["size"]) == (True, "8Gi")
    # Labelled ours when adopted: the watcher's PVC events reach it (ready() saw them).
    assert (kube.get_object(PVC, namespace, "weather-service-workspace") or {})["metadata"][
        "labels"
    ] == {
        "rossoctl.io/type": "agent-workspace",
        "rossoctl.io/agent": "weather-service",
        "app.kubernetes.io/managed-by": "context-service",
    }
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        f'PVC "other-workspace" exists in namespace "{namespace}" and is not an agent workspace'
    )
    assert list(AgentWorkspace.objects.values_list("agent_type", flat=True)) == ["weather-service"]


def test_an_agent_registers_contexts_only_for_its_own_type(
    rossoctl: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    other = ApiClient(issue_token("coder-agent", ["agent"], agent_types=["coder"]))

    with kept(namespace):
        response = other.post(
            f"/v1/agent-workspaces/{namespace}/weather-service/contexts", {"contextId": "ctx-1"}
        )

    assert response.status_code == 403
    assert response.json()["message"] == (
        'API client "coder-agent" may not act for agent type "weather-service"'
    )


@pytest.mark.parametrize(
    "context_id",
    ["../etc", "a/b", "..", ".", "ctx\x00", "x" * 254, "", "-rf", " ctx", "ctx\n", "ctx\r"],
)
def test_unsafe_context_ids_are_refused(
    rossoctl: ApiClient, agent: ApiClient, namespace: str, context_id: str
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)

    with kept(namespace):
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
        # Found by schemathesis: sizes past a bigint of bytes were a 500.
        (
            {
                "agentType": "weather-service",
                "namespace": "team1",
                "initialSize": "+86231.50294Pi",
                "maxSize": "+2789350261117853365023302Ki",
            },
            "initialSize must be at most 8Ei",
        ),
        (
            {"agentType": "weather-service", "namespace": "team1", "maxSize": "9Ei"},
            "maxSize must be at most 8Ei",
        ),
    ],
)
def test_missing_fields_are_named(rossoctl: ApiClient, body: dict[str, Any], message: str) -> None:
    with kept():
        response = rossoctl.post("/v1/agent-workspaces", body)

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )


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
    # Disk use is the blocks the files hold (a 1000-byte file takes a whole block).
    expected = sum(
        (directory / name).stat().st_blocks * 512 for name in ("data.csv", ".context.json")
    )
    assert expected >= 1000 + (directory / ".context.json").stat().st_size

    reported = client.report_usage("ctx-7")

    assert WorkspaceContext.objects.get(context_id="ctx-7").disk_usage_bytes == expected
    row = AgentWorkspace.objects.get(namespace=namespace)
    assert reported["usageBytes"] == row.usage_bytes
    assert row.usage_bytes is not None
    assert row.usage_bytes > 0


def test_the_agent_client_refuses_a_context_directory_that_is_a_link(
    rossoctl: ApiClient, namespace: str, web_server: str, tmp_path: Path
) -> None:
    ensure(rossoctl, namespace)
    ready(namespace)
    token = issue_token("weather-pod", ["agent"], agent_types=["weather-service"])
    client = WorkspaceClient(
        web_server, token, agent_type="weather-service", namespace=namespace, root=tmp_path
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ctx-8").symlink_to(elsewhere)

    with pytest.raises(SandboxError) as refused:
        client.open_context("ctx-8")

    assert str(refused.value) == (
        f"{tmp_path}/ctx-8 is a symbolic link: the agent does not follow it"
    )
    assert list(elsewhere.iterdir()) == []


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
    assert kube.get_object(PVC, namespace, "weather-service-workspace") is not None

    assert rossoctl.delete(path + "?force=true").status_code == 204
    wait_until(
        lambda: AgentWorkspace.objects.get().status == AgentWorkspace.Status.DELETED,
        timeout=60,
        message="the workspace PVC to be deleted",
    )
    assert kube.get_object(PVC, namespace, "weather-service-workspace") is None


def test_workspaces_and_their_contexts_are_read_as_they_were_recorded(
    rossoctl: ApiClient, agent: ApiClient, namespace: str
) -> None:
    ensure(rossoctl, namespace, storageClass="standard")
    ready(namespace)
    agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts",
        {"contextId": "ctx-read", "diskUsageBytes": 10},
    )
    one = rossoctl.get(f"/v1/agent-workspaces/{namespace}/weather-service").json()

    assert {key: one[key] for key in ("agentType", "namespace", "pvcName", "status", "size")} == {
        "agentType": "weather-service",
        "namespace": namespace,
        "pvcName": "weather-service-workspace",
        "status": "ready",
        "size": "5Gi",
    }
    assert rossoctl.get("/v1/agent-workspaces", namespace=namespace).json() == {"items": [one]}
    assert rossoctl.get("/v1/agent-workspaces", namespace="nowhere").json() == {"items": []}
    contexts = rossoctl.get(f"/v1/agent-workspaces/{namespace}/weather-service/contexts").json()
    assert [(c["contextId"], c["status"], c["path"]) for c in contexts["items"]] == [
        ("ctx-read", "active", "/workspace/ctx-read")
    ]
    missing = rossoctl.get(f"/v1/agent-workspaces/{namespace}/other-agent/contexts")
    assert (missing.status_code, missing.json()["message"]) == (
        404,
        f'no workspace for agent "other-agent" in namespace "{namespace}"',
    )

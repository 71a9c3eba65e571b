"""The deployed RBAC grants exactly the API calls the code makes, and it is enough: the
service runs a whole allocation lifecycle, a warm-pool claim, a template profile, an agent
workspace with cleanup and expansion, and an approval as the deployed ServiceAccount; and
the API server refuses what it may not do."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone

from allocations.models import Phase
from allocations.requests import PoolRequest
from allocations.services.create import allocation_create
from allocations.services.release import allocation_release
from approvals.services.check import approval_check
from approvals.services.decisions import approval_approve
from config.celery import app as celery_app
from contextsvc.core import capabilities
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.kube import access
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import NETWORK_POLICY, POD, PVC, SANDBOX, SANDBOX_CLAIM
from contextsvc.kube.objects.labels import pool_selector
from devenv.system import REPO_DIR
from profiles.services import profile_save
from tests.support.kube import make_pvc, make_warm_pool, wait_for_phase
from tests.support.processes import ManagedProcess, celery_argv, child_env, manage_argv, wait_until
from workspaces import services as workspaces
from workspaces.models import AgentWorkspace, WorkspaceContext

RBAC = REPO_DIR / "deploy" / "base" / "rbac.yaml"


def grants(role: str) -> set[tuple[str, str, str]]:
    docs = [doc for doc in yaml.safe_load_all(RBAC.read_text()) if doc]
    [found] = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role]
    return {
        (group, resource, verb)
        for rule in found["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def used(*, namespaced: bool) -> set[tuple[str, str, str]]:
    return {
        (kind.group, kind.plural, verb)
        for kind, verbs in access.USES.items()
        if kind.namespaced == namespaced
        for verb in verbs
    }


def test_rbac_grants_exactly_what_the_code_uses() -> None:
    assert grants("context-service-managed-namespace") == used(namespaced=True)
    assert grants("context-service-cluster") == used(namespaced=False)


def test_the_client_refuses_calls_nobody_declared() -> None:
    with pytest.raises(
        access.UndeclaredAccess, match=r"^patch sandboxclaims.extensions.agents.x-k8s.io is not"
    ):
        kube.patch_object(SANDBOX_CLAIM, "ns", "x", {})
    with pytest.raises(access.UndeclaredAccess, match=r"^delete pods.core is not in"):
        kube.delete_object(POD, "ns", "x")


# --- Running as the ServiceAccount -------------------------------------------------------


def apply(api: Any, docs: list[dict[str, Any]]) -> None:
    from kubernetes.dynamic import DynamicClient

    dynamic = DynamicClient(api)
    for doc in docs:
        resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(
            body=doc,
            name=doc["metadata"]["name"],
            namespace=doc["metadata"].get("namespace"),
            field_manager="context-service-rbac-test",
            force_conflicts=True,
        )


@pytest.fixture
def service_account_kubeconfig(kube_cluster: Any, namespace: str, tmp_path: Path) -> Path:
    """The base RBAC applied for real, bound in this test's namespace, and a kubeconfig
    holding a token of the context-service ServiceAccount."""
    from kubernetes import client

    from testenv import create_namespace

    create_namespace("context-service", kubeconfig=kube_cluster.kubeconfig)
    docs = [doc for doc in yaml.safe_load_all(RBAC.read_text()) if doc]
    for doc in docs:
        if doc["kind"] == "RoleBinding":
            doc["metadata"]["namespace"] = namespace
    sa = yaml.safe_load((REPO_DIR / "deploy" / "base" / "serviceaccount.yaml").read_text())
    with kube_cluster.api_client() as api:
        apply(api, [sa, *docs])
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        status = (
            client.CoreV1Api(api)
            .create_namespaced_service_account_token("context-service", "context-service", request)
            .status
        )
        assert status is not None
        token = status.token
    admin = yaml.safe_load(Path(kube_cluster.kubeconfig).read_text())
    admin["users"][0]["user"] = {"token": token}
    path = tmp_path / "service-account.kubeconfig"
    path.write_text(json.dumps(admin))
    return path


@pytest.fixture
def as_service_account(
    service_account_kubeconfig: Path,
    namespace: str,
    transactional_db: None,
    watcher_process: ManagedProcess,
    settings: Any,
) -> Iterator[None]:
    """This process, a worker and the watcher all act as the ServiceAccount and manage only
    this test's namespace (a RoleBinding there is all the namespaced access it has)."""
    queue = f"cs-rbac-{os.getpid()}"
    environment = {
        "KUBECONFIG": str(service_account_kubeconfig),
        "CS_ALLOWED_NAMESPACES": namespace,
        "CS_CELERY_QUEUE": queue,
    }
    previous_kubeconfig, previous_queue = (
        os.environ["KUBECONFIG"],
        celery_app.conf.task_default_queue,
    )
    watcher_process.stop()  # one watcher at a time: this one must be the service account's
    settings.CS_ALLOWED_NAMESPACES = [namespace]
    os.environ["KUBECONFIG"] = str(service_account_kubeconfig)
    kube.reset_api_client()
    celery_app.conf.task_default_queue = queue
    worker = ManagedProcess(
        "rbac-worker",
        celery_argv(
            "worker", "--concurrency=2", "-Q", queue, "--without-gossip", "--without-mingle"
        ),
        child_env(environment),
    ).start()
    watcher = ManagedProcess("rbac-watcher", manage_argv("watch"), child_env(environment)).start()
    try:
        wait_until(
            lambda: "watching" in watcher.log_path.read_text(errors="replace"),
            timeout=60,
            message="the service account's watcher",
        )
        yield
    finally:
        worker.stop()
        watcher.stop()
        os.environ["KUBECONFIG"] = previous_kubeconfig
        kube.reset_api_client()
        celery_app.conf.task_default_queue = previous_queue
        watcher_process.start()
    assert "Forbidden" not in worker.log_tail(2000), worker.log_tail()
    assert "Forbidden" not in watcher.log_tail(2000), watcher.log_tail()


@pytest.mark.cluster
def test_the_service_account_can_do_everything_the_service_does(
    kube_cluster: Any, namespace: str, as_service_account: None
) -> None:
    # Test fixtures made with the admin's rights, as a platform team would.
    admin_kubeconfig = str(kube_cluster.kubeconfig)
    with _admin(admin_kubeconfig):
        make_warm_pool(namespace, "warm", replicas=1)

    found = capabilities.refresh()
    assert (found.sandboxes, found.extensions, found.error) == (True, True, "")
    assert f"{namespace}/warm-template" in found.template_list

    created = allocation_create(
        request=PoolRequest(
            "rbac-direct",
            1,
            "dedicated",
            workspace_size="1Gi",
            workspace_access_mode="ReadWriteOnce",
            namespace=namespace,
        ),
        actor="user:test",
    )
    claimed = allocation_create(
        request=PoolRequest("rbac-warm", 1, "warmpool", warm_pool="warm", namespace=namespace),
        actor="user:test",
    )
    profile_save(
        name="rbac-template",
        create=True,
        actor="user:test",
        values={
            "source": "template",
            "template_namespace": namespace,
            "template_name": "warm-template",
        },
    )
    wait_for_phase("rbac-direct", Phase.READY)
    wait_for_phase("rbac-warm", Phase.READY)
    # Made under the service account's identity: the direct pool's Sandbox, PVC and fence,
    # the warm pool's claim; and deleted under it.
    made = (
        (SANDBOX, "rbac-direct"),
        (PVC, "rbac-direct"),
        (NETWORK_POLICY, "rbac-direct"),
        (SANDBOX_CLAIM, "rbac-warm"),
    )

    def owned() -> dict[tuple[str, str], int]:
        return {
            (kind.kind, pool): len(kube.list_objects(kind, namespace, pool_selector(pool)))
            for kind, pool in made
        }

    assert (created.allocation.name, claimed.allocation.name) == ("rbac-direct", "rbac-warm")
    assert owned() == {
        ("Sandbox", "rbac-direct"): 1,
        ("PersistentVolumeClaim", "rbac-direct"): 1,
        ("NetworkPolicy", "rbac-direct"): 1,
        ("SandboxClaim", "rbac-warm"): 1,
    }
    for name in ("rbac-direct", "rbac-warm"):
        allocation_release(name=name, actor="user:test", reach=EVERY_TEAM)
    wait_for_phase("rbac-direct", Phase.RELEASED)
    wait_for_phase("rbac-warm", Phase.RELEASED)
    assert set(owned().values()) == {0}

    workspace, _ = workspaces.workspace_ensure(
        agent_type="rbac-agent",
        namespace=namespace,
        initial_size="1Gi",
        max_size="4Gi",
        storage_class="standard",
        actor="user:test",
    )
    # Seen bound by the service account's watcher.
    wait_until(
        lambda: AgentWorkspace.objects.get(pk=workspace.pk).status == AgentWorkspace.Status.READY,
        timeout=60,
        message="the workspace to bind",
    )
    context, _ = workspaces.context_touch(
        namespace=namespace,
        agent_type="rbac-agent",
        context_id="ctx-1",
        actor="user:test",
        reach=EVERY_TEAM,
    )
    AgentWorkspace.objects.filter(pk=workspace.pk).update(usage_bytes=2**30)
    assert workspaces.workspace_expand(workspace.pk) == "expanded to 2Gi"
    WorkspaceContext.objects.filter(pk=context.pk).update(
        last_accessed_at=timezone.now() - timedelta(days=30)
    )
    assert len(workspaces.contexts_expire()) == 1
    assert workspaces.cleanup_jobs_observe() == 0  # the Job exists and has not finished

    # An approval needs no Kubernetes call at all; with this identity it still runs end to
    # end (rules, queue, decision).
    checked = approval_check(
        operation={"kind": "shell", "command": "x"},
        context_id="c",
        agent_type="rbac-template",
        actor="api:agent",
    )
    assert checked.decision == "ask"
    assert checked.request is not None
    decided = approval_approve(request_id=checked.request.pk, actor="user:approver")
    assert decided.status == "approved"


@pytest.mark.cluster
def test_the_service_account_is_refused_outside_its_namespaces(
    kube_cluster: Any,
    namespace: str,
    other_namespace: str,
    service_account_kubeconfig: Path,
) -> None:
    other = other_namespace
    with _admin(str(kube_cluster.kubeconfig)):
        make_pvc(other, "somebody-elses", modes=["ReadWriteOnce"])
    previous = os.environ["KUBECONFIG"]
    os.environ["KUBECONFIG"] = str(service_account_kubeconfig)
    kube.reset_api_client()
    try:
        with pytest.raises(kube.KubeError) as refused:
            kube.delete_object(PVC, other, "somebody-elses")
        with pytest.raises(kube.KubeError) as refused_list:
            kube.list_objects(SANDBOX, None)
    finally:
        os.environ["KUBECONFIG"] = previous
        kube.reset_api_client()
    assert (refused.value.status, refused.value.reason) == (403, "Forbidden")
    assert refused_list.value.status == 403
    assert kube.get_object(PVC, other, "somebody-elses") is not None


class _admin:
    """Run a block with the admin kubeconfig (test fixtures are the platform's doing)."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig

    def __enter__(self) -> None:
        self.previous = os.environ["KUBECONFIG"]
        os.environ["KUBECONFIG"] = self.kubeconfig
        kube.reset_api_client()

    def __exit__(self, *exc: object) -> None:
        os.environ["KUBECONFIG"] = self.previous
        kube.reset_api_client()

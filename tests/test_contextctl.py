"""The service as every existing ``contextctl`` user meets it: the CLI's own headers
(``X-SH-Auth``), the bodies it builds for each flag, ``wait`` polling every 2 s, and its
error handling, call by call against the real web process, worker, watcher and cluster.

The web process of these tests allocates into the test's namespace (``CS_NAMESPACE``),
because contextctl, like the Go service's other callers, never names one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC, SANDBOX
from testenv import ClusterHandle, seed_demo
from tests.support.api import issue_token
from tests.support.contextctl import GO_USER_AGENT, Contextctl
from tests.support.kube import NOTHING, make_pvc, make_warm_pool, pool_objects
from tests.support.processes import wait_until, web_process

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def contextctl(namespace: str) -> Iterator[Contextctl]:
    token = issue_token("contextctl", ["allocations"])
    with web_process("web-contextctl", {"CS_NAMESPACE": namespace}) as url:
        yield Contextctl(url, token, storage_class="standard")


def released(contextctl: Contextctl, namespace: str, name: str) -> None:
    wait_until(
        lambda: pool_objects(namespace, name) == NOTHING,
        timeout=90,
        message=f"{name}'s objects to be deleted",
    )


def test_health_needs_no_token(contextctl: Contextctl) -> None:
    contextctl.token = ""

    assert contextctl.run("health").stdout == "ok\n"
    assert [(c.method, c.path, c.status) for c in contextctl.calls] == [("GET", "/healthz", 200)]


def test_shared_create_wait_get_and_rm(contextctl: Contextctl, namespace: str) -> None:
    created = contextctl.run("create", "demo", "--shared")

    assert created.exit_code == 0, created.stderr
    assert created.stdout == (
        "demo: provisioning (0/2 ready), 1Gi RWX, selector context.rossoctl.io/pool=demo\n"
    )
    post = contextctl.calls[-1]
    # --shared with -n 1 silently becomes 2 replicas; CS_STORAGE_CLASS fills in -c.
    assert post.body == {
        "name": "demo",
        "replicas": 2,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany", "storageClass": "standard"},
    }
    assert post.headers == {
        "User-Agent": GO_USER_AGENT,
        "Accept-Encoding": "gzip",
        "Content-Type": "application/json",
        "X-SH-Auth": contextctl.token,
    }
    assert post.status == 201

    waited = contextctl.run("wait", "demo", "-t", "2m")
    assert waited.exit_code == 0, waited.stderr
    lines = waited.stdout.splitlines()
    assert lines[-1] == "demo: ready (2/2 ready)"
    assert all(line.startswith("demo: provisioning (") for line in lines[:-1])
    gets = [c for c in contextctl.calls if c.method == "GET"]
    assert len(gets) == len(lines)
    assert {c.headers.get("X-SH-Auth") for c in gets} == {contextctl.token}
    assert all("Content-Type" not in c.headers for c in gets)

    assert contextctl.run("get", "demo").stdout == (
        "demo: ready (2/2 ready), 1Gi RWX, selector context.rossoctl.io/pool=demo\n"
    )
    as_json = contextctl.run("get", "demo", "--json")
    assert json.loads(as_json.stdout) == {
        "name": "demo",
        "status": "ready",
        "replicas": 2,
        "readyReplicas": 2,
        "sandboxSelector": "context.rossoctl.io/pool=demo",
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany", "storageClass": "standard"},
    }
    assert pool_objects(namespace, "demo") == {
        "sandboxes": ["sandbox-demo-0", "sandbox-demo-1"],
        "claims": [],
        "pvcs": ["demo-workspace"],
        "pods": ["sandbox-demo-0", "sandbox-demo-1"],
    }

    removed = contextctl.run("rm", "demo")
    assert (removed.exit_code, removed.stdout) == (0, "deleted demo\n")
    assert contextctl.calls[-1].status == 204
    gone = contextctl.run("get", "demo")
    assert (gone.exit_code, gone.stdout, gone.stderr) == (
        1,
        "",
        'contextctl: sandbox pool "demo" not found\n',
    )
    released(contextctl, namespace, "demo")
    # The audit log names the API client behind X-SH-Auth, as it would a bearer token.
    assert list(
        AuditEntry.objects.filter(target="demo").order_by("id").values_list("actor", "action")[:2]
    ) == [("api:contextctl", "allocation.create"), ("api:contextctl", "allocation.release")]


def test_dedicated_pool_from_flags(contextctl: Contextctl, namespace: str) -> None:
    created = contextctl.run("create", "-n", "3", "-s", "2Gi", "-c", "standard", "workers")

    assert created.exit_code == 0, created.stderr
    assert contextctl.calls[-1].body == {
        "name": "workers",
        "replicas": 3,
        "workspace": {"size": "2Gi", "accessMode": "ReadWriteOnce", "storageClass": "standard"},
    }
    assert contextctl.run("wait", "workers").exit_code == 0
    assert pool_objects(namespace, "workers")["pvcs"] == [
        "workers-workspace-0",
        "workers-workspace-1",
        "workers-workspace-2",
    ]
    assert contextctl.run("delete", "workers").stdout == "deleted workers\n"
    released(contextctl, namespace, "workers")


def test_existing_claim_read_only(contextctl: Contextctl, namespace: str) -> None:
    make_pvc(namespace, "prepared", modes=["ReadWriteMany"], size="3Gi")

    created = contextctl.run("create", "readers", "--claim", "prepared", "--read-only", "-n", "2")

    assert created.exit_code == 0, created.stderr
    # Go's Workspace struct: size and accessMode have no omitempty, readOnly is a *bool.
    assert contextctl.calls[-1].body == {
        "name": "readers",
        "replicas": 2,
        "workspace": {"size": "", "accessMode": "", "claimName": "prepared", "readOnly": True},
    }
    assert created.stdout == (
        "readers: provisioning (0/2 ready), 3Gi RWX, selector context.rossoctl.io/pool=readers\n"
    )
    assert contextctl.run("wait", "readers").exit_code == 0
    as_json = json.loads(contextctl.run("get", "readers", "--json").stdout)
    assert as_json["workspace"] == {
        "size": "3Gi",
        "accessMode": "ReadWriteMany",
        "storageClass": "standard",
        "claimName": "prepared",
        "readOnly": True,
    }
    assert contextctl.run("rm", "readers").exit_code == 0
    released(contextctl, namespace, "readers")
    # The caller's PVC is never deleted.
    assert kube.get_object(PVC, namespace, "prepared") is not None


def test_existing_claim_read_write_as_json(contextctl: Contextctl, namespace: str) -> None:
    make_pvc(namespace, "scratch", modes=["ReadWriteOnce"], size="2Gi")

    created = contextctl.run("create", "writer", "--claim", "scratch", "--read-write", "--json")

    assert created.exit_code == 0, created.stderr
    assert contextctl.calls[-1].body["workspace"] == {
        "size": "",
        "accessMode": "",
        "claimName": "scratch",
        "readOnly": False,
    }
    # --json prints the response as Go decoded it: the PVC's own size and mode.
    assert json.loads(created.stdout) == {
        "name": "writer",
        "status": "provisioning",
        "replicas": 1,
        "readyReplicas": 0,
        "sandboxSelector": "context.rossoctl.io/pool=writer",
        "workspace": {
            "size": "2Gi",
            "accessMode": "ReadWriteOnce",
            "storageClass": "standard",
            "claimName": "scratch",
            "readOnly": False,
        },
    }
    assert contextctl.run("wait", "writer").exit_code == 0
    sandbox = kube.get_object(SANDBOX, namespace, "sandbox-writer-0")
    assert sandbox is not None
    volumes = sandbox["spec"]["podTemplate"]["spec"]["volumes"]
    assert [v["persistentVolumeClaim"] for v in volumes if "persistentVolumeClaim" in v] == [
        {"claimName": "scratch", "readOnly": False}
    ]
    assert contextctl.run("rm", "writer").exit_code == 0
    released(contextctl, namespace, "writer")
    assert kube.get_object(PVC, namespace, "scratch") is not None


def test_wait_gives_up_at_its_timeout(contextctl: Contextctl, namespace: str) -> None:
    assert contextctl.run("create", "slow", "-n", "3").exit_code == 0

    # The first GET comes at once, before three Pods can be ready; the next would come
    # after the 1 s timeout.
    waited = contextctl.run("wait", "slow", "-t", "1s")

    assert (waited.exit_code, waited.stderr) == (1, "contextctl: timed out waiting for slow\n")
    assert waited.stdout.startswith("slow: provisioning (")
    assert contextctl.run("rm", "slow").exit_code == 0
    released(contextctl, namespace, "slow")


def test_warm_pool(contextctl: Contextctl, namespace: str) -> None:
    make_warm_pool(namespace, "agents", replicas=2)

    created = contextctl.run("create", "fast-run", "--warm-pool", "agents", "-n", "2")

    assert created.exit_code == 0, created.stderr
    assert contextctl.calls[-1].body == {
        "name": "fast-run",
        "replicas": 2,
        "warmPoolRef": "agents",
        "workspace": {"size": "", "accessMode": ""},
    }
    assert created.stdout == (
        "fast-run: provisioning (0/2 ready), warm pool agents, "
        "selector context.rossoctl.io/pool=fast-run\n"
    )
    assert contextctl.run("wait", "fast-run").exit_code == 0
    assert contextctl.run("get", "fast-run").stdout.startswith("fast-run: ready (2/2 ready)")
    assert pool_objects(namespace, "fast-run")["claims"] == ["claim-fast-run-0", "claim-fast-run-1"]
    assert contextctl.run("rm", "fast-run").exit_code == 0
    released(contextctl, namespace, "fast-run")


def test_the_demo_warm_pool_make_run_seeds_is_one_the_service_hands_out(
    contextctl: Contextctl, namespace: str, kube_cluster: ClusterHandle
) -> None:
    """Issue 32: the README's warm-pool example on the pool `make run` seeds answered 400
    (its template was not hardened)."""
    seed_demo(kube_cluster.kubeconfig, namespace)

    created = contextctl.run("create", "x", "--warm-pool", "demo")

    assert created.exit_code == 0, created.stderr
    assert created.stdout == (
        "x: provisioning (0/1 ready), warm pool demo, selector context.rossoctl.io/pool=x\n"
    )
    assert contextctl.run("wait", "x").exit_code == 0
    assert contextctl.run("rm", "x").exit_code == 0
    released(contextctl, namespace, "x")


def test_errors_print_the_message(contextctl: Contextctl, namespace: str) -> None:
    bad_name = contextctl.run("create", "Bad_Name")
    missing_claim = contextctl.run("create", "x", "--claim", "absent", "--read-write")
    missing_pool = contextctl.run("create", "y", "--warm-pool", "absent")
    first = contextctl.run("create", "taken")
    taken = contextctl.run("create", "taken")

    assert bad_name.stderr == (
        "contextctl: name must be a lowercase Kubernetes name no longer than 50 characters\n"
    )
    assert missing_claim.stderr == (
        f'contextctl: workspace.claimName "absent" does not exist in namespace "{namespace}"\n'
    )
    assert missing_pool.stderr == (
        f'contextctl: warmPoolRef "absent" does not exist in namespace "{namespace}"\n'
    )
    assert first.exit_code == 0
    assert taken.stderr == 'contextctl: sandbox pool "taken" already exists\n'
    assert [c.status for c in contextctl.calls] == [400, 400, 400, 201, 409]
    assert {r.exit_code for r in (bad_name, missing_claim, missing_pool, taken)} == {1}

    contextctl.token = "cs_not-a-real-token"
    assert contextctl.run("get", "taken").stderr == "contextctl: invalid or revoked token\n"
    contextctl.token = ""
    assert contextctl.run("get", "taken").stderr == (
        "contextctl: Authentication credentials were not provided.\n"
    )

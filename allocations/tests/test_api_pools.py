"""End to end against the real control plane: the v1 API, a real Celery worker, the real
watcher process, the real agent-sandbox controller and kwok. Readiness is observed through
the watcher; the tests only ever poll our own database/API."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.requests import PoolRequest
from allocations.services.create import allocation_create
from allocations.services.reconcile import allocation_fail
from allocations.tasks import reconcile_allocation, rollback_allocation
from allocations.tests.factories import AllocationFactory
from contextsvc.core.models import AuditEntry
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import (
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)
from contextsvc.kube.objects.labels import pool_labels, pool_selector
from contextsvc.kube.objects.pod import pod_is_ready
from tests.support.api import ApiClient, issue_token
from tests.support.kube import (
    HARDENED_POD_SPEC,
    NOTHING,
    admin_create,
    make_pvc,
    make_template,
    make_warm_pool,
    pool_objects,
    wait_for_phase,
)
from tests.support.processes import wait_until
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))


def create(api: ApiClient, body: dict[str, Any]) -> Any:
    response = api.post("/v1/sandbox-pools", body)
    assert response.status_code == 201, response.content
    return response.json()


def wait_ready(api: ApiClient, name: str, timeout: float = 60) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        body = api.get(f"/v1/sandbox-pools/{name}").json()
        return body if body.get("status") == "ready" else None

    found = wait_until(ready, timeout=timeout, interval=0.1, message=f"{name} to be ready")
    assert isinstance(found, dict)
    return found


def release(api: ApiClient, name: str) -> None:
    response = api.delete(f"/v1/sandbox-pools/{name}")
    assert response.status_code == 204
    assert response.content == b""


def test_dedicated_rwo_pool_from_post_to_ready_to_release(api: ApiClient, namespace: str) -> None:
    body = create(
        api,
        {
            "name": "dedicated",
            "replicas": 2,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    assert body == {
        "name": "dedicated",
        "status": "provisioning",
        "replicas": 2,
        "readyReplicas": 0,
        "sandboxSelector": "context.rossoctl.io/pool=dedicated",
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        "namespace": namespace,
    }
    ready = wait_ready(api, "dedicated")
    assert ready["readyReplicas"] == 2
    assert pool_objects(namespace, "dedicated") == {
        "sandboxes": ["sandbox-dedicated-0", "sandbox-dedicated-1"],
        "claims": [],
        "pvcs": ["dedicated-workspace-0", "dedicated-workspace-1"],
        "pods": ["sandbox-dedicated-0", "sandbox-dedicated-1"],
    }
    pvc = kube.get_object(PVC, namespace, "dedicated-workspace-1")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {
        "context.rossoctl.io/pool": "dedicated",
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/replicas": "2",
    }
    assert pvc["status"]["phase"] == "Bound"
    pod = kube.list_objects(POD, namespace, "context.rossoctl.io/pool=dedicated")[1]
    assert (
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "dedicated-workspace-1"
    )

    release(api, "dedicated")

    assert api.get("/v1/sandbox-pools/dedicated").status_code == 404
    released = wait_for_phase("dedicated", Phase.RELEASED)
    assert pool_objects(namespace, "dedicated") == NOTHING
    kinds = [event.kind for event in released.events.all()]
    # Each readiness phase once, in whichever order the cluster reached them.
    phases = ("volumes_bound", "pods_scheduled")
    assert sorted(kind for kind in kinds if kind in phases) == sorted(phases)
    # The worker records "applied" once its objects are made; the watcher records the
    # cluster's readiness as it sees it, which on a busy machine can be before that record
    # commits. Each once, between the request and the release; Pods may turn Ready one at a
    # time ("replicas" events) or together.
    settled = [kind for kind in kinds if kind not in ("replicas", *phases)]
    assert (settled[0], sorted(settled[1:3]), settled[3:]) == (
        "created",
        ["applied", "ready"],
        ["releasing", "released"],
    )
    assert list(
        AuditEntry.objects.filter(target="dedicated").order_by("id").values_list("actor", "action")
    ) == [
        ("api:serverless-harness", "allocation.create"),
        ("api:serverless-harness", "allocation.release"),
        ("system:context-service", "allocation.released"),
    ]
    # The name is free again.
    again = create(
        api,
        {
            "name": "dedicated",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    assert again["status"] == "provisioning"


def test_shared_rwx_pool_mounts_one_pvc_everywhere(api: ApiClient, namespace: str) -> None:
    create(
        api,
        {
            "name": "shared",
            "replicas": 3,
            "namespace": namespace,
            "workspace": {"size": "5Gi", "accessMode": "ReadWriteMany", "storageClass": "standard"},
        },
    )

    ready = wait_ready(api, "shared")

    assert ready["readyReplicas"] == 3
    assert ready["workspace"] == {
        "size": "5Gi",
        "accessMode": "ReadWriteMany",
        "storageClass": "standard",
    }
    found = pool_objects(namespace, "shared")
    assert found["pvcs"] == ["shared-workspace"]
    assert found["sandboxes"] == ["sandbox-shared-0", "sandbox-shared-1", "sandbox-shared-2"]
    claims = {
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
        for pod in kube.list_objects(POD, namespace, "context.rossoctl.io/pool=shared")
    }
    assert claims == {"shared-workspace"}
    release(api, "shared")
    wait_for_phase("shared", Phase.RELEASED)
    assert pool_objects(namespace, "shared") == NOTHING


def test_existing_pvc_read_only_survives_release(api: ApiClient, namespace: str) -> None:
    make_pvc(namespace, "artifacts", modes=["ReadWriteMany"], size="2Gi")

    body = create(
        api,
        {
            "name": "consumer",
            "replicas": 2,
            "namespace": namespace,
            "workspace": {"claimName": "artifacts", "readOnly": True},
        },
    )

    assert body["workspace"] == {
        "size": "2Gi",
        "accessMode": "ReadWriteMany",
        "storageClass": "standard",
        "claimName": "artifacts",
        "readOnly": True,
    }
    wait_ready(api, "consumer")
    sandbox = kube.get_object(SANDBOX, namespace, "sandbox-consumer-0")
    assert sandbox is not None
    ours = {
        key: value
        for key, value in sandbox["metadata"]["annotations"].items()
        if key.startswith("context.rossoctl.io/")  # the controller adds its own too
    }
    assert ours == {
        "context.rossoctl.io/replicas": "2",
        "context.rossoctl.io/workspace-read-only": "true",
        "context.rossoctl.io/workspace-claim": "artifacts",
    }
    pod_spec = sandbox["spec"]["podTemplate"]["spec"]
    assert pod_spec["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "artifacts",
        "readOnly": True,
    }
    assert pod_spec["containers"][0]["volumeMounts"][0]["readOnly"] is True

    release(api, "consumer")
    wait_for_phase("consumer", Phase.RELEASED)

    survivor = kube.get_object(PVC, namespace, "artifacts")
    assert survivor is not None
    assert survivor["metadata"].get("deletionTimestamp") is None
    assert pool_objects(namespace, "consumer") == NOTHING


def test_existing_pvc_checks(api: ApiClient, namespace: str) -> None:
    make_pvc(namespace, "solo", modes=["ReadWriteOnce"])

    with kept(namespace):
        missing = api.post(
            "/v1/sandbox-pools",
            {
                "name": "p",
                "replicas": 1,
                "namespace": namespace,
                "workspace": {"claimName": "nope", "readOnly": False},
            },
        )
        not_rwx = api.post(
            "/v1/sandbox-pools",
            {
                "name": "p",
                "replicas": 2,
                "namespace": namespace,
                "workspace": {"claimName": "solo", "readOnly": False},
            },
        )

    assert missing.status_code == 400
    assert missing.json() == {
        "error": "invalid_request",
        "message": f'workspace.claimName "nope" does not exist in namespace "{namespace}"',
    }
    assert not_rwx.status_code == 400
    assert not_rwx.json() == {
        "error": "invalid_request",
        "message": 'workspace.claimName "solo" must allow ReadWriteMany to be shared by 2 replicas',
    }


def test_warm_pool_claims_ready_and_release_keeps_the_pool(api: ApiClient, namespace: str) -> None:
    make_warm_pool(namespace, "warm", replicas=2)

    body = create(
        api, {"name": "burst", "replicas": 2, "namespace": namespace, "warmPoolRef": "warm"}
    )

    assert body == {
        "name": "burst",
        "status": "provisioning",
        "replicas": 2,
        "readyReplicas": 0,
        "sandboxSelector": "context.rossoctl.io/pool=burst",
        "workspace": {"size": "", "accessMode": ""},
        "warmPoolRef": "warm",
        "namespace": namespace,
    }
    assert wait_ready(api, "burst")["readyReplicas"] == 2
    found = pool_objects(namespace, "burst")
    assert found["claims"] == ["claim-burst-0", "claim-burst-1"]
    assert len(found["pods"]) == 2  # the claimed warm Pods now carry the pool label
    # The claimed Pods are fenced like direct ones: nothing in, DNS out (the template has
    # no network rules of its own).
    fence = kube.get_object(NETWORK_POLICY, namespace, "burst-sandboxes")
    assert fence is not None
    assert fence["spec"] == {
        "podSelector": {"matchLabels": {"context.rossoctl.io/pool": "burst"}},
        "policyTypes": ["Ingress", "Egress"],
        "egress": [{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
    }

    release(api, "burst")
    wait_for_phase("burst", Phase.RELEASED)

    assert pool_objects(namespace, "burst") == NOTHING
    assert kube.get_object(SANDBOX_WARM_POOL, namespace, "warm") is not None
    assert kube.get_object(SANDBOX_TEMPLATE, namespace, "warm-template") is not None


UNHARDENED = {"containers": [{"name": "sandbox", "image": "busybox:1.36"}]}
UNHARDENED_PROBLEMS = [
    'restricted privilege-escalation: container "sandbox" does not set allowPrivilegeEscalation: false',
    'restricted running-as-non-root: container "sandbox" may run as root (runAsNonRoot is not true)',
    'restricted seccomp-restricted: container "sandbox" has no RuntimeDefault or Localhost seccomp profile',
    'restricted capabilities-restricted: container "sandbox" does not drop ALL capabilities',
]


def test_a_warm_pool_with_an_unhardened_template_is_refused(api: ApiClient, namespace: str) -> None:
    """Found by hand: the claimed Sandbox had no security context at all."""
    make_warm_pool(namespace, "plain", replicas=1, pod_spec=UNHARDENED, wait=False)

    # The warm pool's controller is still filling it, so the namespace's objects move on
    # their own: the rows are compared whole, and what the service would make is absent.
    with kept():
        response = api.post(
            "/v1/sandbox-pools",
            {"name": "w", "replicas": 1, "namespace": namespace, "warmPoolRef": "plain"},
        )

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": 'warmPoolRef "plain": its SandboxTemplate "plain-template" is not hardened '
        f"({UNHARDENED_PROBLEMS[0]}); harden it, or relax rules by name in the pool's "
        "context.rossoctl.io/relaxations annotation",
        "problems": {"warmPoolRef": UNHARDENED_PROBLEMS},
    }
    assert kube.list_objects(SANDBOX_CLAIM, namespace) == []
    assert kube.list_objects(NETWORK_POLICY, namespace) == []


def test_a_warm_pool_owner_may_relax_restricted_rules_by_name(
    api: ApiClient, namespace: str
) -> None:
    relaxed = "run-as-root, privilege-escalation, keep-capabilities"
    root_pod = {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "sandbox", "image": "busybox:1.36"}],
    }
    make_warm_pool(
        namespace,
        "rooted",
        replicas=1,
        pod_spec=root_pod,
        annotations={"context.rossoctl.io/relaxations": relaxed},
    )

    body = create(
        api, {"name": "relaxed", "replicas": 1, "namespace": namespace, "warmPoolRef": "rooted"}
    )

    assert body["status"] == "provisioning"
    audit = AuditEntry.objects.get(action="allocation.create", target="relaxed")
    assert audit.payload["relaxations"] == [
        "keep-capabilities",
        "privilege-escalation",
        "run-as-root",
    ]
    created = Allocation.objects.get(name="relaxed").events.get(kind="created")
    assert created.message == (
        "requested by api:serverless-harness. The warm pool's owner relaxes: "
        "keep-capabilities, privilege-escalation, run-as-root."
    )
    # A baseline rule is never relaxed, whatever the annotation says.
    make_warm_pool(
        namespace,
        "hostport",
        replicas=1,
        pod_spec={
            **HARDENED_POD_SPEC,
            "containers": [
                {
                    **HARDENED_POD_SPEC["containers"][0],
                    "ports": [{"containerPort": 80, "hostPort": 80}],
                }
            ],
        },
        annotations={"context.rossoctl.io/relaxations": "host-ports,run-as-root"},
        wait=False,
    )
    wait_ready(api, "relaxed")  # so that its rows stand still while "hp" is refused
    with kept():
        refused = api.post(
            "/v1/sandbox-pools",
            {"name": "hp", "replicas": 1, "namespace": namespace, "warmPoolRef": "hostport"},
        )
    assert refused.status_code == 400
    assert refused.json()["problems"] == {
        "warmPoolRef": ['baseline host-ports: container "sandbox" binds host port 80']
    }
    assert kube.list_objects(SANDBOX_CLAIM, namespace, pool_selector("hp")) == []


def test_missing_warm_pool_is_400(api: ApiClient, namespace: str) -> None:
    with kept(namespace):
        response = api.post(
            "/v1/sandbox-pools",
            {"name": "w", "replicas": 1, "namespace": namespace, "warmPoolRef": "absent"},
        )

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": f'warmPoolRef "absent" does not exist in namespace "{namespace}"',
    }


def test_reused_name_is_409_and_changes_nothing(api: ApiClient, namespace: str) -> None:
    spec = {
        "name": "taken",
        "replicas": 1,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    create(api, spec)

    wait_ready(api, "taken")
    with kept(namespace):
        again = api.post("/v1/sandbox-pools", spec)

    assert again.status_code == 409
    assert again.json() == {
        "error": "already_exists",
        "message": 'sandbox pool "taken" already exists',
    }


def test_somebody_elses_object_under_one_of_our_names_is_409(
    api: ApiClient, namespace: str
) -> None:
    make_pvc(namespace, "mine-workspace", modes=["ReadWriteMany"], labels={"team": "other"})

    with kept(namespace):
        response = api.post(
            "/v1/sandbox-pools",
            {
                "name": "mine",
                "replicas": 2,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
            },
        )

    assert (response.status_code, response.json()["error"]) == (409, "already_exists")
    assert pool_objects(namespace, "mine") == NOTHING


def test_a_pod_that_only_wears_our_label_counts_for_nothing(api: ApiClient, namespace: str) -> None:
    # Anyone who may create Pods can put the pool label on one; no Sandbox made it.
    admin_create(
        POD,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "impostor",
                "namespace": namespace,
                "labels": {"context.rossoctl.io/pool": "genuine"},
            },
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
        },
    )
    impostor = pool_selector("genuine")
    wait_until(
        lambda: [pod_is_ready(p) for p in kube.list_objects(POD, namespace, impostor)] == [True],
        timeout=60,
        message="the impostor Pod to be Ready",
    )

    create(
        api,
        {
            "name": "genuine",
            "replicas": 2,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
        },
    )

    assert wait_ready(api, "genuine")["readyReplicas"] == 2  # not 3
    release(api, "genuine")
    wait_for_phase("genuine", Phase.RELEASED)
    assert [p["metadata"]["name"] for p in kube.list_objects(POD, namespace, impostor)] == [
        "impostor"
    ]


def test_a_leftover_claim_keeps_the_name_taken(api: ApiClient, namespace: str) -> None:
    make_warm_pool(namespace, "warm", replicas=1)
    admin_create(
        SANDBOX_CLAIM,
        {
            "apiVersion": SANDBOX_CLAIM.api_version,
            "kind": "SandboxClaim",
            "metadata": {
                "name": "claim-other-7",
                "namespace": namespace,
                "labels": pool_labels("held"),
            },
            "spec": {"warmPoolRef": {"name": "warm"}},
        },
    )

    # The claim is the controller's to bind, and the pool's to refill, while the request is
    # refused: the rows are compared whole, the objects by what the service would make.
    with kept():
        response = api.post(
            "/v1/sandbox-pools",
            {"name": "held", "replicas": 1, "namespace": namespace, "warmPoolRef": "warm"},
        )

    assert (response.status_code, response.json()["error"]) == (409, "already_exists")
    assert [
        claim["metadata"]["name"]
        for claim in kube.list_objects(SANDBOX_CLAIM, namespace, pool_selector("held"))
    ] == ["claim-other-7"]
    assert kube.list_objects(NETWORK_POLICY, namespace) == []


def test_name_stays_taken_while_labelled_objects_remain(api: ApiClient, namespace: str) -> None:
    # An object still carries the pool label (a release in progress, or the old service's).
    make_pvc(namespace, "leftover", modes=["ReadWriteOnce"], labels=pool_labels("ghost"))

    with kept(namespace):
        response = api.post(
            "/v1/sandbox-pools",
            {
                "name": "ghost",
                "replicas": 1,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )

    assert response.status_code == 409
    assert response.json()["error"] == "already_exists"


def test_mid_create_failure_rolls_back_everything_it_created(
    api: ApiClient, namespace: str
) -> None:
    # Somebody else's Sandbox sits on the name our second Sandbox needs.
    admin_create(
        SANDBOX,
        {
            "apiVersion": SANDBOX.api_version,
            "kind": "Sandbox",
            "metadata": {
                "name": "sandbox-clash-1",
                "namespace": namespace,
                "labels": {"owner": "someone"},
            },
            "spec": {
                "podTemplate": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
            },
        },
    )

    wait_until(
        lambda: (
            [p["metadata"]["name"] for p in kube.list_objects(POD, namespace)]
            == ["sandbox-clash-1"]
        ),
        timeout=60,
        message="the other Sandbox's Pod",
    )
    spec = {
        "name": "clash",
        "replicas": 2,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    # Seen in the request, the collision is the contract's 409, and nothing is written.
    with kept(namespace):
        refused = api.post("/v1/sandbox-pools", spec)
    assert (refused.status_code, refused.json()) == (
        409,
        {"error": "already_exists", "message": 'sandbox pool "clash" already exists'},
    )
    assert pool_objects(namespace, "clash") == NOTHING
    # The same clash met by the reconcile (the object appeared after the request was
    # accepted): the row is inserted directly, as such a race leaves it.
    allocation = AllocationFactory.create(
        name="clash",
        namespace=namespace,
        replicas=2,
        strategy="dedicated",
        workspace_access_mode="ReadWriteOnce",
    )
    reconcile_allocation.delay(allocation.pk)

    failed = wait_for_phase("clash", Phase.FAILED)
    assert failed.reason == "NameCollision"
    assert failed.message == (
        f'sandbox pool "clash" already exists: Sandbox {namespace}/sandbox-clash-1 exists and '
        "does not belong to this allocation"
    )
    body = api.get("/v1/sandbox-pools/clash").json()
    assert body["status"] == "failed"
    assert body["message"] == failed.message
    wait_until(
        lambda: pool_objects(namespace, "clash") == NOTHING,
        timeout=60,
        message="the rollback to delete what was created",
    )
    wait_until(
        lambda: failed.events.filter(kind=AllocationEvent.Kind.ROLLED_BACK).exists(),
        timeout=30,
        message="the rollback event",
    )
    # The foreign Sandbox is untouched.
    foreign = kube.get_object(SANDBOX, namespace, "sandbox-clash-1")
    assert foreign is not None
    assert foreign["metadata"].get("deletionTimestamp") is None
    # A failed allocation is released like any other.
    release(api, "clash")
    wait_for_phase("clash", Phase.RELEASED)


def test_release_never_touches_an_allocation_sharing_a_prefix(
    api: ApiClient, namespace: str
) -> None:
    for name in ("a", "a-b"):
        create(
            api,
            {
                "name": name,
                "replicas": 1,
                "namespace": namespace,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )
    wait_ready(api, "a")
    wait_ready(api, "a-b")
    before = pool_objects(namespace, "a-b")

    release(api, "a")
    wait_for_phase("a", Phase.RELEASED)

    assert pool_objects(namespace, "a") == NOTHING
    assert (
        pool_objects(namespace, "a-b")
        == before
        == {
            "sandboxes": ["sandbox-a-b-0"],
            "claims": [],
            "pvcs": ["a-b-workspace-0"],
            "pods": ["sandbox-a-b-0"],
        }
    )
    assert api.get("/v1/sandbox-pools/a-b").json()["status"] == "ready"


def test_concurrent_reconciles_create_each_object_once(namespace: str) -> None:
    request = PoolRequest(
        "race",
        3,
        "dedicated",
        workspace_size="1Gi",
        workspace_access_mode="ReadWriteOnce",
        namespace=namespace,
    )
    allocation = allocation_create(request=request, actor="user:test").allocation
    errors: list[BaseException] = []

    def reconcile() -> None:
        from celery.exceptions import Retry
        from django.db import connection

        try:
            reconcile_allocation.run(allocation.pk)
        except Retry:
            pass  # the lock was busy: this one stands aside, as a worker would
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=reconcile) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    wait_for_phase("race", Phase.READY)
    assert pool_objects(namespace, "race")["sandboxes"] == [
        "sandbox-race-0",
        "sandbox-race-1",
        "sandbox-race-2",
    ]
    applied = allocation.events.filter(kind=AllocationEvent.Kind.APPLIED)
    assert applied.count() == 1, list(applied.values_list("message", "data"))
    assert sorted(applied.get().data["objects"]) == sorted(
        ["NetworkPolicy/race-sandboxes"]
        + [f"PersistentVolumeClaim/race-workspace-{i}" for i in range(3)]
        + [f"Sandbox/sandbox-race-{i}" for i in range(3)]
    )
    assert not allocation.events.filter(kind=AllocationEvent.Kind.FAILED).exists()


def test_terminal_claim_failure_fails_the_allocation(api: ApiClient, namespace: str) -> None:
    make_warm_pool(namespace, "warm", replicas=2)
    # A claim already sits under our second name with our labels but pod metadata in a
    # domain the controller does not allow: the controller fails it with InvalidMetadata.
    admin_create(
        SANDBOX_CLAIM,
        {
            "apiVersion": SANDBOX_CLAIM.api_version,
            "kind": "SandboxClaim",
            "metadata": {
                "name": "claim-doomed-1",
                "namespace": namespace,
                "labels": pool_labels("doomed"),
            },
            "spec": {
                "warmPoolRef": {"name": "warm"},
                "additionalPodMetadata": {"labels": {"evil.example.com/x": "y"}},
            },
        },
    )
    # The API's name check would refuse the name because of that labelled claim, so the row
    # is inserted directly: this is the state a create racing with such a claim ends in.
    allocation = AllocationFactory.create(
        name="doomed",
        namespace=namespace,
        replicas=2,
        strategy="warmpool",
        warm_pool="warm",
        workspace_size="",
        workspace_access_mode="",
    )
    reconcile_allocation.delay(allocation.pk)

    failed = wait_for_phase("doomed", Phase.FAILED)

    assert failed.reason == "InvalidMetadata"
    assert failed.message.startswith("SandboxClaim claim-doomed-1: ")
    wait_until(
        lambda: pool_objects(namespace, "doomed")["claims"] == [],
        timeout=60,
        message="the claims to be rolled back",
    )
    assert kube.get_object(SANDBOX_WARM_POOL, namespace, "warm") is not None


def test_a_ready_allocation_that_fails_keeps_its_objects_until_released(
    api: ApiClient, namespace: str
) -> None:
    create(
        api,
        {
            "name": "kept",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    wait_ready(api, "kept")
    allocation = Allocation.objects.get(name="kept", phase=Phase.READY)
    before = pool_objects(namespace, "kept")

    # What the watcher does when the Sandbox of a ready allocation reports PodSucceeded.
    assert allocation_fail(
        allocation_id=allocation.pk, reason="PodSucceeded", message="Sandbox sandbox-kept-0: done"
    )

    assert api.get("/v1/sandbox-pools/kept").json()["message"] == (
        "Sandbox sandbox-kept-0: done (it had been ready, so its objects are kept until it "
        "is released)"
    )
    # Even a rollback queued by an older worker leaves the workspace and its data alone.
    assert rollback_allocation.apply(args=(allocation.pk,)).get() == "nothing to do"
    assert pool_objects(namespace, "kept") == before
    assert before["pvcs"] == ["kept-workspace-0"]
    release(api, "kept")
    wait_for_phase("kept", Phase.RELEASED)
    assert pool_objects(namespace, "kept") == NOTHING


def test_the_longest_name_makes_valid_kubernetes_names(api: ApiClient, namespace: str) -> None:
    name = "n" * 49 + "1"  # 50 characters: sandbox-<name>-<i>, <name>-workspace-<i> still fit
    create(
        api,
        {
            "name": name,
            "replicas": 2,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    assert wait_ready(api, name)["readyReplicas"] == 2
    assert pool_objects(namespace, name)["pvcs"] == [f"{name}-workspace-0", f"{name}-workspace-1"]
    with kept(namespace):
        too_long = api.post(
            "/v1/sandbox-pools",
            {
                "name": name + "x",
                "replicas": 1,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )
    assert too_long.status_code == 400
    assert too_long.json()["message"] == (
        "name must be a lowercase Kubernetes name no longer than 50 characters"
    )


def test_what_the_controller_reports_reaches_the_caller_and_a_lasting_problem_fails(
    api: ApiClient, namespace: str, settings: Any
) -> None:
    """Found by hand: a Sandbox whose Pod the API server refused left the allocation
    provisioning, with no message, for over ten minutes."""
    from allocations.resync import resync_all
    from allocations.selectors import allocation_needs_attention

    # A port name longer than 15 characters: nothing before the API server's Pod
    # validation refuses it, so the controller reports a ReconcilerError.
    make_template(
        namespace,
        "bad-port",
        {
            "spec": {
                **HARDENED_POD_SPEC,
                "containers": [
                    {
                        **HARDENED_POD_SPEC["containers"][0],
                        "ports": [{"containerPort": 8080, "name": "a-port-name-too-long"}],
                    }
                ],
            }
        },
    )
    admin = ApiClient(issue_token("platform", ["admin"]))
    saved = admin.post(
        "/v1/profiles",
        {"name": "bad-port", "template": {"namespace": namespace, "name": "bad-port"}},
    )
    assert saved.status_code == 201, saved.content
    create(
        api,
        {
            "name": "stuck",
            "replicas": 1,
            "namespace": namespace,
            "profile": "bad-port",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )

    def reported() -> dict[str, Any] | None:
        body: dict[str, Any] = api.get("/v1/sandbox-pools/stuck").json()
        return body if "message" in body else None

    body = wait_until(reported, timeout=60, interval=0.2, message="the controller's report")
    assert isinstance(body, dict)
    assert body["status"] == "provisioning"
    assert body["message"].startswith("Sandbox sandbox-stuck-0: Error seen: Pod ")
    assert "a-port-name-too-long" in body["message"]
    allocation = Allocation.objects.get(name="stuck")
    assert allocation.reason == "ReconcilerError"
    [attention] = allocation_needs_attention(stuck_after_seconds=300, reach=EVERY_TEAM)
    assert attention["allocation"].name == "stuck"
    assert attention["why"].startswith(
        "0/1 ready after 0 min; ReconcilerError: Sandbox sandbox-stuck-0"
    )

    # Past the reconcile deadline the resync fails it, with the same reason.
    settings.CS_RECONCILE_DEADLINE_SECONDS = 1
    wait_until(
        lambda: "stuck" in resync_all(adopt=False).failed,
        timeout=30,
        message="the resync to fail the allocation",
    )
    failed = api.get("/v1/sandbox-pools/stuck").json()
    assert failed["status"] == "failed"
    assert failed["message"].startswith("Sandbox sandbox-stuck-0: Error seen: Pod ")
    assert failed["message"].endswith("(still reported after the 1 s reconcile deadline)")
    assert AuditEntry.objects.get(action="allocation.fail", target="stuck").payload["reason"] == (
        "ReconcilerError"
    )


MANAGED = {"app.kubernetes.io/managed-by": "context-service"}


@pytest.mark.parametrize(
    ("labels", "read_only", "message"),
    [
        (
            {**MANAGED, "context.rossoctl.io/pool": "someone-elses"},
            True,
            'workspace.claimName "theirs" is the workspace of allocation "someone-elses", '
            "which this service does not mount into another allocation (an admin may allow it "
            "by name: CS_CLAIMS_ALLOWED)",
        ),
        (
            {"rossoctl.io/type": "agent-workspace", "rossoctl.io/agent": "weather-service"},
            True,
            'workspace.claimName "theirs" is the workspace of agent type "weather-service", '
            "which this service does not mount into another allocation (an admin may allow it "
            "by name: CS_CLAIMS_ALLOWED)",
        ),
        (
            {**MANAGED, "context.rossoctl.io/type": "artifacts",
             "context.rossoctl.io/name": "run-7-artifacts"},
            False,
            'workspace.claimName "theirs" holds the artifacts retained as context '
            "run-7-artifacts: mount it with workspace.readOnly true",
        ),
    ],
)  # fmt: skip
def test_a_pvc_the_service_manages_is_mounted_only_as_its_rule_says(
    api: ApiClient, namespace: str, labels: dict[str, str], read_only: bool, message: str
) -> None:
    """Issue 31: any allocations token could mount another pool's volume, an agent type's
    workspace (every conversation of it) or retained artifacts read-write."""
    make_pvc(namespace, "theirs", modes=["ReadWriteMany"], labels=labels)

    with kept():
        refused = api.post(
            "/v1/sandbox-pools",
            {"name": "borrower", "replicas": 1, "namespace": namespace,
             "workspace": {"claimName": "theirs", "readOnly": read_only}},
        )  # fmt: skip

    assert (refused.status_code, refused.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )
    assert not Allocation.objects.filter(name="borrower").exists()


def test_retained_artifacts_mount_read_only_and_an_admin_may_allow_a_pvc_by_name(
    api: ApiClient, namespace: str, settings: Any
) -> None:
    make_pvc(
        namespace,
        "kept",
        modes=["ReadWriteMany"],
        labels={
            **MANAGED,
            "context.rossoctl.io/type": "artifacts",
            "context.rossoctl.io/name": "r-1",
        },
    )
    make_pvc(
        namespace,
        "agents",
        modes=["ReadWriteMany"],
        labels={"rossoctl.io/type": "agent-workspace", "rossoctl.io/agent": "weather-service"},
    )
    settings.CS_CLAIMS_ALLOWED = [f"{namespace}/agents"]  # fmt: skip

    reader = create(
        api,
        {"name": "reader", "replicas": 1, "namespace": namespace,
         "workspace": {"claimName": "kept", "readOnly": True}},
    )  # fmt: skip
    allowed = create(
        api,
        {"name": "allowed", "replicas": 1, "namespace": namespace,
         "workspace": {"claimName": "agents", "readOnly": False}},
    )  # fmt: skip

    assert (reader["workspace"]["claimName"], reader["workspace"]["readOnly"]) == ("kept", True)
    assert allowed["workspace"]["claimName"] == "agents"
    for name in ("reader", "allowed"):
        release(api, name)
        wait_for_phase(name, Phase.RELEASED)

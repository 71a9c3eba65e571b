"""Allocations that live (issue 20), end to end against the real worker, watcher, controller
and cluster: expiry, suspend and resume, scaling (and its races), and artifacts kept for a
later allocation to read."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.resync import resync_all
from allocations.services.lifecycle import (
    NOT_SUSPENDABLE,
    allocation_resume,
    allocation_suspend,
    allocations_expire_due,
)
from allocations.services.reconcile import allocation_reconcile
from allocations.services.release import allocation_release_objects
from contexts.models import ContextResource
from contextsvc.core.models import AuditEntry
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import annotations_of, is_deleting, labels_of
from contextsvc.kube.objects.kinds import PVC, SANDBOX, SANDBOX_CLAIM, SANDBOX_TEMPLATE, ApiKind
from contextsvc.kube.objects.labels import POOL_LABEL, REPLICAS_KEY
from contextsvc.kube.objects.names import claim_name, sandbox_name, shared_pvc_name
from contextsvc.kube.objects.sandbox import expiry_backstop, operating_mode
from tests.support.api import ApiClient, issue_token
from tests.support.kube import (
    NOTHING,
    admin_delete,
    admin_patch,
    make_warm_pool,
    pool_objects,
    resync_until_settled,
    wait_for_phase,
    wait_for_warm_pool,
)
from tests.support.processes import wait_until
from tests.support.unchanged import everything, kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))


def body(name: str, namespace: str, replicas: int = 1, mode: str = "ReadWriteOnce") -> Any:
    return {
        "name": name,
        "replicas": replicas,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": mode},
    }


def created(api: ApiClient, request: dict[str, Any]) -> dict[str, Any]:
    response = api.post("/v1/sandbox-pools", request)
    assert response.status_code == 201, response.content
    return dict(response.json())


def patch(api: ApiClient, name: str, change: dict[str, Any]) -> Any:
    return api.client.patch(
        f"/v1/sandbox-pools/{name}",
        data=change,
        content_type="application/json",
        headers=api.headers,
    )


def sandbox(namespace: str, pool: str, index: int) -> dict[str, Any]:
    found = kube.get_object(SANDBOX, namespace, sandbox_name(pool, index))
    assert found is not None
    return found


def uid(kind: ApiKind, namespace: str, name: str) -> str:
    found = kube.get_object(kind, namespace, name)
    assert found is not None
    return str(found["metadata"]["uid"])


def audit_actions(target: str) -> list[tuple[str, str]]:
    return list(
        AuditEntry.objects.filter(target=target).order_by("id").values_list("actor", "action")
    )


# --- Expiry ------------------------------------------------------------------------------------


def test_an_allocation_expires_and_its_expiry_can_be_extended(
    api: ApiClient, namespace: str
) -> None:
    before = timezone.now()
    answer = created(api, {**body("brief", namespace), "ttlSeconds": 600})
    allocation = Allocation.objects.get(name="brief")
    assert allocation.expires_at is not None
    assert timedelta(seconds=599) <= allocation.expires_at - before <= timedelta(seconds=610)
    assert answer["expiresAt"] == allocation.expires_at.isoformat().replace("+00:00", "Z")
    wait_for_phase("brief", Phase.READY, timeout=90)
    # The controller's backstop: the Sandbox stops by itself ten minutes after the expiry.
    spec = sandbox(namespace, "brief", 0)["spec"]
    assert (spec["shutdownTime"], spec["shutdownPolicy"]) == (
        expiry_backstop(allocation.expires_at),
        "Retain",
    )

    extended = patch(api, "brief", {"ttlSeconds": 7200})
    assert extended.status_code == 200, extended.content
    allocation.refresh_from_db()
    later = allocation.expires_at
    assert later is not None
    assert extended.json()["expiresAt"] == later.isoformat().replace("+00:00", "Z")
    wait_until(
        lambda: sandbox(namespace, "brief", 0)["spec"]["shutdownTime"] == expiry_backstop(later),
        timeout=30,
        message="the Sandbox's shutdown time to follow the extension",
    )

    # Time passes (as if): beat's expiry releases it, as the service, not the caller.
    Allocation.objects.filter(pk=allocation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert allocations_expire_due() == ["brief"]
    wait_for_phase("brief", Phase.RELEASED, timeout=90)
    assert pool_objects(namespace, "brief") == NOTHING
    assert audit_actions("brief") == [
        ("api:serverless-harness", "allocation.create"),
        ("api:serverless-harness", "allocation.update"),
        ("system:expiry", "allocation.release"),
        ("system:context-service", "allocation.released"),
    ]
    assert AllocationEvent.objects.filter(
        allocation=allocation, kind=AllocationEvent.Kind.EXPIRED
    ).exists()
    assert allocations_expire_due() == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ttlSeconds": 10}, "ttlSeconds must be between 60 and 2592000"),
        (
            {"ttlSeconds": 600, "expiresAt": "2031-01-01T00:00:00Z"},
            "give ttlSeconds or expiresAt, not both",
        ),
        ({"expiresAt": "2031-01-01T00:00:00"}, None),
        ({"expiresAt": "tomorrow"}, None),
        ({"artifacts": {"size": "1Gi", "accessMode": "ReadWriteOnce"}, "replicas": 2}, None),
        (
            {"artifacts": {"size": "big", "accessMode": "ReadWriteMany"}},
            "artifacts.size must be a positive Kubernetes quantity",
        ),
        (
            {"artifacts": {"size": "1Gi", "accessMode": "ReadWriteMany", "keep": True}},
            'unknown field "artifacts.keep"',
        ),
    ],
)
def test_lifecycle_fields_are_checked_and_refusals_write_nothing(
    api: ApiClient, namespace: str, change: dict[str, Any], message: str | None
) -> None:
    before = everything(namespace)

    response = api.post("/v1/sandbox-pools", {**body("refused", namespace), **change})

    assert response.status_code == 400
    if message is not None:
        assert response.json() == {"error": "invalid_request", "message": message}
    assert everything(namespace) == before


@pytest.mark.parametrize(
    "change",
    [{"ttlSeconds": 600, "expiresAt": None}, {"ttlSeconds": None, "expiresAt": None}],
)
def test_a_patch_that_clears_and_sets_the_expiry_at_once_is_refused(
    api: ApiClient, namespace: str, change: dict[str, Any]
) -> None:
    """Issue 32: {"ttlSeconds": 600, "expiresAt": null} answered 200 with a 600 s expiry,
    while both values were already a 400."""
    created(api, body("timed", namespace))
    # The worker provisions it meanwhile (requested → provisioning → ready): a row read
    # just after the create moved under the comparison (a fresh-clone run, issue 45).
    wait_for_phase("timed", Phase.READY, timeout=90)

    with kept(namespace):
        response = patch(api, "timed", change)

        assert (response.status_code, response.json()) == (
            400,
            {"error": "invalid_request", "message": "give ttlSeconds or expiresAt, not both"},
        )


# --- Suspend and resume ------------------------------------------------------------------------


def test_suspend_keeps_the_workspace_and_resume_makes_it_ready_again(
    api: ApiClient, namespace: str
) -> None:
    created(api, body("napping", namespace, replicas=2, mode="ReadWriteMany"))
    wait_for_phase("napping", Phase.READY, timeout=90)
    pvc_uid = uid(PVC, namespace, shared_pvc_name("napping"))

    suspended = api.post("/v1/sandbox-pools/napping/suspend")
    again = api.post("/v1/sandbox-pools/napping/suspend")

    assert suspended.status_code == 200
    assert (suspended.json()["status"], suspended.json()["readyReplicas"]) == ("suspended", 0)
    assert again.json() == suspended.json()  # idempotent: no second change
    wait_until(
        lambda: pool_objects(namespace, "napping")["pods"] == [],
        timeout=60,
        message="the Pods to go",
    )
    assert [operating_mode(sandbox(namespace, "napping", i)) for i in (0, 1)] == [
        "Suspended",
        "Suspended",
    ]
    assert uid(PVC, namespace, shared_pvc_name("napping")) == pvc_uid

    resumed = api.post("/v1/sandbox-pools/napping/resume")
    assert (resumed.status_code, resumed.json()["status"]) == (200, "provisioning")
    assert wait_for_phase("napping", Phase.READY, timeout=90).ready_replicas == 2
    assert pool_objects(namespace, "napping")["pods"] == [
        "sandbox-napping-0",
        "sandbox-napping-1",
    ]
    assert uid(PVC, namespace, shared_pvc_name("napping")) == pvc_uid
    assert audit_actions("napping") == [
        ("api:serverless-harness", "allocation.create"),
        ("api:serverless-harness", "allocation.suspend"),
        ("api:serverless-harness", "allocation.resume"),
    ]
    kinds = list(
        AllocationEvent.objects.filter(allocation__name="napping").values_list("kind", flat=True)
    )
    assert kinds.count(AllocationEvent.Kind.SUSPENDED) == 1
    assert kinds.count(AllocationEvent.Kind.RESUMED) == 1


def test_a_pool_resumed_before_its_suspension_reached_the_cluster_is_ready_again(
    api: ApiClient, namespace: str
) -> None:
    """Suspend and resume in one transaction: the reconciles both run after it, find the
    Sandboxes already as the row wants them (running) and change nothing, so no Pod event
    follows. The pool must still become ready again (it stayed "provisioning" for good)."""
    created(api, body("blink", namespace, replicas=2, mode="ReadWriteMany"))
    wait_for_phase("blink", Phase.READY, timeout=90)
    pods = pool_objects(namespace, "blink")["pods"]

    with transaction.atomic():
        allocation_suspend(name="blink", actor="system:test", reach=EVERY_TEAM)
        resumed = allocation_resume(name="blink", actor="system:test", reach=EVERY_TEAM)
    assert (resumed.phase, resumed.ready_replicas) == (Phase.PROVISIONING, 0)

    assert wait_for_phase("blink", Phase.READY, timeout=30).ready_replicas == 2
    # Never suspended in the cluster: the same Pods, the Sandboxes running throughout.
    assert (
        pool_objects(namespace, "blink")["pods"] == pods == ["sandbox-blink-0", "sandbox-blink-1"]
    )
    assert [operating_mode(sandbox(namespace, "blink", i)) for i in (0, 1)] == [
        "Running",
        "Running",
    ]
    kinds = list(
        AllocationEvent.objects.filter(allocation__name="blink")
        .order_by("at", "id")
        .values_list("kind", flat=True)
    )
    assert kinds[-3:] == [
        AllocationEvent.Kind.SUSPENDED,
        AllocationEvent.Kind.RESUMED,
        AllocationEvent.Kind.READY,
    ]


def test_a_warm_pool_allocation_cannot_be_suspended(api: ApiClient, namespace: str) -> None:
    make_warm_pool(namespace, "agents", replicas=1)
    created(
        api, {"name": "claimed", "replicas": 1, "namespace": namespace, "warmPoolRef": "agents"}
    )
    wait_for_phase("claimed", Phase.READY, timeout=90)
    # The claim took the pool's Sandbox: the pool makes another (a new Sandbox and Pod in
    # the namespace) after the allocation is ready. Compared before that settled, it was
    # what a new machine's first `make test` saw "change" (issue 45).
    wait_for_warm_pool(namespace, "agents", 1)

    with kept(namespace):
        refused = api.post("/v1/sandbox-pools/claimed/suspend")

        assert (refused.status_code, refused.json()) == (
            409,
            {"error": "conflict", "message": NOT_SUSPENDABLE},
        )


def claims_as_written(namespace: str) -> list[tuple[str, str, dict[str, Any], Any]]:
    """The namespace's claims as the service writes them (name, uid, labels, spec): the
    controller keeps annotating and updating a bound claim's status on its own."""
    return sorted(
        (
            claim["metadata"]["name"],
            claim["metadata"]["uid"],
            claim["metadata"].get("labels") or {},
            claim["spec"],
        )
        for claim in kube.list_objects(SANDBOX_CLAIM, namespace)
    )


def test_a_warm_pool_allocation_scales_up_only_while_its_template_is_hardened(
    api: ApiClient, namespace: str
) -> None:
    """Issue 31: the hardening check ran at create only; a template edited since (here its
    container loses allowPrivilegeEscalation: false) was handed out by a PATCH."""
    make_warm_pool(namespace, "agents", replicas=2)
    created(
        api, {"name": "claimed", "replicas": 1, "namespace": namespace, "warmPoolRef": "agents"}
    )
    wait_for_phase("claimed", Phase.READY, timeout=90)
    wait_for_warm_pool(namespace, "agents", 2)  # the pool has replaced the claimed Sandbox
    admin_patch(
        SANDBOX_TEMPLATE,
        namespace,
        "agents-template",
        {"spec": {"podTemplate": {"spec": {"containers": [
            {"name": "sandbox", "image": "busybox:1.36", "securityContext": {
                "capabilities": {"drop": ["ALL"]}}},
        ]}}}},
    )  # fmt: skip
    row = Allocation.objects.values().get(name="claimed")
    claims = claims_as_written(namespace)

    refused = patch(api, "claimed", {"replicas": 2})

    assert refused.status_code == 400
    assert refused.json()["message"] == (
        'warmPoolRef "agents": its SandboxTemplate "agents-template" is not hardened '
        '(restricted privilege-escalation: container "sandbox" does not set '
        "allowPrivilegeEscalation: false); harden it, or relax rules by name in the pool's "
        "context.rossoctl.io/relaxations annotation"
    )
    assert Allocation.objects.values().get(name="claimed") == row
    assert claims_as_written(namespace) == claims
    # Scaling down hands nothing out: it needs no check.
    assert patch(api, "claimed", {"replicas": 1}).status_code == 200


# --- Scale -------------------------------------------------------------------------------------


def test_scaling_adds_and_removes_exactly_the_highest_replicas(
    api: ApiClient, namespace: str
) -> None:
    created(api, body("elastic", namespace, replicas=3))
    wait_for_phase("elastic", Phase.READY, timeout=90)
    survivors = {
        "sandbox": uid(SANDBOX, namespace, "sandbox-elastic-0"),
        "pvc": uid(PVC, namespace, "elastic-workspace-0"),
    }

    down = patch(api, "elastic", {"replicas": 1})

    assert down.status_code == 200
    assert (down.json()["replicas"], down.json()["status"]) == (1, "ready")
    wait_until(
        lambda: (
            pool_objects(namespace, "elastic")
            == {
                "sandboxes": ["sandbox-elastic-0"],
                "claims": [],
                "pvcs": ["elastic-workspace-0"],
                "pods": ["sandbox-elastic-0"],
            }
        ),
        timeout=60,
        message="replicas 1 and 2 to be gone",
    )
    assert uid(SANDBOX, namespace, "sandbox-elastic-0") == survivors["sandbox"]
    assert uid(PVC, namespace, "elastic-workspace-0") == survivors["pvc"]

    up = patch(api, "elastic", {"replicas": 2})
    assert (up.status_code, up.json()["status"]) == (200, "provisioning")
    assert wait_for_phase("elastic", Phase.READY, timeout=90).ready_replicas == 2
    assert pool_objects(namespace, "elastic")["sandboxes"] == [
        "sandbox-elastic-0",
        "sandbox-elastic-1",
    ]
    assert uid(SANDBOX, namespace, "sandbox-elastic-0") == survivors["sandbox"]
    # The Sandboxes say how many replicas their pool has (adoption reads it).
    assert annotations_of(sandbox(namespace, "elastic", 0))[REPLICAS_KEY] == "2"

    refused = patch(api, "elastic", {"replicas": 0})
    assert refused.json() == {
        "error": "invalid_request",
        "message": "replicas must be between 1 and 100",
    }
    assert Allocation.objects.get(name="elastic").replicas == 2


def test_a_shared_allocation_scales_its_sandboxes_and_keeps_its_one_workspace(
    api: ApiClient, namespace: str
) -> None:
    created(api, body("team", namespace, replicas=2, mode="ReadWriteMany"))
    wait_for_phase("team", Phase.READY, timeout=90)
    workspace = uid(PVC, namespace, "team-workspace")

    assert patch(api, "team", {"replicas": 3}).status_code == 200
    assert wait_for_phase("team", Phase.READY, timeout=90).ready_replicas == 3
    assert patch(api, "team", {"replicas": 1}).status_code == 200
    wait_until(
        lambda: (
            pool_objects(namespace, "team")
            == {
                "sandboxes": ["sandbox-team-0"],
                "claims": [],
                "pvcs": ["team-workspace"],
                "pods": ["sandbox-team-0"],
            }
        ),
        timeout=60,
        message="replicas 1 and 2 to be gone",
    )
    # The shared workspace is the same PVC throughout: scaling never touches it.
    assert uid(PVC, namespace, "team-workspace") == workspace


def test_a_warm_pool_allocation_scales_by_its_claims(api: ApiClient, namespace: str) -> None:
    make_warm_pool(namespace, "agents", replicas=3)
    created(
        api, {"name": "claimed", "replicas": 1, "namespace": namespace, "warmPoolRef": "agents"}
    )
    wait_for_phase("claimed", Phase.READY, timeout=90)
    first = uid(SANDBOX_CLAIM, namespace, claim_name("claimed", 0))

    assert patch(api, "claimed", {"replicas": 3}).status_code == 200
    assert wait_for_phase("claimed", Phase.READY, timeout=90).ready_replicas == 3
    assert pool_objects(namespace, "claimed")["claims"] == [
        claim_name("claimed", i) for i in range(3)
    ]

    assert patch(api, "claimed", {"replicas": 2}).status_code == 200
    wait_until(
        lambda: (
            pool_objects(namespace, "claimed")["claims"]
            == [claim_name("claimed", i) for i in range(2)]
        ),
        timeout=60,
        message="the third claim to be gone",
    )
    assert uid(SANDBOX_CLAIM, namespace, claim_name("claimed", 0)) == first
    assert Allocation.objects.get(name="claimed").replicas == 2


def test_the_resync_finishes_a_scale_down_whose_prune_was_lost(
    api: ApiClient, namespace: str
) -> None:
    created(api, body("shrunk", namespace, replicas=2))
    wait_for_phase("shrunk", Phase.READY, timeout=90)
    # Until now the cycles skip this pool: nothing happened to its objects.
    resync_until_settled()
    # As if the scale-down had committed and its reconcile had never reached the worker
    # (nor set the row's prune flag): the objects did not change, the row did.
    Allocation.objects.filter(name="shrunk").update(replicas=1, ready_replicas=1)

    report = resync_all(adopt=False)

    assert report.requeued == ["shrunk"]
    wait_until(
        lambda: pool_objects(namespace, "shrunk")["sandboxes"] == ["sandbox-shrunk-0"],
        timeout=60,
        message="the surplus Sandbox to be pruned",
    )
    wait_until(
        lambda: not Allocation.objects.get(name="shrunk").prune_pending,
        timeout=30,
        message="the prune to be noted done",
    )
    assert pool_objects(namespace, "shrunk")["pvcs"] == ["shrunk-workspace-0"]
    assert Allocation.objects.get(name="shrunk").phase == Phase.READY


def test_a_wanted_sandbox_still_being_deleted_is_made_again_once_it_is_gone(
    api: ApiClient, namespace: str
) -> None:
    """A scale down and back up can leave a wanted Sandbox's name held by the old one, still
    deleting: the reconcile that meets it says so and comes back, and the Sandbox is made
    again (a race of test_scale_release_and_reconcile_racing... left it missing for ever)."""
    created(api, body("comeback", namespace, replicas=2))
    wait_for_phase("comeback", Phase.READY, timeout=90)
    name = sandbox_name("comeback", 1)
    old = uid(SANDBOX, namespace, name)
    # Held on its way out, as a Sandbox is while its Pod terminates.
    admin_patch(SANDBOX, namespace, name, {"metadata": {"finalizers": ["test.example/hold"]}})
    admin_delete(SANDBOX, namespace, name)
    allocation = Allocation.objects.get(name="comeback")

    assert allocation_reconcile(allocation.pk) == "created 0, patched 0, deleted 0, waiting 1"

    admin_patch(SANDBOX, namespace, name, {"metadata": {"finalizers": None}})
    wait_until(
        lambda: (
            (found := kube.get_object(SANDBOX, namespace, name)) is not None
            and found["metadata"]["uid"] != old
            and not is_deleting(found)
        ),
        timeout=60,
        message="the Sandbox to be made again",
    )
    assert wait_for_phase("comeback", Phase.READY, timeout=90).ready_replicas == 2
    assert pool_objects(namespace, "comeback")["sandboxes"] == [
        sandbox_name("comeback", 0),
        name,
    ]


def test_a_release_deletes_once_and_the_watcher_records_its_end(
    api: ApiClient, namespace: str
) -> None:
    """The release task asks the cluster to delete and returns: it does not poll until the
    objects are gone (a list per kind every second of every release), the watcher sees the
    last one go and records the release."""
    created(api, body("once", namespace))
    wait_for_phase("once", Phase.READY, timeout=90)
    name = sandbox_name("once", 0)
    # Held on its way out, so that the release cannot end before the watcher's part.
    admin_patch(SANDBOX, namespace, name, {"metadata": {"finalizers": ["test.example/hold"]}})

    assert api.delete("/v1/sandbox-pools/once").status_code == 204
    wait_until(
        lambda: pool_objects(namespace, "once") == {**NOTHING, "sandboxes": [name]},
        timeout=60,
        message="everything but the held Sandbox to be gone",
    )
    allocation = Allocation.objects.get(name="once")

    # Once more, as the resync would queue it: the held Sandbox is already being deleted.
    assert allocation_release_objects(allocation.pk) == "deleting 1"
    assert Allocation.objects.get(pk=allocation.pk).phase == Phase.RELEASING

    admin_patch(SANDBOX, namespace, name, {"metadata": {"finalizers": None}})
    released = wait_for_phase("once", Phase.RELEASED, timeout=60)
    assert list(
        released.events.filter(kind=AllocationEvent.Kind.RELEASED).values_list("message", flat=True)
    ) == ["all objects deleted"]
    assert pool_objects(namespace, "once") == NOTHING


def test_scale_release_and_reconcile_racing_end_with_exactly_what_the_row_says(
    api: ApiClient, namespace: str
) -> None:
    created(api, body("racy", namespace, replicas=2))
    wait_for_phase("racy", Phase.READY, timeout=90)
    allocation = Allocation.objects.get(name="racy")
    barrier = threading.Barrier(3)
    answers: dict[str, int] = {}
    reconciled: list[str] = []

    def scale(replicas: int) -> None:
        barrier.wait()
        answers[f"to {replicas}"] = patch(api, "racy", {"replicas": replicas}).status_code

    def reconcile() -> None:
        barrier.wait()
        # What it did (an exception would leave nothing here, and fail the test below).
        reconciled.append(allocation_reconcile(allocation.pk))

    threads = [
        threading.Thread(target=scale, args=(4,)),
        threading.Thread(target=scale, args=(1,)),
        threading.Thread(target=reconcile),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == {"to 4": 200, "to 1": 200}
    # The reconcile really ran beside the scales, and made the cluster hold some row's state.
    assert len(reconciled) == 1
    assert reconciled[0].startswith("created ")
    final = Allocation.objects.get(pk=allocation.pk).replicas
    assert final in (1, 4)
    wait_for_phase("racy", Phase.READY, timeout=90)
    wanted = [f"sandbox-racy-{i}" for i in range(final)]
    wait_until(
        lambda: pool_objects(namespace, "racy")["sandboxes"] == wanted,
        timeout=60,
        message=f"exactly {final} Sandboxes",
    )
    assert pool_objects(namespace, "racy")["pvcs"] == [f"racy-workspace-{i}" for i in range(final)]

    # A scale and a release at the same moment: the release wins in the end.
    barrier = threading.Barrier(2)

    def release() -> None:
        barrier.wait()
        answers["release"] = api.delete("/v1/sandbox-pools/racy").status_code

    threads = [threading.Thread(target=scale, args=(3,)), threading.Thread(target=release)]
    barrier = threading.Barrier(2)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers["release"] == 204
    assert answers["to 3"] in (200, 404)
    wait_for_phase("racy", Phase.RELEASED, timeout=90)
    assert pool_objects(namespace, "racy") == NOTHING


# --- Artifacts ---------------------------------------------------------------------------------


def test_retained_artifacts_outlive_their_producer_and_a_consumer_mounts_them_read_only(
    api: ApiClient, namespace: str
) -> None:
    producer = created(
        api,
        {
            **body("producer", namespace, replicas=2, mode="ReadWriteMany"),
            "artifacts": {"size": "2Gi", "accessMode": "ReadWriteMany", "retain": True},
        },
    )
    claim = "context-producer-artifacts"
    assert producer["artifacts"] == {
        "size": "2Gi",
        "accessMode": "ReadWriteMany",
        "retain": True,
        "claimName": claim,
    }
    wait_for_phase("producer", Phase.READY, timeout=90)
    for index in (0, 1):
        pod_spec = sandbox(namespace, "producer", index)["spec"]["podTemplate"]["spec"]
        assert {"name": "artifacts", "persistentVolumeClaim": {"claimName": claim}} in pod_spec[
            "volumes"
        ]
        assert {"name": "artifacts", "mountPath": "/artifacts"} in pod_spec["containers"][0][
            "volumeMounts"
        ]
    pvc_uid = uid(PVC, namespace, claim)

    assert api.delete("/v1/sandbox-pools/producer").status_code == 204
    wait_for_phase("producer", Phase.RELEASED, timeout=90)

    # The producer's objects are gone; its artifacts are a context now.
    assert pool_objects(namespace, "producer") == NOTHING
    assert uid(PVC, namespace, claim) == pvc_uid
    left = kube.get_object(PVC, namespace, claim)
    assert left is not None
    assert POOL_LABEL not in labels_of(left)
    listed = api.get(f"/v1/namespaces/{namespace}/contexts").json()["items"]
    assert [(c["name"], c["type"], c["attachment"]["claimName"]) for c in listed] == [
        ("producer-artifacts", "artifacts", claim)
    ]
    # Recorded once (a release runs its steps again until nothing is left), by the service.
    assert list(
        AuditEntry.objects.filter(
            action="context.create", target=f"{namespace}/producer-artifacts"
        ).values_list("actor", "payload")
    ) == [("system:context-service", {"type": "artifacts", "from_allocation": "producer"})]
    assert list(
        AllocationEvent.objects.filter(
            allocation__name="producer", kind=AllocationEvent.Kind.RETAINED
        ).values_list("message", flat=True)
    ) == [f"artifacts kept as context {namespace}/producer-artifacts"]

    consumer = created(
        api,
        {
            "name": "consumer",
            "replicas": 1,
            "namespace": namespace,
            "workspace": {"claimName": claim, "readOnly": True},
        },
    )
    assert consumer["workspace"]["readOnly"] is True
    wait_for_phase("consumer", Phase.READY, timeout=90)
    volumes = sandbox(namespace, "consumer", 0)["spec"]["podTemplate"]["spec"]["volumes"]
    assert volumes[0] == {
        "name": "workspace",
        "persistentVolumeClaim": {"claimName": claim, "readOnly": True},
    }
    assert api.delete("/v1/sandbox-pools/consumer").status_code == 204
    wait_for_phase("consumer", Phase.RELEASED, timeout=90)
    assert uid(PVC, namespace, claim) == pvc_uid  # a caller's PVC is never deleted

    deleted = api.delete(f"/v1/namespaces/{namespace}/contexts/producer-artifacts")
    assert deleted.status_code == 204
    wait_until(
        lambda: kube.get_object(PVC, namespace, claim) is None,
        timeout=60,
        message="the artifacts PVC to go with its context",
    )
    assert ContextResource.objects.get(name="producer-artifacts").status in (
        ContextResource.Status.DELETING,
        ContextResource.Status.DELETED,
    )


def test_artifacts_not_retained_go_with_the_allocation(api: ApiClient, namespace: str) -> None:
    created(
        api,
        {**body("scratch", namespace), "artifacts": {"size": "1Gi", "accessMode": "ReadWriteOnce"}},
    )
    wait_for_phase("scratch", Phase.READY, timeout=90)
    assert "context-scratch-artifacts" in pool_objects(namespace, "scratch")["pvcs"]

    assert api.delete("/v1/sandbox-pools/scratch").status_code == 204
    wait_for_phase("scratch", Phase.RELEASED, timeout=90)

    assert pool_objects(namespace, "scratch") == NOTHING
    assert kube.get_object(PVC, namespace, "context-scratch-artifacts") is None
    assert not ContextResource.objects.exists()

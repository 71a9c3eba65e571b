"""Issue 32, item 10: an allocation that can never become ready says why. Before, a pool
with ``"storageClass": "ibm-scale-csi"`` (no such class) was a 201 and stayed
``provisioning``, ``readyReplicas: 0``, no ``message``, for an hour. Now a class the
cluster lacks is refused at POST; and a volume nothing provisions brings the PV
controller's own words into the API's message, the stuck list and the timeline, and fails
the allocation past the reconcile deadline, which rolls it back."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.resync import resync_all
from allocations.selectors import allocation_needs_attention
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import EVENT, STORAGE_CLASS
from contextsvc.kube.objects.pvc import PVC_EVENTS_SELECTOR
from tests.support.api import ApiClient, issue_token
from tests.support.kube import NOTHING, admin_create, admin_delete, pool_objects, wait_for_phase
from tests.support.processes import wait_until
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))


@pytest.fixture
def unprovisioned_class() -> Iterator[str]:
    """A StorageClass that exists, whose provisioner nobody runs."""
    name = f"nobody-{uuid.uuid4().hex[:8]}"
    admin_create(
        STORAGE_CLASS,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": "example.com/nobody",
            "volumeBindingMode": "Immediate",
        },
    )
    yield name
    admin_delete(STORAGE_CLASS, "", name)


def pool(name: str, namespace: str, storage_class: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": 1,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce", "storageClass": storage_class},
        **extra,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"workspace": {"size": "1Gi", "accessMode": "ReadWriteMany",
                           "storageClass": "ibm-scale-csi"}},
            'workspace.storageClass "ibm-scale-csi": no such StorageClass in the cluster',
        ),
        (
            {"workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
             "artifacts": {"size": "1Gi", "accessMode": "ReadWriteMany",
                           "storageClass": "ibm-scale-csi"}},
            'artifacts.storageClass "ibm-scale-csi": no such StorageClass in the cluster',
        ),
    ],
    ids=["workspace", "artifacts"],
)  # fmt: skip
def test_a_storage_class_the_cluster_lacks_is_refused_and_nothing_is_made(
    api: ApiClient, namespace: str, body: dict[str, Any], message: str
) -> None:
    with kept(namespace):
        response = api.post(
            "/v1/sandbox-pools", {"name": "nowhere", "replicas": 1, "namespace": namespace, **body}
        )

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )


def test_a_named_context_of_a_class_the_cluster_lacks_is_refused(namespace: str) -> None:
    contexts = ApiClient(issue_token("rossoctl", ["allocations"]))
    with kept(namespace):
        response = contexts.post(
            "/v1/contexts",
            {
                "name": "memory",
                "namespace": namespace,
                "type": "memory",
                "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
                            "storageClass": "ibm-scale-csi"},
            },
        )  # fmt: skip

    assert (response.status_code, response.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": 'storage.storageClass "ibm-scale-csi": no such StorageClass in the cluster',
        },
    )


def test_a_class_that_exists_is_answered_as_before(api: ApiClient, namespace: str) -> None:
    response = api.post("/v1/sandbox-pools", pool("classy", namespace, "standard"))

    assert response.status_code == 201
    assert response.json()["workspace"] == {
        "size": "1Gi",
        "accessMode": "ReadWriteOnce",
        "storageClass": "standard",
    }
    wait_for_phase("classy", Phase.READY, timeout=90)


def test_a_volume_nothing_provisions_says_why_and_fails_past_the_deadline(
    api: ApiClient, namespace: str, unprovisioned_class: str, settings: Any
) -> None:
    settings.CS_VOLUME_PENDING_GRACE_SECONDS = 0
    assert (
        api.post("/v1/sandbox-pools", pool("stuck", namespace, unprovisioned_class)).status_code
        == 201
    )
    pvc_name = wait_until(
        lambda: next(iter(pool_objects(namespace, "stuck")["pvcs"]), None),
        timeout=60,
        message="the workspace PVC",
    )
    said = wait_until(
        lambda: [
            event
            for event in kube.list_objects(EVENT, namespace, fields=PVC_EVENTS_SELECTOR)
            if event["involvedObject"]["name"] == pvc_name
        ],
        timeout=60,
        message="the PV controller to say something of the PVC",
    )  # fmt: skip
    assert isinstance(said, list)
    (event,) = {(e["reason"], e["message"]) for e in said}
    assert event[0] == "ExternalProvisioning"
    assert "example.com/nobody" in event[1]
    why = f"PersistentVolumeClaim {pvc_name}: {event[1]}"
    # The PVC is made in the reconcile's second stage and the PV controller speaks of it at
    # once, so both can be seen before the reconcile has made the Sandbox and moved the row
    # to provisioning. A resync then would find it still requested (CI saw this once).
    wait_for_phase("stuck", Phase.PROVISIONING)

    resync_all(adopt=False)

    allocation = Allocation.objects.get(name="stuck")
    assert (allocation.phase, allocation.reason, allocation.message) == (
        Phase.PROVISIONING,
        "ExternalProvisioning",
        why,
    )
    shown = api.get("/v1/sandbox-pools/stuck").json()
    assert (shown["status"], shown["readyReplicas"], shown["message"]) == ("provisioning", 0, why)
    (attention,) = [
        item["why"]
        for item in allocation_needs_attention(stuck_after_seconds=300, reach=EVERY_TEAM)
        if item["allocation"].name == "stuck"
    ]
    assert attention == f"0/1 ready after 0 min; ExternalProvisioning: {why}"
    assert f"0/1 replicas ready; ExternalProvisioning: {why}" in list(
        allocation.events.values_list("message", flat=True)
    )

    # As if it had been provisioning for longer than the reconcile deadline (300 s).
    Allocation.objects.filter(pk=allocation.pk).update(
        requested_at=timezone.now() - timedelta(seconds=301)
    )
    resync_all(adopt=False)

    allocation.refresh_from_db()
    assert (allocation.phase, allocation.reason, allocation.message) == (
        Phase.FAILED,
        "ExternalProvisioning",
        f"{why} (still reported after the 300 s reconcile deadline)",
    )
    assert allocation.events.filter(kind=AllocationEvent.Kind.FAILED).count() == 1
    wait_until(
        lambda: pool_objects(namespace, "stuck") == NOTHING,
        timeout=60,
        message="the rollback to remove the allocation's objects",
    )

"""Named contexts (/v1/contexts): a labelled PVC, ready once Bound, deleted on DELETE."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from allocations.resync import resync_all
from contexts.models import ContextResource
from contexts.tests.factories import ContextResourceFactory
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.pvc import pvc_is_bound
from testenv import ClusterHandle
from tests.support.api import ApiClient, issue_token
from tests.support.kube import frozen_apiserver, make_pvc
from tests.support.processes import wait_until
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("rossoctl", ["allocations"]))


def test_context_lifecycle(api: ApiClient, namespace: str) -> None:
    response = api.post(
        "/v1/contexts",
        {
            "name": "research-memory",
            "namespace": namespace,
            "type": "memory",
            "storage": {
                "backend": "pvc",
                "size": "5Gi",
                "accessMode": "ReadWriteMany",
                "storageClass": "standard",
            },
        },
    )

    assert response.status_code == 201
    body = response.json()
    # "ready once the PVC is Bound, else provisioning" (v1-api.md): the test cluster's
    # provisioner may bind it, and the watcher record that, before the 201 is written.
    status = body.pop("status")
    assert status == "provisioning" or (
        status == "ready"
        and pvc_is_bound(kube.get_object(PVC, namespace, "context-research-memory") or {})
    ), status
    assert body == {
        "name": "research-memory",
        "namespace": namespace,
        "type": "memory",
        "storage": {
            "backend": "pvc",
            "size": "5Gi",
            "accessMode": "ReadWriteMany",
            "storageClass": "standard",
        },
        "attachment": {"kind": "pvc", "claimName": "context-research-memory"},
    }
    # The PVC exists when the 201 arrives (callers mount claimName at once), made by the
    # request itself: no reconcile task ran for it.
    created = kube.get_object(PVC, namespace, "context-research-memory")
    assert created is not None
    assert created["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert created["spec"]["accessModes"] == ["ReadWriteMany"]
    assert created["spec"]["storageClassName"] == "standard"
    path = f"/v1/namespaces/{namespace}/contexts/research-memory"
    wait_until(
        lambda: api.get(path).json()["status"] == "ready",
        timeout=60,
        message="the context PVC to bind",
    )
    pvc = kube.get_object(PVC, namespace, "context-research-memory")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "research-memory",
        "context.rossoctl.io/type": "memory",
    }
    listed = api.get(f"/v1/namespaces/{namespace}/contexts").json()
    assert [item["name"] for item in listed["items"]] == ["research-memory"]

    with kept(namespace):
        duplicate = api.post(
            "/v1/contexts",
            {
                "name": "research-memory",
                "namespace": namespace,
                "type": "memory",
                "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"},
            },
        )
    assert duplicate.status_code == 409
    assert duplicate.json()["error"] == "already_exists"

    assert api.delete(path).status_code == 204
    assert api.get(path).status_code == 404
    wait_until(
        lambda: kube.get_object(PVC, namespace, "context-research-memory") is None,
        timeout=60,
        message="the PVC to be deleted",
    )
    wait_until(
        lambda: ContextResource.objects.get().status == ContextResource.Status.DELETED,
        timeout=30,
        message="the context to be marked deleted",
    )
    assert list(
        AuditEntry.objects.filter(target_type="context")
        .values_list("action", flat=True)
        .order_by("id")
    ) == ["context.create", "context.delete"]


def test_a_pvc_without_both_labels_is_not_a_context(api: ApiClient, namespace: str) -> None:
    make_pvc(
        namespace,
        "context-plain",
        modes=["ReadWriteOnce"],
        labels={"app.kubernetes.io/managed-by": "context-service"},
    )

    # Adoption (the resync's, or manage.py adopt) needs both labels.
    report = resync_all()
    assert (report.adopted, report.orphans) == ([], [])
    assert not ContextResource.objects.exists()
    assert api.get(f"/v1/namespaces/{namespace}/contexts/plain").status_code == 404
    assert api.get(f"/v1/namespaces/{namespace}/contexts").json() == {"items": []}


def _context_body(namespace: str, name: str = "notes") -> dict[str, object]:
    return {
        "name": name,
        "namespace": namespace,
        "type": "knowledge",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"},
    }


def test_a_context_in_a_namespace_that_does_not_exist_is_refused(api: ApiClient) -> None:
    with kept():
        response = api.post("/v1/contexts", _context_body("no-such-namespace-here"))

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": 'namespace "no-such-namespace-here" does not exist',
    }


def test_a_foreign_pvc_under_the_name_is_a_409_and_stays(api: ApiClient, namespace: str) -> None:
    make_pvc(namespace, "context-notes", modes=["ReadWriteOnce"], labels={"team": "theirs"})

    with kept(namespace):
        response = api.post("/v1/contexts", _context_body(namespace))

    assert response.status_code == 409
    assert response.json() == {
        "error": "already_exists",
        "message": f'context "notes" already exists in namespace "{namespace}"',
    }
    pvc = kube.get_object(PVC, namespace, "context-notes")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {"team": "theirs"}


def test_the_resync_creates_the_pvc_of_a_context_whose_request_died(
    api: ApiClient, namespace: str
) -> None:
    """A web process that dies between committing the row and creating the PVC leaves a
    provisioning context without one; the resync hands it to the worker."""
    context = ContextResourceFactory.create(name="orphaned", namespace=namespace)
    ContextResource.objects.filter(pk=context.pk).update(
        updated_at=timezone.now() - timedelta(minutes=10)
    )

    report = resync_all(adopt=False)

    assert report.requeued == [f"context {namespace}/orphaned"]
    wait_until(
        lambda: kube.get_object(PVC, namespace, "context-orphaned") is not None,
        timeout=30,
        message="the worker to create the context's PVC",
    )
    pvc = kube.get_object(PVC, namespace, "context-orphaned")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "orphaned",
        "context.rossoctl.io/type": "memory",
    }


def test_a_transient_failure_answers_201_and_the_worker_creates_the_pvc(
    api: ApiClient, namespace: str, kube_cluster: ClusterHandle, settings: Any
) -> None:
    """With the API server hung, the request cannot create the PVC: it says so, and the
    worker (the safety net) creates it once the server answers again."""
    settings.CS_KUBE_TIMEOUT_SECONDS = 1
    with frozen_apiserver(kube_cluster):
        response = api.post("/v1/contexts", _context_body(namespace, "late"))

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "provisioning"
    assert body["attachment"] == {"kind": "pvc", "claimName": "context-late"}
    assert body["message"].startswith(
        f"the PVC could not be created yet (creating PersistentVolumeClaim {namespace}/context-late: "
    )
    assert body["message"].endswith("); the service keeps trying")
    wait_until(
        lambda: kube.get_object(PVC, namespace, "context-late") is not None,
        timeout=60,
        message="the worker to create the PVC",
    )
    assert list(
        AuditEntry.objects.filter(target_type="context").values_list("action", "target")
    ) == [("context.create", f"{namespace}/late")]

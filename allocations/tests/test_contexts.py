"""Named contexts (/v1/contexts): a labelled PVC, ready once Bound, deleted on DELETE."""

from __future__ import annotations

import pytest

from allocations.models import ContextResource
from allocations.resync import resync_all
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube import objects
from tests.support.api import ApiClient, issue_token
from tests.support.kube import make_pvc
from tests.support.processes import wait_until

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
    assert response.json() == {
        "name": "research-memory",
        "namespace": namespace,
        "type": "memory",
        "status": "provisioning",
        "storage": {
            "backend": "pvc",
            "size": "5Gi",
            "accessMode": "ReadWriteMany",
            "storageClass": "standard",
        },
        "attachment": {"kind": "pvc", "claimName": "context-research-memory"},
    }
    path = f"/v1/namespaces/{namespace}/contexts/research-memory"
    wait_until(
        lambda: api.get(path).json()["status"] == "ready",
        timeout=60,
        message="the context PVC to bind",
    )
    pvc = kube.get_object(objects.PVC, namespace, "context-research-memory")
    assert pvc is not None
    assert pvc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service",
        "context.rossoctl.io/name": "research-memory",
        "context.rossoctl.io/type": "memory",
    }
    listed = api.get(f"/v1/namespaces/{namespace}/contexts").json()
    assert [item["name"] for item in listed["items"]] == ["research-memory"]

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
        lambda: kube.get_object(objects.PVC, namespace, "context-research-memory") is None,
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

    # Adoption (the resync's, or manage.py adopt) needs both labels. (Other tests' objects
    # may still be in the cluster while their namespaces go, so look at this one only.)
    report = resync_all()
    assert "plain" not in report.adopted
    assert not ContextResource.objects.exists()
    assert api.get(f"/v1/namespaces/{namespace}/contexts/plain").status_code == 404
    assert api.get(f"/v1/namespaces/{namespace}/contexts").json() == {"items": []}

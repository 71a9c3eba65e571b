"""Objects made directly with the original labels (as the Go service left them) become
allocations; what cannot be understood is reported and never deleted."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from allocations.models import Allocation, AllocationEvent, Phase
from allocations.resync import resync_all
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import POD, PVC, SANDBOX
from contextsvc.kube.objects.labels import pool_labels, pool_selector
from contextsvc.kube.objects.pod import pod_is_ready
from contextsvc.kube.objects.pvc import pvc_is_bound
from tests.support.api import ApiClient, issue_token
from tests.support.kube import NOTHING, admin_create, make_pvc, pool_objects, wait_for_phase
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def legacy_shared_pool(namespace: str, name: str, replicas: int) -> None:
    """What the Go service created for a shared RWX allocation, written out from the v1
    contract rather than with our own builders, so that a drift in ours shows here."""
    labels = {"context.rossoctl.io/pool": name, "app.kubernetes.io/managed-by": "context-service"}
    admin_create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": f"{name}-workspace",
                "namespace": namespace,
                "labels": {**labels, "context.rossoctl.io/replicas": str(replicas)},
            },
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "3Gi"}},
                "storageClassName": "standard",
            },
        },
    )
    for index in range(replicas):
        admin_create(
            SANDBOX,
            {
                "apiVersion": "agents.x-k8s.io/v1beta1",
                "kind": "Sandbox",
                "metadata": {
                    "name": f"sandbox-{name}-{index}",
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {
                        "context.rossoctl.io/replicas": str(replicas),
                        "context.rossoctl.io/workspace-read-only": "false",
                    },
                },
                "spec": {
                    "podTemplate": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "containers": [
                                {
                                    "name": "sandbox",
                                    "image": "busybox:1.36",
                                    "command": [
                                        "/bin/sh",
                                        "-c",
                                        "mkdir -p /workspace && exec sleep infinity",
                                    ],
                                    "workingDir": "/workspace",
                                    "volumeMounts": [
                                        {"name": "workspace", "mountPath": "/workspace"}
                                    ],
                                }
                            ],
                            "volumes": [
                                {
                                    "name": "workspace",
                                    "persistentVolumeClaim": {"claimName": f"{name}-workspace"},
                                }
                            ],
                        },
                    }
                },
            },
        )


def legacy_context_pvc(namespace: str, pvc_name: str, name: str, context_type: str) -> None:
    """A named context's PVC as the Go service made it (v1 contract)."""
    admin_create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": pvc_name,
                "namespace": namespace,
                "labels": {
                    "app.kubernetes.io/managed-by": "context-service",
                    "context.rossoctl.io/name": name,
                    "context.rossoctl.io/type": context_type,
                },
            },
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "2Gi"}},
                "storageClassName": "standard",
            },
        },
    )


def test_adopt_command_turns_legacy_objects_into_an_allocation(namespace: str) -> None:
    legacy_shared_pool(namespace, "legacy", 2)
    # Ready before the adoption reads them: the adopted row takes its readiness from that
    # read, and no later Pod event would come to correct it (the resync would, in time).
    wait_until(
        lambda: (
            sum(
                pod_is_ready(pod)
                for pod in kube.list_objects(POD, namespace, pool_selector("legacy"))
            )
            == 2
        ),
        timeout=60,
        message="the legacy pods to be ready",
    )
    out = StringIO()

    call_command("adopt", "--dry-run", stdout=out)
    assert Allocation.objects.count() == 0
    assert f"would adopt {namespace}/legacy: shared, 2 replica(s)" in out.getvalue()

    call_command("adopt", stdout=out)

    allocation = Allocation.objects.get(name="legacy")
    assert (allocation.namespace, allocation.strategy, allocation.replicas) == (
        namespace,
        "shared",
        2,
    )
    assert (
        allocation.workspace_size,
        allocation.workspace_access_mode,
        allocation.workspace_storage_class,
    ) == ("3Gi", "ReadWriteMany", "standard")
    assert allocation.adopted is True
    assert allocation.events.values_list("kind", flat=True).first() == AllocationEvent.Kind.ADOPTED
    assert (
        AuditEntry.objects.filter(
            action="allocation.adopt", target="legacy", actor="system:adoption"
        ).count()
        == 1
    )
    wait_for_phase("legacy", Phase.READY)

    # Adopted allocations are served and released like any other.
    api = ApiClient(issue_token("rossoctl", ["allocations"]))
    body = api.get("/v1/sandbox-pools/legacy").json()
    assert body["status"] == "ready"
    assert body["readyReplicas"] == 2
    assert api.delete("/v1/sandbox-pools/legacy").status_code == 204
    wait_for_phase("legacy", Phase.RELEASED)
    assert pool_objects(namespace, "legacy") == NOTHING


def test_resync_adopts_and_reports_orphans_without_deleting(namespace: str) -> None:
    legacy_shared_pool(namespace, "old-one", 1)
    # Only a workspace PVC is left of this one: nothing to run, so nothing to adopt.
    make_pvc(namespace, "stray-workspace", modes=["ReadWriteOnce"], labels=pool_labels("stray"))

    report = resync_all()

    # Exactly these: every other test's objects are gone before the next test starts.
    assert report.adopted == ["old-one"]
    assert [(o.namespace, o.pool, o.why, o.objects) for o in report.orphans] == [
        (
            namespace,
            "stray",
            "no Sandbox or SandboxClaim carries this pool label",
            ("PersistentVolumeClaim/stray-workspace",),
        )
    ]
    assert not Allocation.objects.filter(name="stray").exists()
    assert kube.get_object(PVC, namespace, "stray-workspace") is not None


def test_legacy_named_contexts_are_adopted_served_and_deleted(namespace: str) -> None:
    api = ApiClient(issue_token("rossoctl", ["allocations"]))
    legacy_context_pvc(namespace, "context-old-notes", "old-notes", "knowledge")
    # Labelled, but not the PVC a context of that name would have: reported, left alone.
    legacy_context_pvc(namespace, "context-renamed", "other", "memory")
    wait_until(
        lambda: all(
            pvc_is_bound(kube.get_object(PVC, namespace, name) or {})
            for name in ("context-old-notes", "context-renamed")
        ),
        timeout=60,
        message="the legacy PVCs to bind",
    )
    path = f"/v1/namespaces/{namespace}/contexts/old-notes"
    assert api.get(path).status_code == 404

    report = resync_all()

    assert report.adopted == ["old-notes"]
    assert [(o.namespace, o.pool, o.why) for o in report.orphans] == [
        (namespace, "other", "not the PVC a context named 'other' would have")
    ]
    assert api.get(path).json() == {
        "name": "old-notes",
        "namespace": namespace,
        "type": "knowledge",
        "status": "ready",
        "storage": {
            "backend": "pvc",
            "size": "2Gi",
            "accessMode": "ReadWriteMany",
            "storageClass": "standard",
        },
        "attachment": {"kind": "pvc", "claimName": "context-old-notes"},
    }
    assert resync_all().adopted == []  # once is enough

    assert api.delete(path).status_code == 204
    wait_until(
        lambda: kube.get_object(PVC, namespace, "context-old-notes") is None,
        timeout=60,
        message="the adopted context's PVC to be deleted",
    )
    assert kube.get_object(PVC, namespace, "context-renamed") is not None
    assert list(
        AuditEntry.objects.filter(target=f"{namespace}/old-notes")
        .order_by("id")
        .values_list("actor", "action")
    ) == [("system:adoption", "context.adopt"), ("api:rossoctl", "context.delete")]

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
from contextsvc.kube import objects
from tests.support.api import ApiClient, issue_token
from tests.support.kube import NOTHING, admin_create, make_pvc, pool_objects, wait_for_phase
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def legacy_shared_pool(namespace: str, name: str, replicas: int) -> None:
    """What the Go service created for a shared RWX allocation."""
    spec = objects.PoolSpec(
        name=name,
        namespace=namespace,
        replicas=replicas,
        strategy="shared",
        size="3Gi",
        access_mode="ReadWriteMany",
        storage_class="standard",
    )
    admin_create(objects.PVC, objects.pvc_manifest(spec, objects.shared_pvc_name(name)))
    for index in range(replicas):
        admin_create(
            objects.SANDBOX,
            objects.sandbox_manifest(spec, index, objects.builtin_blueprint(image="busybox:1.36")),
        )


def test_adopt_command_turns_legacy_objects_into_an_allocation(namespace: str) -> None:
    legacy_shared_pool(namespace, "legacy", 2)
    wait_until(
        lambda: (
            len(kube.list_objects(objects.POD, namespace, objects.pool_selector("legacy"))) == 2
        ),
        timeout=60,
        message="the legacy pods",
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
    make_pvc(
        namespace, "stray-workspace", modes=["ReadWriteOnce"], labels=objects.pool_labels("stray")
    )

    report = resync_all()

    assert "old-one" in report.adopted
    orphan = next(o for o in report.orphans if o.pool == "stray")
    assert orphan.why == "no Sandbox or SandboxClaim carries this pool label"
    assert orphan.objects == ("PersistentVolumeClaim/stray-workspace",)
    assert not Allocation.objects.filter(name="stray").exists()
    assert kube.get_object(objects.PVC, namespace, "stray-workspace") is not None

"""The order a reconcile creates an allocation's objects in: the NetworkPolicy, then the
PVCs, then the Sandboxes, each stage's objects at once. A Sandbox made together with its
PVC has a Pod that reaches the scheduler before the claim is bound, is refused, and waits
out a back-off (docs/performance.md, "Scale")."""

from __future__ import annotations

import pytest

from allocations import provisioning
from allocations.models import Phase
from allocations.tests.factories import AllocationFactory
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import NETWORK_POLICY, PVC, SANDBOX
from tests.support.kube import kube_calls, pool_objects

pytestmark = pytest.mark.cluster


@pytest.mark.django_db
def test_the_fence_then_the_volumes_then_the_sandboxes(namespace: str) -> None:
    allocation = AllocationFactory.create(
        name="staged",
        namespace=namespace,
        replicas=2,
        strategy="dedicated",
        workspace_access_mode="ReadWriteOnce",
        phase=Phase.REQUESTED,
    )

    with kube_calls() as calls:
        synced = provisioning.sync(allocation)

    stages = [kube._path(kind, namespace) for kind in (NETWORK_POLICY, PVC, SANDBOX)]
    creates = [(what, stages.index(path)) for what, method, path in calls.log if method == "POST"]
    assert sorted(stage for what, stage in creates if what == "sent") == [0, 1, 1, 2, 2]
    # Each create is sent only once every create of the stage before it has its answer.
    for position, (what, stage) in enumerate(creates):
        if what == "sent" and stage > 0:
            answered_before = [s for w, s in creates[:position] if w == "answered"]
            assert answered_before.count(stage - 1) == (1 if stage == 1 else 2), creates
    assert sorted(synced.created) == [
        "NetworkPolicy/staged-sandboxes",
        "PersistentVolumeClaim/staged-workspace-0",
        "PersistentVolumeClaim/staged-workspace-1",
        "Sandbox/sandbox-staged-0",
        "Sandbox/sandbox-staged-1",
    ]
    assert pool_objects(namespace, "staged")["sandboxes"] == [
        "sandbox-staged-0",
        "sandbox-staged-1",
    ]

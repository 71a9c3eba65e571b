"""A POST that reads nothing from the API server: the watcher records somebody else's
objects under the names a create would use (ForeignObject) and each warm pool's check with
its template (WarmPoolSeen), and a create reads those while the watcher vouches. A
warm-pool allocation's claims are made in the request; a claim's name taken in the last
instant fails the allocation, rolled back, with the contract's 409."""

from __future__ import annotations

import pytest

from allocations import selectors
from allocations.models import Allocation, AllocationEvent, ForeignObject, Phase
from allocations.requests import PoolRequest
from allocations.services.create import allocation_create
from contextsvc.core import capabilities
from contextsvc.core.models import AuditEntry
from contextsvc.infra.errors import AlreadyExists, InvalidRequest
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import NETWORK_POLICY, SANDBOX, SANDBOX_CLAIM, SANDBOX_TEMPLATE
from contextsvc.kube.objects.names import claim_name, network_policy_name, sandbox_name
from tests.support.kube import (
    HARDENED_POD_SPEC,
    admin_create,
    admin_delete,
    admin_patch,
    kube_calls,
    make_warm_pool,
    pool_objects,
    wait_for_phase,
)
from tests.support.processes import wait_until

pytestmark = pytest.mark.cluster


def vouched(namespace: str, name: str | None = None) -> None:
    """The watcher vouches for its records, and the cluster's capabilities are recorded (as
    beat keeps them in a running service: a create reads them from PostgreSQL)."""
    capabilities.current()
    wait_until(
        lambda: selectors.watcher_vouches(namespace=namespace, name=name),
        timeout=40,
        message="the watcher's heartbeat",
    )


def dedicated(name: str, namespace: str) -> PoolRequest:
    return PoolRequest(name, 1, "dedicated", workspace_size="1Gi", workspace_access_mode="ReadWriteOnce",
                       namespace=namespace)  # fmt: skip


def warm(name: str, namespace: str, pool: str) -> PoolRequest:
    return PoolRequest(name, 1, "warmpool", warm_pool=pool, namespace=namespace)


def foreign_sandbox(namespace: str, name: str) -> None:
    admin_create(
        SANDBOX,
        {
            "apiVersion": SANDBOX.api_version,
            "kind": SANDBOX.kind,
            "metadata": {"name": name, "namespace": namespace, "labels": {"team": "other"}},
            "spec": {"podTemplate": {"spec": HARDENED_POD_SPEC}},
        },
    )


def recorded(namespace: str, kind: str, name: str) -> bool:
    return ForeignObject.objects.filter(namespace=namespace, kind=kind, name=name).exists()


@pytest.mark.usefixtures("service")
def test_somebody_elses_object_keeps_its_name_taken_and_the_post_asks_the_cluster_nothing(
    namespace: str,
) -> None:
    foreign_sandbox(namespace, sandbox_name("taken", 0))
    wait_until(
        lambda: recorded(namespace, "Sandbox", sandbox_name("taken", 0)),
        timeout=30,
        message="the watcher to record somebody else's Sandbox",
    )
    vouched(namespace, "taken")

    with kube_calls() as calls, pytest.raises(AlreadyExists, match='"taken" already exists'):
        allocation_create(request=dedicated("taken", namespace), actor="user:test")
    with kube_calls() as free_calls:
        allocation_create(request=dedicated("free", namespace), actor="user:test")

    assert (calls.sent, free_calls.sent) == ([], [])
    assert list(Allocation.objects.filter(namespace=namespace).values_list("name", flat=True)) == [
        "free"
    ]
    # Our own objects are not somebody else's.
    assert wait_for_phase("free", Phase.READY, timeout=90).ready_replicas == 1
    assert list(ForeignObject.objects.filter(namespace=namespace).values_list("kind", "name")) == [
        ("Sandbox", sandbox_name("taken", 0))
    ]

    admin_delete(SANDBOX, namespace, sandbox_name("taken", 0))
    wait_until(
        lambda: not recorded(namespace, "Sandbox", sandbox_name("taken", 0)),
        timeout=30,
        message="the watcher to see it go",
    )
    allocation_create(request=dedicated("taken", namespace), actor="user:test")
    assert wait_for_phase("taken", Phase.READY, timeout=90).ready_replicas == 1


@pytest.mark.usefixtures("service")
def test_a_warm_pool_is_checked_from_the_watchers_record_and_claimed_in_the_request(
    namespace: str,
) -> None:
    make_warm_pool(namespace, "shelf", replicas=1)
    wait_until(
        lambda: (selectors.warm_pool_verdict(namespace=namespace, name="shelf") or {}).get("found"),
        timeout=30,
        message="the watcher to record the pool's check",
    )
    vouched(namespace, "quick")

    with kube_calls() as calls:
        created = allocation_create(request=warm("quick", namespace, "shelf"), actor="user:test")

    # Nothing read: the fence, then the claim, made before the POST answers.
    assert calls.sent == [
        ("POST", kube._path(NETWORK_POLICY, namespace)),
        ("POST", kube._path(SANDBOX_CLAIM, namespace)),
    ]
    # Applied before the POST answers (the row may already be ready: the controller is quick).
    assert created.allocation.events.filter(kind=AllocationEvent.Kind.APPLIED).count() == 1
    assert kube.get_object(SANDBOX_CLAIM, namespace, claim_name("quick", 0)) is not None
    assert wait_for_phase("quick", Phase.READY, timeout=60).ready_replicas == 1

    # The template edited to run as root: the record follows, and the POST is refused.
    admin_patch(
        SANDBOX_TEMPLATE,
        namespace,
        "shelf-template",
        {"spec": {"podTemplate": {"spec": {"securityContext": {"runAsNonRoot": False}}}}},
    )
    wait_until(
        lambda: (selectors.warm_pool_verdict(namespace=namespace, name="shelf") or {}).get(
            "problems"
        ),
        timeout=30,
        message="the watcher to record the edited template's problems",
    )
    with kube_calls() as calls, pytest.raises(InvalidRequest, match="is not hardened"):
        allocation_create(request=warm("rooted", namespace, "shelf"), actor="user:test")
    assert calls.sent == []

    admin_delete(SANDBOX_TEMPLATE, namespace, "shelf-template")
    wait_until(
        lambda: (
            (selectors.warm_pool_verdict(namespace=namespace, name="shelf") or {}).get("found")
            is False
        ),
        timeout=30,
        message="the watcher to see the template go",
    )
    with pytest.raises(InvalidRequest, match='SandboxTemplate "shelf-template" does not exist'):
        allocation_create(request=warm("orphan", namespace, "shelf"), actor="user:test")
    assert not Allocation.objects.filter(name__in=["rooted", "orphan"]).exists()


@pytest.mark.usefixtures("service")
def test_a_claim_name_taken_in_the_last_instant_fails_the_allocation_with_the_contracts_409(
    namespace: str,
) -> None:
    make_warm_pool(namespace, "shelf", replicas=1)
    name = claim_name("late", 0)
    admin_create(
        SANDBOX_CLAIM,
        {
            "apiVersion": SANDBOX_CLAIM.api_version,
            "kind": SANDBOX_CLAIM.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"warmPoolRef": {"name": "shelf"}},
        },
    )
    wait_until(
        lambda: recorded(namespace, "SandboxClaim", name),
        timeout=30,
        message="the watcher to record the claim",
    )
    vouched(namespace, "late")
    # As if it had been made after the watcher last looked: the record says the name is free.
    ForeignObject.objects.filter(namespace=namespace, name=name).delete()

    with pytest.raises(AlreadyExists) as refused:
        allocation_create(request=warm("late", namespace, "shelf"), actor="user:test")

    assert refused.value.message == 'sandbox pool "late" already exists'
    failed = Allocation.objects.get(name="late")
    assert (failed.phase, failed.reason) == (Phase.FAILED, "NameCollision")
    assert failed.message == (
        f'sandbox pool "late" already exists: SandboxClaim {namespace}/{name} exists and does '
        "not belong to this allocation"
    )
    assert list(
        AuditEntry.objects.filter(target="late").order_by("id").values_list("action", flat=True)
    ) == ["allocation.create", "allocation.fail"]
    # What it made (the fence) is rolled back; somebody else's claim is left alone.
    wait_until(
        lambda: failed.events.filter(kind=AllocationEvent.Kind.ROLLED_BACK).exists(),
        timeout=30,
        message="the rollback",
    )
    assert kube.get_object(NETWORK_POLICY, namespace, network_policy_name("late")) is None
    assert pool_objects(namespace, "late")["claims"] == []
    assert kube.get_object(SANDBOX_CLAIM, namespace, name) is not None

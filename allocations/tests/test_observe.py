"""observe.py is a pure function of the objects: what the watcher (from its caches) and the
resync (from list calls) conclude, checked on hand-built objects without a cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from allocations.models import Strategy
from allocations.observe import (
    Milestones,
    Observation,
    PoolObjects,
    Seen,
    compute_count,
    group_by_pool,
    managed_volumes,
    milestones,
    observe,
    pool_key,
    ready_replicas,
)
from contextsvc.kube.objects.labels import POOL_LABEL

REQUESTED_AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DEADLINE = timedelta(seconds=60)
SANDBOX_OWNER = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "name": "s"}


def obj(
    kind: str,
    name: str,
    *,
    pool: str | None = "a",
    namespace: str = "ns",
    ready: str | None = None,
    reason: str = "",
    message: str = "",
    **metadata: Any,
) -> dict[str, Any]:
    """An object as the API server returns it, with only the fields observe reads."""
    found: dict[str, Any] = {
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {POOL_LABEL: pool} if pool else {},
            **metadata,
        },
        "status": {},
    }
    if ready is not None:
        found["status"]["conditions"] = [
            {"type": "Ready", "status": ready, "reason": reason, "message": message}
        ]
    return found


def pod(name: str, *, ready: str = "True", **metadata: Any) -> dict[str, Any]:
    return obj("Pod", name, ready=ready, ownerReferences=[SANDBOX_OWNER], **metadata)


def claim(name: str, *, sandbox: str = "", **kwargs: Any) -> dict[str, Any]:
    found = obj("SandboxClaim", name, **kwargs)
    if sandbox:
        found["status"]["sandbox"] = {"name": sandbox}
    return found


def at(seconds: int) -> datetime:
    return REQUESTED_AT + timedelta(seconds=seconds)


def test_pool_key_is_the_namespace_and_the_pool_label() -> None:
    assert pool_key(obj("Sandbox", "sandbox-a-0", namespace="team1")) == ("team1", "a")
    assert pool_key(obj("Sandbox", "elsewhere", pool=None)) is None
    assert pool_key({}) is None


def test_group_by_pool_keeps_only_labelled_objects_and_pods_a_sandbox_made() -> None:
    sandbox_a = obj("Sandbox", "sandbox-a-0")
    sandbox_b = obj("Sandbox", "sandbox-b-0", pool="b", namespace="other")
    made = pod("sandbox-a-0")
    labelled_by_hand = obj("Pod", "impostor", ready="True")
    pvc = obj("PersistentVolumeClaim", "a-workspace-0")
    policy = obj("NetworkPolicy", "a-sandboxes")
    unlabelled = obj("Sandbox", "stray", pool=None)

    groups = group_by_pool(
        sandboxes=[sandbox_a, sandbox_b, unlabelled],
        pods=[made, labelled_by_hand],
        pvcs=[pvc],
        policies=[policy],
    )

    assert groups == {
        ("ns", "a"): PoolObjects(sandboxes=[sandbox_a], pods=[made], pvcs=[pvc], policies=[policy]),
        ("other", "b"): PoolObjects(sandboxes=[sandbox_b]),
    }
    assert groups[("ns", "a")].compute() == [sandbox_a]
    assert PoolObjects(policies=[policy]).empty() is False
    assert PoolObjects().empty() is True


def test_ready_replicas_counts_ready_pods_or_ready_claims_by_strategy() -> None:
    pool = PoolObjects(
        pods=[
            pod("p0"),
            pod("p1", ready="False"),
            pod("p2", deletionTimestamp="2026-01-01T12:01:00Z"),
        ],
        claims=[
            claim("claim-a-0", ready="True", sandbox="warm-x1"),
            claim("claim-a-1", ready="True"),  # no Sandbox named yet
        ],
    )

    assert ready_replicas(Strategy.DEDICATED, pool) == 1
    assert ready_replicas(Strategy.SHARED, pool) == 1
    assert ready_replicas(Strategy.WARMPOOL, pool) == 1


def test_a_terminal_reason_fails_the_allocation_whatever_else_is_ready() -> None:
    pool = PoolObjects(
        claims=[
            claim("claim-a-0", ready="True", sandbox="warm-x1"),
            claim("claim-a-1", ready="False", reason="InvalidMetadata", message="bad label"),
        ],
    )

    assert observe(
        Strategy.WARMPOOL, pool, requested_at=REQUESTED_AT, now=at(1), deadline=DEADLINE
    ) == Observation(failure=("InvalidMetadata", "SandboxClaim claim-a-1: bad label"))


def test_a_controller_problem_is_reported_until_the_deadline_then_fails() -> None:
    pool = PoolObjects(
        sandboxes=[
            obj("Sandbox", "sandbox-a-0", ready="True"),
            obj(
                "Sandbox",
                "sandbox-a-1",
                ready="False",
                reason="ReconcilerError",
                message="cannot create the pod",
            ),
        ],
        pods=[pod("sandbox-a-0")],
    )

    def seen_at(seconds: int) -> Observation:
        return observe(
            Strategy.DEDICATED, pool, requested_at=REQUESTED_AT, now=at(seconds), deadline=DEADLINE
        )

    assert seen_at(60) == Observation(
        ready=1, problem=("ReconcilerError", "Sandbox sandbox-a-1: cannot create the pod")
    )
    assert seen_at(61) == Observation(
        ready=1,
        failure=(
            "ReconcilerError",
            "Sandbox sandbox-a-1: cannot create the pod "
            "(still reported after the 60 s reconcile deadline)",
        ),
    )


def test_the_normal_wait_for_the_pod_is_no_problem() -> None:
    waiting = obj("Sandbox", "sandbox-a-0", ready="False", reason="DependenciesNotReady")
    unnamed_kind = obj("", "sandbox-a-1", ready="False", reason="PodFailed", message="exit 1")

    assert observe(
        Strategy.DEDICATED,
        PoolObjects(sandboxes=[waiting]),
        requested_at=REQUESTED_AT,
        now=at(3600),
        deadline=DEADLINE,
    ) == Observation(ready=0)
    # An object whose kind the list left out is named as "object".
    assert observe(
        Strategy.DEDICATED,
        PoolObjects(sandboxes=[waiting, unnamed_kind]),
        requested_at=REQUESTED_AT,
        now=at(1),
        deadline=DEADLINE,
    ) == Observation(failure=("PodFailed", "object sandbox-a-1: exit 1"))


def test_compute_count_leaves_out_what_is_being_deleted() -> None:
    pool = PoolObjects(
        sandboxes=[
            obj("Sandbox", "sandbox-a-0"),
            obj("Sandbox", "sandbox-a-1", deletionTimestamp="2026-01-01T12:01:00Z"),
        ],
        claims=[claim("claim-a-0"), claim("claim-a-1"), claim("claim-a-2")],
    )

    assert compute_count(Strategy.DEDICATED, pool) == 1
    assert compute_count(Strategy.WARMPOOL, pool) == 3


# --- Readiness phases ----------------------------------------------------------------------


def pvc(name: str, phase: str, **metadata: Any) -> dict[str, Any]:
    found = obj("PersistentVolumeClaim", name, **metadata)
    found["status"]["phase"] = phase
    return found


def scheduled_pod(name: str, scheduled: bool) -> dict[str, Any]:
    found = pod(name, ready="False")
    if scheduled:
        found["status"]["conditions"].append({"type": "PodScheduled", "status": "True"})
    return found


def seen(replicas: int, volumes: int) -> Seen:
    return Seen(replicas=replicas, ready_replicas=0, reason="", message="", volumes=volumes)


def test_managed_volumes_are_the_pvcs_each_strategy_makes() -> None:
    assert [
        managed_volumes(strategy, 3, artifacts=artifacts)
        for artifacts in (False, True)
        for strategy in (Strategy.DEDICATED, Strategy.SHARED, Strategy.EXISTING, Strategy.WARMPOOL)
    ] == [3, 1, 0, 0, 4, 2, 1, 1]


def test_a_phase_is_reached_only_when_all_it_waits_for_is_there() -> None:
    partly = PoolObjects(
        pvcs=[pvc("a-workspace-0", "Bound"), pvc("a-workspace-1", "Pending")],
        pods=[scheduled_pod("sandbox-a-0", True), scheduled_pod("sandbox-a-1", False)],
    )
    all_there = PoolObjects(
        pvcs=[pvc("a-workspace-0", "Bound"), pvc("a-workspace-1", "Bound")],
        pods=[scheduled_pod("sandbox-a-0", True), scheduled_pod("sandbox-a-1", True)],
    )
    # A Bound PVC that is being deleted does not count (a scale-down's leftover).
    leaving = PoolObjects(
        pvcs=[
            pvc("a-workspace-0", "Bound"),
            pvc("a-workspace-1", "Bound", deletionTimestamp="2026-01-01T12:01:00Z"),
        ],
    )

    assert milestones(Strategy.DEDICATED, partly, seen(2, 2)) == Milestones()
    assert milestones(Strategy.DEDICATED, all_there, seen(2, 2)) == Milestones(
        frozenset({"volumes_bound", "pods_scheduled"})
    )
    assert milestones(Strategy.DEDICATED, leaving, seen(2, 2)).reached == frozenset()
    # Nothing to bind (a caller's PVC): the phase does not apply, so it is never reached.
    assert milestones(Strategy.EXISTING, all_there, seen(2, 0)).reached == {"pods_scheduled"}


def test_every_replica_ready_implies_the_phases_before_it() -> None:
    # The Pods' Ready seen before their PVCs' Bound (caches of two kinds, each current on
    # its own): a Ready Pod mounts bound volumes, so ready is never recorded before them.
    behind = PoolObjects(
        pvcs=[pvc("a-workspace-0", "Pending"), pvc("a-workspace-1", "Pending")],
        pods=[scheduled_pod("sandbox-a-0", True), scheduled_pod("sandbox-a-1", True)],
    )

    assert milestones(Strategy.DEDICATED, behind, seen(2, 2), ready=1).reached == {"pods_scheduled"}
    assert milestones(Strategy.DEDICATED, behind, seen(2, 2), ready=2).reached == {
        "volumes_bound",
        "pods_scheduled",
    }
    # Nothing to bind stays nothing to bind.
    assert milestones(Strategy.EXISTING, behind, seen(2, 0), ready=2).reached == {"pods_scheduled"}
    assert milestones(Strategy.WARMPOOL, PoolObjects(), seen(2, 0), ready=2).reached == {
        "claims_bound"
    }


def test_claims_are_bound_when_each_names_its_sandbox_warm_or_cold() -> None:
    pool = PoolObjects(
        claims=[
            claim("claim-a-0", sandbox="warm-x7k2p"),
            claim("claim-a-1", sandbox="claim-a-1"),
            claim("claim-a-2"),
        ]
    )

    assert milestones(Strategy.WARMPOOL, pool, seen(3, 0)) == Milestones(frozenset(), 1, 1)
    assert milestones(Strategy.WARMPOOL, pool, seen(2, 0)) == Milestones(
        frozenset({"claims_bound"}), warm=1, cold=1
    )

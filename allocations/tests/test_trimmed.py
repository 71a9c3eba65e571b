"""The watcher keeps trimmed objects (contextsvc/kube/objects/observed.py): every decision
made on them must be the decision made on the whole objects. Hypothesis builds pools of
Pods, Sandboxes, Claims, PVCs and NetworkPolicies with everything observation reads varied
and the bulk it does not read (managedFields, Pod templates, container statuses, other
tools' annotations) added; observation, milestones, grouping and the named contexts'
readings are compared on both."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from allocations.models import Strategy
from allocations.observe import (
    PoolObjects,
    Seen,
    group_by_pool,
    milestones,
    observe,
    pool_key,
    ready_replicas,
)
from contextsvc.kube.objects.fields import object_key
from contextsvc.kube.objects.kinds import (
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_GROUP,
    ApiKind,
)
from contextsvc.kube.objects.labels import (
    CONTEXT_NAME_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    POOL_LABEL,
    REPLICAS_KEY,
)
from contextsvc.kube.objects.observed import trimmed
from contextsvc.kube.objects.pvc import (
    VOLUME_PROBLEM_ANNOTATION,
    context_key,
    is_context_pvc,
    pvc_is_bound,
)

NAMES = st.sampled_from(["a-0", "a-1", "b-0", "ctx"])
POOLS = st.sampled_from(["a", "b"])
REASONS = st.sampled_from(
    [
        *("", "DependenciesNotReady", "ReconcilerError", "ImagePullBackOff", "PodFailed"),
        *("ClaimExpired", "Unschedulable", "SandboxExpired"),
    ]
)
BULK = st.dictionaries(
    st.sampled_from(["fieldsType", "manager", "operation", "time"]),
    st.text(max_size=20),
    max_size=4,
)


@st.composite
def metadata(draw: st.DrawFn, kind: ApiKind) -> dict[str, Any]:
    labels: dict[str, str] = {}
    if draw(st.booleans()):
        labels[POOL_LABEL] = draw(POOLS)
    if draw(st.booleans()):
        labels[MANAGED_BY_LABEL] = draw(st.sampled_from([MANAGED_BY, "someone-else"]))
    if kind == PVC and draw(st.booleans()):
        labels[CONTEXT_NAME_LABEL] = draw(st.sampled_from(["ctx", "other"]))
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": draw(st.text())}
    if draw(st.booleans()):
        annotations[VOLUME_PROBLEM_ANNOTATION] = draw(
            st.sampled_from(["ProvisioningFailed: no class", "ExternalProvisioning", ""])
        )
    if draw(st.booleans()):
        annotations[REPLICAS_KEY] = draw(st.sampled_from(["1", "3"]))
    found: dict[str, Any] = {
        "name": draw(NAMES),
        "namespace": draw(st.sampled_from(["n1", "n2"])),
        "uid": draw(st.uuids()).hex,
        "resourceVersion": str(draw(st.integers(1, 10**6))),
        "creationTimestamp": "2026-12-04T03:00:00Z",
        "labels": labels,
        "annotations": annotations,
        "managedFields": draw(st.lists(BULK, max_size=3)),
        "finalizers": ["kubernetes.io/pvc-protection"],
    }
    if draw(st.booleans()):
        found["deletionTimestamp"] = "2026-12-04T03:01:00Z"
    owners = draw(
        st.lists(
            st.sampled_from(
                [
                    {"apiVersion": f"{SANDBOX_GROUP}/v1beta1", "kind": "Sandbox", "name": "a-0"},
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"},
                    {"apiVersion": "other.example/v1", "kind": "Sandbox", "name": "x"},
                ]
            ).map(lambda ref: {**ref, "uid": "u", "controller": True, "blockOwnerDeletion": True}),
            max_size=2,
        )
    )
    if owners:
        found["ownerReferences"] = owners
    return found


@st.composite
def conditions(draw: st.DrawFn, types: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "type": kind,
            "status": draw(st.sampled_from(["True", "False", "Unknown"])),
            "reason": draw(REASONS),
            "message": draw(st.sampled_from(["", "0/4 nodes are available", "back-off"])),
            "lastTransitionTime": "2026-12-04T03:00:00Z",
            "observedGeneration": 2,
        }
        for kind in draw(st.lists(st.sampled_from(types), max_size=3))
    ]


@st.composite
def an_object(draw: st.DrawFn, kind: ApiKind) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": draw(metadata(kind))}
    if draw(st.booleans()):  # list items of some kinds carry no kind
        obj |= {"apiVersion": kind.api_version, "kind": kind.kind}
    container = {"name": "agent", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    if kind == POD:
        obj["spec"] = {"containers": [container]}
        if draw(st.booleans()):
            obj["spec"]["nodeName"] = "node-1"
        obj["status"] = {
            "phase": draw(st.sampled_from(["Pending", "Running", "Failed"])),
            "conditions": draw(conditions(["Ready", "PodScheduled", "Initialized"])),
            "containerStatuses": [{"name": "agent", "ready": True, "restartCount": 0}],
            "podIP": "127.1.0.5",
        }
    elif kind == SANDBOX:
        obj["spec"] = {
            "podTemplate": {"spec": {"containers": [container]}},
            "operatingMode": draw(st.sampled_from(["Running", "Suspended"])),
            "shutdownPolicy": "Retain",
        }
        obj["status"] = {"conditions": draw(conditions(["Ready"])), "replicas": 1}
    elif kind == SANDBOX_CLAIM:
        obj["spec"] = {"warmPoolRef": {"name": "warm"}, "additionalPodMetadata": {}}
        status: dict[str, Any] = {"conditions": draw(conditions(["Ready"]))}
        bound = draw(st.sampled_from([None, "claimed-name", "warm-xyz"]))
        if bound == "claimed-name":
            status["sandbox"] = {"name": obj["metadata"]["name"]}
        elif bound is not None:
            status["sandbox"] = {"name": bound}
        obj["status"] = status
    elif kind == PVC:
        obj["spec"] = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem",
        }
        obj["status"] = {
            "phase": draw(st.sampled_from(["", "Pending", "Bound", "Lost"])),
            "capacity": {"storage": "1Gi"},
        }
    elif kind == NETWORK_POLICY:
        obj["spec"] = {"podSelector": {"matchLabels": {POOL_LABEL: "a"}}, "ingress": []}
    return obj


KINDS = [
    ("sandboxes", SANDBOX),
    ("claims", SANDBOX_CLAIM),
    ("pods", POD),
    ("pvcs", PVC),
    ("policies", NETWORK_POLICY),
]


@st.composite
def collections(draw: st.DrawFn) -> dict[str, list[tuple[ApiKind, dict[str, Any]]]]:
    return {
        field: [(kind, obj) for obj in draw(st.lists(an_object(kind), max_size=4))]
        for field, kind in KINDS
    }


def _decisions(pool: PoolObjects, seen: Seen, requested_at: datetime) -> list[object]:
    now = datetime(2026, 12, 4, 3, 5, tzinfo=UTC)
    found: list[object] = [pool.empty(), pool.fingerprint()]
    for strategy in Strategy.values:
        found.append(ready_replicas(strategy, pool))
        found.append(milestones(strategy, pool, seen))
        for deadline in (timedelta(seconds=30), timedelta(hours=1)):
            found.append(
                observe(strategy, pool, requested_at=requested_at, now=now, deadline=deadline)
            )
    return found


@settings(max_examples=400, deadline=None)
@given(
    found=collections(),
    replicas=st.integers(1, 3),
    volumes=st.integers(0, 3),
    minutes_ago=st.integers(0, 10),
)
def test_every_decision_on_trimmed_objects_is_the_decision_on_the_whole_ones(
    found: dict[str, list[tuple[ApiKind, dict[str, Any]]]],
    replicas: int,
    volumes: int,
    minutes_ago: int,
) -> None:
    whole = {field: [obj for _, obj in items] for field, items in found.items()}
    kept = {field: [trimmed(kind, obj) for kind, obj in items] for field, items in found.items()}
    seen = Seen(replicas=replicas, ready_replicas=0, reason="", message="", volumes=volumes)
    requested_at = datetime(2026, 12, 4, 3, 5, tzinfo=UTC) - timedelta(minutes=minutes_ago)

    whole_groups, kept_groups = group_by_pool(**whole), group_by_pool(**kept)

    assert whole_groups.keys() == kept_groups.keys()
    for key, pool in whole_groups.items():
        assert _decisions(kept_groups[key], seen, requested_at) == _decisions(
            pool, seen, requested_at
        )
    for field in whole:
        for full, small in zip(whole[field], kept[field], strict=True):
            assert object_key(small) == object_key(full)
            assert pool_key(small) == pool_key(full)
    for full, small in zip(whole["pvcs"], kept["pvcs"], strict=True):
        assert context_key(small) == context_key(full)
        assert is_context_pvc(small, "ctx") == is_context_pvc(full, "ctx")
        assert pvc_is_bound(small) == pvc_is_bound(full)


@given(kind=st.sampled_from([kind for _, kind in KINDS]), data=st.data())
def test_a_trimmed_object_is_smaller_and_trimming_it_again_changes_nothing(
    kind: ApiKind, data: st.DataObject
) -> None:
    obj = data.draw(an_object(kind))
    small = trimmed(kind, obj)

    assert trimmed(kind, small) == small
    assert "managedFields" not in small["metadata"]
    assert "kubectl.kubernetes.io/last-applied-configuration" not in (
        small["metadata"].get("annotations") or {}
    )
    assert _size(small) < _size(obj)


def test_a_kind_it_does_not_know_is_kept_whole() -> None:
    job = {"metadata": {"name": "j", "managedFields": [{"manager": "x"}]}, "spec": {"x": 1}}

    assert trimmed(ApiKind("batch", "v1", "jobs", "Job"), job) == job


def _size(obj: object) -> int:
    """Bytes of the nested dicts and lists and their strings."""
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(_size(k) + _size(v) for k, v in obj.items())
    if isinstance(obj, list):
        return sys.getsizeof(obj) + sum(_size(item) for item in obj)
    return sys.getsizeof(obj)

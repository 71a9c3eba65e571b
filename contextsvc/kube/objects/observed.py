"""What the watcher keeps of each object it watches: the fields that observation reads, and
nothing else.

The watch caches hold every managed object of every live allocation. Whole, a Sandbox
carries its Pod template, a Pod its containers and their statuses, every object its
``managedFields``: several times what observation reads, for thousands of objects. What is
kept here is what ``allocations/observe.py``, the watcher's grouping and the named
contexts' observation read (names, labels, our annotations, owners, deletion, conditions,
phases, the few spec fields they look at). allocations/tests/test_trimmed.py holds every
decision made on a trimmed object to the decision made on the whole one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextsvc.kube.objects.kinds import (
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    ApiKind,
    Manifest,
)
from contextsvc.kube.objects.labels import LABEL_DOMAIN

_METADATA = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
)
_OWNER = ("apiVersion", "kind", "name", "uid", "controller")
_CONDITION = ("type", "status", "reason", "message")
# Per kind: the spec fields and the status fields kept (conditions are trimmed to _CONDITION).
_KEPT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    POD.kind: (("nodeName",), ("phase", "conditions")),
    SANDBOX.kind: (("operatingMode", "shutdownTime", "shutdownPolicy"), ("conditions",)),
    SANDBOX_CLAIM.kind: (("warmPoolRef",), ("conditions", "sandbox")),
    PVC.kind: (
        ("accessModes", "resources", "storageClassName", "volumeName"),
        ("phase", "capacity", "conditions"),
    ),
    NETWORK_POLICY.kind: ((), ()),
}
_OURS = f"{LABEL_DOMAIN}/"


def _pick(source: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: source[key] for key in keys if key in source}


def trimmed(kind: ApiKind, obj: Mapping[str, Any]) -> Manifest:
    """The fields of ``obj`` (of ``kind``) that observation reads. A kind this module does
    not know is kept whole: it is never made smaller at the cost of a wrong decision."""
    if kind.kind not in _KEPT:
        return dict(obj)
    spec_keys, status_keys = _KEPT[kind.kind]
    shown: Manifest = _pick(obj, ("apiVersion", "kind"))
    metadata = obj.get("metadata") or {}
    kept = _pick(metadata, _METADATA)
    # Only our own annotations are read (the volume problem, the replica count); another
    # tool's (kubectl's last-applied-configuration is a whole copy of the object) is not.
    annotations = {
        key: value
        for key, value in (metadata.get("annotations") or {}).items()
        if key.startswith(_OURS)
    }
    if annotations:
        kept["annotations"] = annotations
    if metadata.get("ownerReferences"):
        kept["ownerReferences"] = [_pick(ref, _OWNER) for ref in metadata["ownerReferences"]]
    shown["metadata"] = kept
    spec = _pick(obj.get("spec") or {}, spec_keys)
    if spec:
        shown["spec"] = spec
    status = _pick(obj.get("status") or {}, status_keys)
    if "conditions" in status:
        status["conditions"] = [_pick(item, _CONDITION) for item in status["conditions"] or []]
    if status:
        shown["status"] = status
    return shown

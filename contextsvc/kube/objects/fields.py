"""Fields any object has: metadata, status phase and conditions. Every read of an object's
metadata or status outside this package goes through these.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from contextsvc.kube.objects.kinds import Manifest


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def kind_of(obj: Mapping[str, Any]) -> str:
    """The object's ``kind`` ("" when it does not say: list items of some kinds)."""
    return str(obj.get("kind") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    """The object's namespace ("" for a cluster-scoped one)."""
    return str(metadata_of(obj).get("namespace") or "")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return metadata_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return metadata_of(obj).get("annotations") or {}


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of any object."""
    metadata = obj["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


def resource_version_of(obj: Mapping[str, Any]) -> str:
    """metadata.resourceVersion of an object, a watch event's object or a list; one the
    server left out is an error (a watch from "" would silently start from anywhere)."""
    return str(obj["metadata"]["resourceVersion"])


def creation_time(obj: Mapping[str, Any]) -> datetime | None:
    raw = metadata_of(obj).get("creationTimestamp")
    try:
        # Python 3.11 reads the API server's "Z" as UTC.
        return datetime.fromisoformat(str(raw)) if raw else None
    except ValueError:
        return None


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """A delete was issued and the object waits for its finalizers or its dependents."""
    return bool(metadata_of(obj).get("deletionTimestamp"))


def for_display(obj: Mapping[str, Any]) -> Manifest:
    """A shallow copy of the object to show people: without ``managedFields``, which is
    the API server's bookkeeping of who set which field."""
    shown = dict(obj)
    metadata = obj.get("metadata")
    if metadata:
        shown["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return shown


def status_phase(obj: Mapping[str, Any]) -> str:
    """status.phase of a Pod or PVC ("" before the object has one)."""
    return str((obj.get("status") or {}).get("phase") or "")


def conditions_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in conditions_of(obj):
        if item.get("type") == kind:
            return item
    return None

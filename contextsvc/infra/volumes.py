"""The volumes the service makes for rows that are not pools: a named context's PVC (a
released allocation's retained artifacts become one) and an agent type's workspace PVC.
One lifecycle for all of them:

- **apply**: create the PVC; one that exists and is the row's own counts as made; one of
  somebody else's under that name is :class:`VolumeTaken` (never taken for the row's);
- **delete**: delete the PVC only when it is the row's own (an object of somebody else's
  under that name is theirs), and say what of the row's is still there;
- **observe**: the watcher's PVC events (and the periodic resync's list, the safety net)
  reach each kind's own ``record`` through :data:`registry`: the watcher and the resync
  (allocations/) know no app that keeps volumes, and no row is polled one GET at a time.

An app registers its :class:`VolumeKind` in its ``AppConfig.ready``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import name_of
from contextsvc.kube.objects.kinds import PVC

Pvc = Mapping[str, Any]
# (namespace, the row's own name: a context's name, an agent type)
VolumeKey = tuple[str, str]


class VolumeTaken(Exception):
    """A PVC of somebody else's sits under the name the row's PVC would have."""


@dataclass(frozen=True)
class Volume:
    """One row's PVC: where it is, and how to tell it from somebody else's."""

    namespace: str
    name: str
    owns: Callable[[Pvc], bool]

    def own(self, pvc: Pvc | None) -> Pvc | None:
        """``pvc`` when it is the row's own, else None."""
        return pvc if pvc is not None and self.owns(pvc) else None

    def apply(self, body: dict[str, Any]) -> bool:
        """Create the PVC (``body``); True when this call made it, False when the row's own
        was there already (or went again in between: the next apply makes it). Raises
        :class:`VolumeTaken`, and ``kube.KubeError`` as the cluster answered."""
        if kube.create_if_absent(PVC, body):
            return True
        existing = kube.get_object(PVC, self.namespace, name_of(body))
        if existing is not None and not self.owns(existing):
            raise VolumeTaken(f"PVC {self.namespace}/{name_of(body)}")
        return False

    def delete(self) -> Pvc | None:
        """Delete the PVC if it is the row's own; what of the row's is still there
        afterwards (None: gone; a PVC leaves once its controller lets it)."""
        pvc = self.own(kube.get_object(PVC, self.namespace, self.name))
        if pvc is None:
            return None
        kube.delete_object(PVC, self.namespace, self.name)
        return self.own(kube.get_object(PVC, self.namespace, self.name))


class ResyncReport(Protocol):
    """What the resync's report (allocations/resync.py: ResyncReport) counts here."""

    changed: int
    requeued: list[str]


@dataclass(frozen=True)
class VolumeKind:
    """What the watcher and the resync need of one kind of volume.

    ``key``: the row a managed PVC belongs to (None: not this kind's);
    ``record``: what the PVC (None: none of the row's is there) means for its row;
    ``resync``: every row recomputed from the PVCs listed by key, stalled work requeued
    after ``grace``; returns the keys of the rows it has (a PVC with no row may be
    adopted)."""

    name: str
    key: Callable[[Pvc], VolumeKey | None]
    record: Callable[[VolumeKey, Pvc | None], object]
    resync: Callable[[dict[VolumeKey, Pvc], ResyncReport, timedelta], set[VolumeKey]]


class Registry:
    def __init__(self) -> None:
        self._kinds: dict[str, VolumeKind] = {}

    def register(self, kind: VolumeKind) -> None:
        self._kinds[kind.name] = kind

    def kinds(self) -> list[VolumeKind]:
        return [self._kinds[name] for name in sorted(self._kinds)]

    def get(self, name: str) -> VolumeKind:
        return self._kinds[name]

    def keys_of(self, pvc: Pvc) -> list[tuple[str, VolumeKey]]:
        """(kind name, key) of every kind ``pvc`` belongs to (none, or one)."""
        return [(kind.name, key) for kind in self.kinds() if (key := kind.key(pvc)) is not None]


registry = Registry()

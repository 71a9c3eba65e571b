"""The periodic resync: everything the watcher concludes from events, recomputed from
list calls, so a missed event costs latency and never correctness. It also finishes
releases and rollbacks that stalled, re-queues reconciles that were lost, and adopts
objects that have no allocation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from allocations import adoption, queue, selectors
from allocations.models import ACTIVE_PHASES, Allocation, Phase
from allocations.observe import PoolKey, PoolObjects, compute_count, group_by_pool
from allocations.services.observed import (
    Recorded,
    allocation_note_resynced,
    allocation_note_surplus,
    allocation_record_observed,
)
from contexts.models import ContextResource
from contexts.services import VOLUME_KIND as CONTEXT_VOLUMES
from contextsvc.infra import namespaces
from contextsvc.infra.volumes import Pvc, VolumeKey, registry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import annotations_of, creation_time, name_of, status_phase
from contextsvc.kube.objects.kinds import (
    EVENT,
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    ApiKind,
)
from contextsvc.kube.objects.labels import MANAGED_SELECTOR, POOLED_POD_SELECTOR
from contextsvc.kube.objects.pvc import (
    PVC_EVENTS_SELECTOR,
    VOLUME_PROBLEM_ANNOTATION,
    pvc_events_problem,
    volume_problem_patch,
)
from contextsvc.kube.objects.sandbox import operating_mode

logger = logging.getLogger(__name__)


@dataclass
class ClusterSnapshot:
    pools: dict[PoolKey, PoolObjects]
    # The PVCs of each kind of volume (contextsvc/infra/volumes.py), by kind and key.
    volumes: dict[str, dict[VolumeKey, Pvc]]

    @property
    def context_pvcs(self) -> dict[VolumeKey, Pvc]:
        return self.volumes.get(CONTEXT_VOLUMES, {})


def _listed(kind: ApiKind, selector: str) -> list[dict[str, Any]]:
    """Objects of ``kind`` in every watched namespace (a missing CRD means none)."""
    items: list[dict[str, Any]] = []
    for namespace in namespaces.scopes():
        try:
            # From the API server's watch cache (resourceVersion=0): no quorum read of etcd
            # for what is a safety net.
            items += kube.list_objects(kind, namespace, selector, cached=True)
        except kube.KubeError as exc:
            if exc.status == 404 and kind != SANDBOX:
                return []  # the extension CRDs are not installed: no claims anywhere
            raise
    return items


def snapshot() -> ClusterSnapshot:
    managed = MANAGED_SELECTOR
    sandboxes = _listed(SANDBOX, managed)
    claims = _listed(SANDBOX_CLAIM, managed)
    pods = _listed(POD, POOLED_POD_SELECTOR)
    pvcs = _listed(PVC, managed)
    # Named contexts' and agent workspaces' PVCs carry our managed-by label too: they are
    # among ``pvcs``.
    by_kind: dict[str, dict[VolumeKey, Pvc]] = {kind.name: {} for kind in registry.kinds()}
    for pvc in pvcs:
        for name, key in registry.keys_of(pvc):
            by_kind[name][key] = pvc
    return ClusterSnapshot(
        pools=group_by_pool(
            sandboxes=sandboxes,
            claims=claims,
            pods=pods,
            pvcs=pvcs,
            policies=_listed(NETWORK_POLICY, managed),
        ),
        volumes=by_kind,
    )


@dataclass
class ResyncReport:
    checked: int = 0
    changed: int = 0
    unchanged: int = 0  # ready, and their objects as the last resync found them
    requeued: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    orphans: list[adoption.Orphan] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"checked {self.checked}, changed {self.changed}, unchanged {self.unchanged}, "
            f"requeued {len(self.requeued)}, "
            f"released {len(self.released)}, failed {len(self.failed)}, "
            f"adopted {len(self.adopted)}, orphans {len(self.orphans)}"
        )


def _requeue_grace() -> timedelta:
    return timedelta(seconds=2 * settings.CS_RESYNC_INTERVAL_SECONDS)


class VolumeEvents:
    """What the PV controller said of PVCs, read once per namespace and resync cycle, and
    only for a namespace where a provisioning allocation has a PVC long Pending."""

    def __init__(self) -> None:
        self.by_namespace: dict[str, list[dict[str, Any]]] = {}

    def of(self, namespace: str) -> list[dict[str, Any]]:
        if namespace not in self.by_namespace:
            self.by_namespace[namespace] = kube.list_objects(
                EVENT, namespace, fields=PVC_EVENTS_SELECTOR
            )
        return self.by_namespace[namespace]


def note_volume_problems(allocation: Allocation, pool: PoolObjects, events: VolumeEvents) -> None:
    """Copy onto each of a provisioning allocation's PVCs Pending past the grace what the
    PV controller last said of it (objects.pvc.VOLUME_PROBLEM_ANNOTATION): the watcher and
    this resync then read the same reason from the PVC, record it as the allocation's
    reason and message, and fail the allocation with it past the reconcile deadline."""
    if allocation.phase not in (Phase.REQUESTED, Phase.PROVISIONING):
        return
    cutoff = timezone.now() - timedelta(seconds=settings.CS_VOLUME_PENDING_GRACE_SECONDS)
    for index, pvc in enumerate(pool.pvcs):
        created = creation_time(pvc)
        if status_phase(pvc) not in ("", "Pending") or created is None or created > cutoff:
            continue
        name = name_of(pvc)
        try:
            said = pvc_events_problem(pvc, events.of(allocation.namespace))[:1000]
            if said != annotations_of(pvc).get(VOLUME_PROBLEM_ANNOTATION, ""):
                pool.pvcs[index] = kube.patch_object(
                    PVC, allocation.namespace, name, volume_problem_patch(said)
                )
        except kube.KubeError as error:
            # Only a better message is lost; the next cycle tries again.
            logger.warning("could not read why PVC %s/%s is Pending: %s", allocation.namespace,
                           name, error.message)  # fmt: skip
            return


def resync_allocation(allocation: Allocation, pool: PoolObjects, report: ResyncReport) -> None:
    # A ready allocation whose objects are as the last resync found them has nothing new
    # to record: the cost of a cycle follows what changed, not how many allocations live.
    # (Allocations on their way somewhere are looked at every time: their deadlines run.)
    fingerprint = pool.fingerprint()
    count = compute_count(allocation.strategy, pool)
    # Objects that did not change can still be too many: a scale-down whose prune was lost
    # changes the row, not the objects.
    if (
        allocation.phase == Phase.READY
        and allocation.resync_fingerprint == fingerprint
        and count <= allocation.replicas
    ):
        report.unchanged += 1
        return
    recorded = allocation_record_observed(
        allocation_id=allocation.pk,
        phase=allocation.phase,
        strategy=allocation.strategy,
        requested_at=allocation.requested_at,
        pool=pool,
        seen=selectors.seen_of(allocation),
    )
    if recorded == Recorded.FAILED:
        report.failed.append(allocation.name)
        return
    if recorded == Recorded.RELEASED:
        report.released.append(allocation.name)
        return
    report.changed += recorded == Recorded.CHANGED
    if recorded != Recorded.FAILED and allocation.resync_fingerprint != fingerprint:
        allocation_note_resynced(allocation_id=allocation.pk, fingerprint=fingerprint)
    # What no event will finish: reconciles that were lost (a requested allocation nobody
    # applied, objects missing), and releases and rollbacks that stalled.
    now = timezone.now()
    phase = allocation.phase
    stale = now - allocation.updated_at > _requeue_grace()
    if phase in (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY, Phase.SUSPENDED) and (
        count > allocation.replicas and (stale or not allocation.prune_pending)
    ):
        # More than the row wants and no prune on its way (or one that stalled).
        allocation_note_surplus(allocation_id=allocation.pk)
        report.requeued.append(allocation.name)
        return
    if phase in (Phase.REQUESTED, Phase.PROVISIONING, Phase.READY):
        missing = count < allocation.replicas
        if (phase == Phase.REQUESTED and stale) or (phase != Phase.REQUESTED and missing):
            queue.reconcile(allocation.pk)
            report.requeued.append(allocation.name)
    elif phase == Phase.SUSPENDED:
        # No Pods on purpose; the Sandboxes themselves must all be there, and suspended.
        drifted = len(pool.sandboxes) != allocation.replicas or any(
            operating_mode(sandbox) != "Suspended" for sandbox in pool.sandboxes
        )
        if drifted:
            queue.reconcile(allocation.pk)
            report.requeued.append(allocation.name)
    elif phase == Phase.RELEASING:
        if now - (allocation.release_requested_at or now) > _requeue_grace():
            queue.release(allocation.pk)
            report.requeued.append(allocation.name)
    elif phase == Phase.FAILED and not pool.empty():
        queue.rollback(allocation.pk)
        report.requeued.append(allocation.name)


def _resync_volumes(cluster: ClusterSnapshot, report: ResyncReport, *, adopt: bool) -> None:
    """Each kind of volume's part (its VolumeKind.resync: named contexts, agent
    workspaces), then the adoption of context PVCs that have no row (the Go service's;
    an agent type's workspace PVC is adopted when its workspace is ensured)."""
    known: dict[str, set[VolumeKey]] = {}
    for kind in registry.kinds():
        known[kind.name] = kind.resync(cluster.volumes[kind.name], report, _requeue_grace())
    if not adopt:
        return
    for key, pvc in sorted(cluster.context_pvcs.items()):
        if key not in known.get(CONTEXT_VOLUMES, set()):
            _record(report, key, adoption.adopt_context(key, pvc))


def _record(
    report: ResyncReport,
    key: tuple[str, str],
    result: Allocation | ContextResource | adoption.Orphan,
) -> None:
    if isinstance(result, adoption.Orphan):
        report.orphans.append(result)
        logger.warning("orphaned objects in %s for %s: %s", *key, result.why)
    else:
        report.adopted.append(result.name)


def resync_all(*, adopt: bool = True) -> ResyncReport:
    # Rows first, objects second: an allocation that finishes releasing in between then
    # still claims its (stale) objects instead of having them adopted as a phantom.
    allocations = list(Allocation.objects.filter(phase__in=ACTIVE_PHASES))
    cluster = snapshot()
    report = ResyncReport()
    pools = dict(cluster.pools)
    events = VolumeEvents()
    for allocation in allocations:
        report.checked += 1
        pool = pools.pop((allocation.namespace, allocation.name), PoolObjects())
        note_volume_problems(allocation, pool, events)
        resync_allocation(allocation, pool, report)
    _resync_volumes(cluster, report, adopt=adopt)
    if adopt:
        for key, pool in sorted(pools.items()):
            try:
                result: Allocation | adoption.Orphan = adoption.adopt(key, pool)
            except kube.KubeError as error:
                # One pool that cannot be inspected (say, its caller's PVC cannot be read)
                # must not stop the rest of the resync; the next run tries it again.
                result = adoption.Orphan(*key, (), f"could not be inspected: {error.message}")
            _record(report, key, result)
    return report

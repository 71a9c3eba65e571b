"""Observed state from Kubernetes objects, computed the same way by the watcher (from its
watch caches) and by the periodic resync (from list calls)."""

from __future__ import annotations

import hashlib
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from allocations.models import Strategy
from contextsvc.kube.objects.claim import claim_is_cold, claim_is_ready, claim_sandbox
from contextsvc.kube.objects.fields import (
    is_deleting,
    kind_of,
    labels_of,
    name_of,
    namespace_of,
    resource_version_of,
)
from contextsvc.kube.objects.kinds import PVC
from contextsvc.kube.objects.labels import POOL_LABEL
from contextsvc.kube.objects.pod import pod_is_ready, pod_is_scheduled, sandbox_pods_among
from contextsvc.kube.objects.pvc import pvc_is_bound, volume_problem
from contextsvc.kube.objects.sandbox import controller_problem as object_controller_problem
from contextsvc.kube.objects.sandbox import terminal_failure as object_terminal_failure

Obj = dict[str, Any]
PoolKey = tuple[str, str]  # (namespace, pool name)


@dataclass
class PoolObjects:
    sandboxes: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    pvcs: list[Obj] = field(default_factory=list)
    # The allocation's NetworkPolicy: not part of readiness, but a release is finished
    # only when it is gone as well (a worker killed mid-release may leave it behind).
    policies: list[Obj] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.sandboxes or self.claims or self.pods or self.pvcs or self.policies)

    def leftovers(self) -> list[str]:
        """Kind/name of what keeps a pool's name taken when no live allocation has it (what
        the v1 name check looked for: Sandboxes, claims, PVCs, and Pods a Sandbox made)."""
        return sorted(
            f"{field}/{name_of(obj)}"
            for field in ("sandboxes", "claims", "pvcs", "pods")
            for obj in getattr(self, field)
        )

    def compute(self) -> list[Obj]:
        """The objects that provide sandboxes (what adoption starts from)."""
        return self.sandboxes + self.claims

    def fingerprint(self) -> str:
        """Changes whenever any of these objects changes (their names and resourceVersions):
        what the resync compares to skip a pool nothing happened to."""
        versions = sorted(
            f"{field}/{name_of(obj)}/{resource_version_of(obj)}"
            for field in ("sandboxes", "claims", "pods", "pvcs", "policies")
            for obj in getattr(self, field)
        )
        return hashlib.sha1("\n".join(versions).encode(), usedforsecurity=False).hexdigest()


# How often an active watcher proves it is alive; its view of a pool's leftovers is trusted
# while its last heartbeat is at most two of these old (selectors.watcher_vouches).
HEARTBEAT_SECONDS = 15.0


def shard_of(key: PoolKey, shards: int) -> int:
    """The watcher shard that records a pool (a stable hash of namespace/name)."""
    return zlib.crc32("/".join(key).encode()) % shards


def pool_key(obj: Obj) -> PoolKey | None:
    pool = labels_of(obj).get(POOL_LABEL)
    if not pool:
        return None
    return namespace_of(obj), str(pool)


def group_by_pool(
    *,
    sandboxes: Iterable[Obj] = (),
    claims: Iterable[Obj] = (),
    pods: Iterable[Obj] = (),
    pvcs: Iterable[Obj] = (),
    policies: Iterable[Obj] = (),
) -> dict[PoolKey, PoolObjects]:
    groups: dict[PoolKey, PoolObjects] = defaultdict(PoolObjects)
    for attribute, items in (
        ("sandboxes", sandboxes),
        ("claims", claims),
        ("pods", sandbox_pods_among(pods)),
        ("pvcs", pvcs),
        ("policies", policies),
    ):
        for obj in items:
            key = pool_key(obj)
            if key is None:
                continue
            getattr(groups[key], attribute).append(obj)
    return dict(groups)


def ready_replicas(strategy: str, pool: PoolObjects) -> int:
    """v1 readiness: Ready claims for warm-pool allocations, Ready Pods otherwise."""
    if strategy == Strategy.WARMPOOL:
        return sum(1 for claim in pool.claims if claim_is_ready(claim))
    return sum(1 for pod in pool.pods if pod_is_ready(pod))


Report = tuple[str, str]  # (reason, message)


def _first_report(pool: PoolObjects, read: Callable[[Obj], Report | None]) -> Report | None:
    """What ``read`` finds on the first Claim or Sandbox it finds anything on, the message
    prefixed with that object's kind and name."""
    for obj in pool.claims + pool.sandboxes:
        found = read(obj)
        if found is not None:
            reason, message = found
            kind = kind_of(obj) or "object"
            return reason, f"{kind} {name_of(obj)}: {message}"
    return None


def terminal_failure(pool: PoolObjects) -> Report | None:
    """The first Sandbox or Claim that failed for a reason no retry will fix."""
    return _first_report(pool, object_terminal_failure)


def controller_problem(pool: PoolObjects) -> Report | None:
    """Why the allocation is not ready, when it is not the normal wait: what a caller
    waiting on ``provisioning`` wants to know. A PVC the PV controller gives no volume
    comes first (the Sandboxes wait on it; objects.pvc.volume_problem), then the first Sandbox
    or Claim whose controller says why it is not ready."""
    for pvc in pool.pvcs:
        found = volume_problem(pvc)
        if found is not None:
            reason, message = found
            return reason, f"{PVC.kind} {name_of(pvc)}: {message}"
    return _first_report(pool, object_controller_problem)


@dataclass(frozen=True)
class Observation:
    """What the objects say of a live allocation: it failed, or how many replicas are ready
    and what (if anything) the controller reports about the others."""

    ready: int = 0
    failure: tuple[str, str] | None = None
    problem: tuple[str, str] | None = None


MILESTONES = ("volumes_bound", "pods_scheduled", "claims_bound")


@dataclass(frozen=True)
class Milestones:
    """Which readiness phases the objects have reached (each a name of MILESTONES), and of
    the bound claims how many took a warm Sandbox and how many cold-started one."""

    reached: frozenset[str] = frozenset()
    warm: int = 0
    cold: int = 0


@dataclass(frozen=True)
class Seen:
    """An allocation's observed fields as a caller read them (with its phase): enough to
    tell that an observation would change nothing, and which milestones are recorded."""

    replicas: int
    ready_replicas: int
    reason: str
    message: str
    # The PVCs the allocation makes (what "volumes bound" waits for) and the milestones
    # already recorded.
    volumes: int = 0
    noted: frozenset[str] = frozenset()


def managed_volumes(strategy: str, replicas: int, *, artifacts: bool) -> int:
    """How many PVCs an allocation makes: one per replica (dedicated), one (shared), none
    (a caller's PVC, warm-pool claims); and its artifacts PVC."""
    workspaces = replicas if strategy == Strategy.DEDICATED else int(strategy == Strategy.SHARED)
    return workspaces + int(artifacts)


def milestones(strategy: str, pool: PoolObjects, seen: Seen, *, ready: int = 0) -> Milestones:
    """The readiness phases the objects show now. A phase is reached when all the
    allocation wants of it are there: every PVC it makes Bound, a scheduled Pod for every
    replica (direct allocations), every claim bound to a Sandbox (warm-pool ones).

    ``ready`` replicas, all of them, imply every phase before: a Ready Pod was scheduled and
    mounts bound volumes. The watcher's caches are each current on their own, and a Pod's
    Ready can arrive before its PVC's Bound; the timeline must not show ready first."""
    reached: set[str] = set()
    all_ready = seen.replicas > 0 and ready >= seen.replicas
    live = [obj for obj in pool.pvcs if not is_deleting(obj)]
    if seen.volumes and (all_ready or sum(1 for pvc in live if pvc_is_bound(pvc)) >= seen.volumes):
        reached.add("volumes_bound")
    if strategy == Strategy.WARMPOOL:
        # A warm Sandbox's Pod was scheduled long before its claim: binding is the phase.
        bound = [claim for claim in pool.claims if claim_sandbox(claim)]
        cold = sum(1 for claim in bound if claim_is_cold(claim))
        if all_ready or len(bound) >= seen.replicas:
            reached.add("claims_bound")
        return Milestones(frozenset(reached), warm=len(bound) - cold, cold=cold)
    if all_ready or sum(1 for pod in pool.pods if pod_is_scheduled(pod)) >= seen.replicas:
        reached.add("pods_scheduled")
    return Milestones(frozenset(reached))


def observe(
    strategy: str, pool: PoolObjects, *, requested_at: datetime, now: datetime, deadline: timedelta
) -> Observation:
    """The one decision the watcher (from its caches) and the resync (from list calls) both
    make. A problem the controller keeps reporting past the reconcile deadline is a failure:
    it has had the time any transient one needs (``ReconcilerError`` often hides a
    configuration mistake)."""
    failure = terminal_failure(pool)
    if failure is not None:
        return Observation(failure=failure)
    ready = ready_replicas(strategy, pool)
    problem = controller_problem(pool)
    if problem is not None and now - requested_at > deadline:
        reason, message = problem
        seconds = int(deadline.total_seconds())
        return Observation(
            ready=ready,
            failure=(
                reason,
                f"{message} (still reported after the {seconds} s reconcile deadline)",
            ),
        )
    return Observation(ready=ready, problem=problem)


def compute_count(strategy: str, pool: PoolObjects) -> int:
    """How many of the desired Sandboxes / Claims exist (not being deleted)."""
    items = pool.claims if strategy == Strategy.WARMPOOL else pool.sandboxes
    return sum(1 for obj in items if not is_deleting(obj))

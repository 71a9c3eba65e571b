"""The watcher: lists and watches managed Sandboxes, SandboxClaims, Pods, PVCs and
NetworkPolicies and turns every event into an observed-state update. It also watches, for
the creates' checks, the metadata of the objects of those kinds that are not ours, and the
SandboxWarmPools and SandboxTemplates, and records them (allocations/services/seen.py).

One instance is active at a time (a PostgreSQL advisory lock held on a dedicated
connection); the others wait to take over. Each collection has an informer thread that
keeps a cache (list, then watch from the list's resourceVersion; relist on 410 Gone).
Events mark pools dirty; one processing thread recomputes a dirty pool from the caches and
writes the result, so readiness is never recomputed from stale pieces in two places.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from allocations import selectors
from allocations.models import ACTIVE_PHASES, Allocation
from allocations.observe import HEARTBEAT_SECONDS, PoolKey, PoolObjects, pool_key, shard_of
from allocations.services.observed import (
    allocation_record_observed,
    pool_presence_reconcile,
    pool_presence_record,
)
from allocations.services.seen import (
    ForeignKey,
    foreign_objects_reconcile,
    foreign_objects_update,
    warm_pools_reconcile,
    warm_pools_record,
)
from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.services import heartbeat_record
from contextsvc.infra import locks, namespaces
from contextsvc.infra.volumes import registry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import (
    annotations_of,
    name_of,
    namespace_of,
    object_key,
    resource_version_of,
)
from contextsvc.kube.objects.kinds import (
    NETWORK_POLICY,
    POD,
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
)
from contextsvc.kube.objects.labels import FOREIGN_SELECTOR, MANAGED_SELECTOR, POOLED_POD_SELECTOR
from contextsvc.kube.objects.observed import trimmed
from contextsvc.kube.objects.pod import sandbox_pods_among

logger = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
STANDBY_POLL_SECONDS = 5.0
LOCK_CHECK_SECONDS = 1.0
ObjKey = tuple[str, str]
# What the processing thread is asked to look at: (what, its key), one of
#   POOL (namespace, name)                 a pool, recorded by the shard that owns it;
#   VOLUME (volume kind, namespace, name)  a named context's or an agent workspace's PVC
#                                          (contextsvc/infra/volumes.py: the kinds);
#   FOREIGN (namespace, kind, name)        somebody else's object appeared or went;
#   WARM_POOLS (namespace,)                a warm pool or template of the namespace changed.
# All but pools are recorded by shard 0's holder.
POOL, VOLUME, FOREIGN, WARM_POOLS = "pool", "volume", "foreign", "warm-pools"
DirtyItem = tuple[str, tuple[str, ...]]
# The informers' fields that are a pool's objects (PoolObjects' lists); the others are
# "foreign", "warm_pools" and "templates".
POOL_FIELDS = ("sandboxes", "claims", "pods", "pvcs", "policies")
# The kinds a create makes under names derived from the pool's: others' objects of these
# kinds are watched (their metadata) for the names they hold.
NAMED_KINDS = (NETWORK_POLICY, PVC, SANDBOX, SANDBOX_CLAIM)


class Informer:
    """A cache of one collection, kept current by list + watch. It keeps of each object
    only what observation reads (objects.observed.trimmed): the caches hold every managed
    object, and whole objects cost several times as much."""

    def __init__(
        self,
        target: kube.Watchable,
        field: str,
        on_change: Callable[[dict[str, Any] | None, dict[str, Any] | None], None],
        stop: threading.Event,
    ) -> None:
        self.target = target
        self.field = field  # which PoolObjects list these objects belong to
        self.on_change = on_change
        self.stop = stop
        self.group_of: Callable[[dict[str, Any]], Any] = pool_key
        self.store: dict[ObjKey, dict[str, Any]] = {}
        # The same objects grouped by pool (or context), so a pool's objects are one lookup.
        self.groups: dict[Any, dict[ObjKey, dict[str, Any]]] = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()
        self.relists = 0

    def items(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.store.values())

    def items_for(self, group: Any) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.groups.get(group, {}).values())

    def has(self, key: ObjKey) -> bool:
        with self.lock:
            return key in self.store

    def _put(self, key: ObjKey, obj: dict[str, Any] | None) -> dict[str, Any] | None:
        """Store or (``None``) forget one object; returns what was there. Hold the lock."""
        old = self.store.pop(key, None)
        if old is not None:
            members = self.groups.get(self.group_of(old))
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self.groups[self.group_of(old)]
        if obj is not None:
            self.store[key] = obj
            self.groups.setdefault(self.group_of(obj), {})[key] = obj
        return old

    def _relist(self) -> str:
        items, resource_version = kube.list_raw(self.target)
        fresh = {object_key(item): trimmed(self.target.kind, item) for item in items}
        with self.lock:
            previous = dict(self.store)
            for key in previous.keys() - fresh.keys():
                self._put(key, None)
            for key, item in fresh.items():
                self._put(key, item)
        for key, old in previous.items():
            if key not in fresh:
                self.on_change(old, None)
        for key, new in fresh.items():
            self.on_change(previous.get(key), new)
        self.relists += 1
        self.synced.set()
        return resource_version

    def _apply(self, event: dict[str, Any]) -> None:
        obj = trimmed(self.target.kind, event["object"])
        new = None if event["type"] == "DELETED" else obj
        with self.lock:
            old = self._put(object_key(obj), new)
        self.on_change(old, new)

    def run(self) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                resource_version = self._relist()
                failures = 0
                while not self.stop.is_set():
                    gone = False
                    for event in kube.watch_raw(
                        self.target, resource_version, WATCH_TIMEOUT_SECONDS
                    ):
                        if event["type"] == "ERROR":
                            status = event.get("object") or {}
                            if status.get("code") == 410:
                                gone = True  # our resourceVersion is too old: start over
                                break
                            raise RuntimeError(f"watch error: {status.get('message')}")
                        resource_version = resource_version_of(event["object"])
                        if event["type"] != "BOOKMARK":
                            self._apply(event)
                        if self.stop.is_set():
                            return
                    if gone:
                        logger.info("watch of %s expired (410); relisting", self.target.describe())
                        break
            except Exception as exc:  # noqa: BLE001 - an informer must survive any failure
                failures += 1
                delay = min(2**failures, 30)
                logger.warning(
                    "informer for %s failed (%s); retrying in %ss",
                    self.target.describe(),
                    exc,
                    delay,
                )
                self.stop.wait(delay)


class Watcher:
    def __init__(self, shards: frozenset[int] = frozenset({0}), total: int = 1) -> None:
        self.stop = threading.Event()
        self.dirty_pools: queue.Queue[DirtyItem | None] = queue.Queue()
        self.informers: list[Informer] = []
        self.events_processed = 0
        # Which shards this instance records (of ``total``): every instance watches every
        # object, and records only its own pools; the rest belongs to shard 0.
        self.total = total
        self.shards: frozenset[int] = shards
        # The shards whose pools' leftovers are recorded from filled caches: what this
        # watcher's heartbeat vouches for (a POST then reads PoolPresence, not the cluster).
        self.vouched: frozenset[int] = frozenset()
        # The processor's writes of PoolPresence and the whole rewrite take turns.
        self.presence_lock = threading.Lock()

    def owns(self, item: DirtyItem) -> bool:
        what, key = item
        if what != POOL:
            return 0 in self.shards
        return shard_of((key[0], key[1]), self.total) in self.shards

    def add_shards(self, shards: frozenset[int]) -> None:
        """Take over more shards (an instance that held them is gone): every live
        allocation of theirs is looked at again."""
        self.shards = self.shards | shards
        self._relook()
        self._record_leftovers()

    def _relook(self) -> None:
        live = Allocation.objects.filter(phase__in=ACTIVE_PHASES)
        managed = namespaces.managed_namespaces()
        if managed is not None:
            # Another namespace group's allocations are its watcher's: ours has no objects
            # of theirs in its caches, and would see them all gone.
            live = live.filter(namespace__in=managed)
        for namespace, name in live.values_list("namespace", "name"):
            if self.owns((POOL, (namespace, name))):
                self.dirty_pools.put((POOL, (namespace, name)))

    def vouch_when_synced(self) -> None:
        """Record the leftovers and vouch for them, once every cache is filled (a kind whose
        first list failed is retried by its informer; the heartbeat loop asks again)."""
        if self.vouched != self.shards and all(i.synced.is_set() for i in self.informers):
            self._record_leftovers()

    def _record_leftovers(self) -> None:
        """PoolPresence made what the caches hold for the pools this watcher records: the
        leftovers of every pool no live allocation has; then its heartbeat vouches for them."""
        managed = namespaces.managed_namespaces()

        def records(key: PoolKey) -> bool:
            return (managed is None or key[0] in managed) and self.owns((POOL, key))

        with self.presence_lock:
            # A change after this read queues its pool, written after the lock is let go.
            keys = {
                key
                for informer in self.informers
                if informer.field in POOL_FIELDS
                for obj in informer.items()
                if (key := pool_key(obj))
            }
            live = selectors.live_pool_keys()
            seen = {
                key: leftovers
                for key in sorted(keys - live)
                if records(key) and (leftovers := self.pool_objects(key).leftovers())
            }
            pool_presence_reconcile(seen=seen, owns=records)
        if 0 in self.shards:
            self._record_seen(managed)
        self.vouched = self.shards

    def _record_seen(self, managed: list[str] | None) -> None:
        """ForeignObject and WarmPoolSeen made what the caches hold (shard 0's records)."""
        foreign: set[ForeignKey] = {
            (namespace_of(obj), informer.target.kind.kind, name_of(obj))
            for informer in self.informers
            if informer.field == "foreign"
            for obj in informer.items()
        }
        foreign_objects_reconcile(seen=foreign, namespaces=managed)
        with_pools = {
            namespace_of(obj)
            for informer in self.informers
            if informer.field == "warm_pools"
            for obj in informer.items()
        }
        for namespace in sorted(with_pools):
            self.process_warm_pools(namespace)
        warm_pools_reconcile(seen=with_pools, namespaces=managed)

    # --- wiring ---------------------------------------------------------------------------

    def _targets(self) -> list[tuple[kube.Watchable, str]]:
        managed = MANAGED_SELECTOR
        targets = []
        for namespace in namespaces.scopes():
            targets += [
                (kube.Watchable(SANDBOX, namespace, managed), "sandboxes"),
                (kube.Watchable(SANDBOX_CLAIM, namespace, managed), "claims"),
                (kube.Watchable(POD, namespace, POOLED_POD_SELECTOR), "pods"),
                (kube.Watchable(PVC, namespace, managed), "pvcs"),
                (kube.Watchable(NETWORK_POLICY, namespace, managed), "policies"),
                (kube.Watchable(SANDBOX_WARM_POOL, namespace, ""), "warm_pools"),
                (kube.Watchable(SANDBOX_TEMPLATE, namespace, ""), "templates"),
            ]
            targets += [
                (kube.Watchable(kind, namespace, FOREIGN_SELECTOR, metadata_only=True), "foreign")
                for kind in NAMED_KINDS
            ]
        return targets

    def _on_change(
        self, field: str, kind: str
    ) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], None]:
        def changed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            touched = [obj for obj in (old, new) if obj is not None]
            dirty: set[DirtyItem]
            if field == "foreign":
                # A name is taken or freed when an object appears or goes (or stops or
                # starts being ours, which its watch reports the same way); not when it
                # changes.
                if (old is None) == (new is None):
                    return
                obj = touched[0]
                dirty = {(FOREIGN, (namespace_of(obj), kind, name_of(obj)))}
            elif field in ("warm_pools", "templates"):
                # Their status changes with every claim; a verdict reads spec and annotations.
                if (
                    old is not None
                    and new is not None
                    and _verdict_inputs(old) == _verdict_inputs(new)
                ):
                    return
                dirty = {(WARM_POOLS, (namespace_of(touched[0]),))}
            else:
                dirty = {(POOL, key) for obj in touched if (key := pool_key(obj))}
            if field == "pvcs":
                # Named contexts' and agent workspaces' PVCs come through the same
                # (managed) PVC collection.
                dirty |= {
                    (VOLUME, (kind, *key)) for obj in touched for kind, key in registry.keys_of(obj)
                }
            for item in dirty:
                if self.owns(item):
                    self.dirty_pools.put(item)

        return changed

    def pool_objects(self, key: PoolKey) -> PoolObjects:
        pool = PoolObjects()
        for informer in self.informers:
            if informer.field in POOL_FIELDS:
                getattr(pool, informer.field).extend(informer.items_for(key))
        pool.pods = sandbox_pods_among(pool.pods)
        return pool

    # --- processing -------------------------------------------------------------------------

    def process_pool(self, key: PoolKey) -> None:
        namespace, name = key
        live = selectors.live_allocation(namespace=namespace, name=name)
        if live is None:
            # Leftovers keep the name taken (a POST reads this instead of listing); adopting
            # them is the resync's business.
            with self.presence_lock:
                leftovers = self.pool_objects(key).leftovers()
                pool_presence_record(namespace=namespace, pool=name, leftovers=leftovers)
            return
        allocation_record_observed(
            allocation_id=live.id,
            phase=live.phase,
            strategy=live.strategy,
            requested_at=live.requested_at,
            pool=self.pool_objects(key),
            seen=live.seen,
        )

    def process_foreign(self, keys: list[ForeignKey]) -> None:
        """Somebody else's objects that appeared or went, written at once."""
        present: list[ForeignKey] = []
        gone: list[ForeignKey] = []
        for namespace, kind, name in keys:
            held = any(
                informer.field == "foreign"
                and informer.target.kind.kind == kind
                and informer.has((namespace, name))
                for informer in self.informers
            )
            (present if held else gone).append((namespace, kind, name))
        foreign_objects_update(present=present, gone=gone)

    def process_warm_pools(self, namespace: str) -> None:
        def items(field: str) -> list[dict[str, Any]]:
            return [
                obj
                for informer in self.informers
                if informer.field == field
                for obj in informer.items_for(namespace)
            ]

        templates = {name_of(obj): obj for obj in items("templates")}
        warm_pools_record(namespace=namespace, pools=items("warm_pools"), templates=templates)

    def process_volume(self, kind_name: str, key: tuple[str, str]) -> None:
        kind = registry.get(kind_name)
        # Few, and rarely changing: a scan of the PVC cache is cheap enough.
        pvc = next(
            (
                obj
                for informer in self.informers
                if informer.field == "pvcs"
                for obj in informer.items()
                if kind.key(obj) == key
            ),
            None,
        )
        kind.record(key, pvc)

    def _process_loop(self) -> None:
        try:
            while not self.stop.is_set():
                item = self.dirty_pools.get()
                if item is None:
                    break
                batch = {item}
                # Coalesce: a burst of events for one pool is processed once.
                while True:
                    try:
                        extra = self.dirty_pools.get_nowait()
                    except queue.Empty:
                        break
                    if extra is None:
                        self.stop.set()
                        break
                    batch.add(extra)
                # Pools first: a caller may be waiting on one turning ready. Others' objects
                # after (every one of the batch in one transaction), then the rest.
                for what, key in sorted(item for item in batch if item[0] == POOL):
                    self._process(what, key)
                foreign = [key for what, key in batch if what == FOREIGN]
                if foreign:
                    self._process(FOREIGN, foreign)
                for what, key in sorted(item for item in batch if item[0] not in (POOL, FOREIGN)):
                    self._process(what, key)
                self.events_processed += len(batch)
        finally:
            connection.close()

    def _process(self, what: str, key: Any) -> None:
        """One item (every FOREIGN item of a batch at once). A pool that failed is written
        again at its next event. A failed write of somebody else's objects or of a warm
        pool's check would leave a create reading a wrong record until the next event,
        which may never come: the watcher's next heartbeat (within HEARTBEAT_SECONDS)
        rewrites the records whole from its caches, and until that succeeds it no longer
        vouches for them (creates read the cluster)."""
        try:
            if what == FOREIGN:
                self.process_foreign(sorted(key))
            elif what == VOLUME:
                self.process_volume(key[0], (key[1], key[2]))
            elif what == WARM_POOLS:
                self.process_warm_pools(key[0])
            else:
                self.process_pool((key[0], key[1]))
        except Exception:
            logger.exception("could not process %s %s", what, key)
            if what in (FOREIGN, WARM_POOLS):
                self.vouched = frozenset()
            close_old_connections()

    # --- lifecycle ---------------------------------------------------------------------------

    def run_leader(self) -> None:
        """Run informers and the processor until stopped (the caller holds the lock)."""
        for target, field in self._targets():
            informer = Informer(target, field, self._on_change(field, target.kind.kind), self.stop)
            if field not in POOL_FIELDS:
                informer.group_of = namespace_of  # looked up by namespace, not by pool
            self.informers.append(informer)
            threading.Thread(
                target=informer.run, name=f"informer-{target.kind.plural}", daemon=True
            ).start()
        processor = threading.Thread(target=self._process_loop, name="processor", daemon=True)
        processor.start()
        # Once the caches are filled, look at every live allocation, including those whose
        # objects have all vanished (no event will ever name them again).
        for informer in self.informers:
            informer.synced.wait(timeout=30)
        self._relook()
        self.vouch_when_synced()
        logger.info(
            "watching %d collections, recording shard(s) %s of %d of %s",
            len(self.informers),
            ",".join(map(str, sorted(self.shards))),
            self.total,
            f"namespace group [{namespaces.group()}]" if namespaces.group() else "every namespace",
        )

    def shutdown(self) -> None:
        self.stop.set()
        self.dirty_pools.put(None)


def _lock_connection() -> psycopg.Connection[Any]:
    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"],
        autocommit=True,
        connect_timeout=10,
        application_name="context-service-watcher-lock",
        # A silent network failure must surface as an error within seconds, not hours.
        keepalives=1,
        keepalives_idle=5,
        keepalives_interval=2,
        keepalives_count=2,
    )


RECONNECT_MAX_SECONDS = 30.0


def shard_lock_key(shard: int, group: str = "") -> int:
    """The advisory lock of one shard of one namespace group (namespaces.group): groups
    that share a database each have their own shards. With every namespace managed, shard 0
    keeps the single watcher's key, so one instance of an older release and one of this
    release never both record."""
    base = f"watcher[{group}]" if group else "watcher"
    return locks.singleton_key(base if shard == 0 else f"{base}-{shard}")


def run(stop: threading.Event) -> int:
    """Record the pools of the shards this process holds the locks of, until ``stop``.

    The locks live as long as their connection. When the connection is lost (PostgreSQL
    restarted, a network blip) this instance stops writing at once — another may take
    over — then reconnects with backoff and competes for shards again, starting from a
    fresh list of everything; the process itself never exits for it."""
    failures = 0
    while not stop.is_set():
        try:
            lock_conn = _lock_connection()
        except psycopg.Error as exc:
            failures += 1
            delay = min(2.0**failures, RECONNECT_MAX_SECONDS)
            logger.warning(
                "cannot connect for the watcher lock (%s); retrying in %.0fs", exc, delay
            )
            stop.wait(delay)
            continue
        failures = 0
        try:
            lost = _hold_locks_and_watch(lock_conn, stop)
        finally:
            lock_conn.close()
        if lost:
            logger.error("lost the watcher lock connection; stopped watching, reconnecting")
            stop.wait(1.0)
    return 0


def _heartbeat(watcher: Watcher | None = None) -> None:
    vouched = watcher.vouched if watcher is not None else frozenset()
    try:
        heartbeat_record(
            kind=ProcessHeartbeat.Kind.WATCHER, group=namespaces.group(), shards=vouched
        )
    except DatabaseError as exc:
        # The lock connection tells whether the database is gone; a heartbeat is not worth
        # dying for.
        logger.warning("could not record the watcher heartbeat: %s", exc)
        close_old_connections()


class Shards:
    """Which shard locks this instance holds, and which it should take next.

    An instance without a shard takes the first free one it finds (starting from one of its
    own, so that instances started together spread). One with shards takes another only
    when it has found it free twice in a row, a standby interval apart: a shard whose
    instance died is taken over, and an instance just starting gets the first chance at it.
    """

    def __init__(self, lock_conn: psycopg.Connection[Any], total: int, group: str = "") -> None:
        self.lock_conn = lock_conn
        self.total = total
        self.group = group
        self.held: set[int] = set()
        self.seen_free: set[int] = set()
        self.start = os.getpid() % total

    def take(self) -> frozenset[int]:
        """Try for free shards, as the class says; the ones newly taken."""
        others = [(self.start + i) % self.total for i in range(self.total)]
        others = [shard for shard in others if shard not in self.held]
        if not self.held:
            for shard in others:
                if self._try(shard):
                    return frozenset({shard})
            return frozenset()
        taken: set[int] = set()
        free = {shard for shard in others if not self._held_by_someone(shard)}
        for shard in sorted(free & self.seen_free):
            if self._try(shard):
                taken.add(shard)
        self.seen_free = free - taken
        return frozenset(taken)

    def _try(self, shard: int) -> bool:
        row = self.lock_conn.execute(
            "SELECT pg_try_advisory_lock(%s, %s)",
            (locks.SINGLETON, shard_lock_key(shard, self.group)),
        ).fetchone()
        if row and row[0]:
            self.held.add(shard)
            return True
        return False

    def _held_by_someone(self, shard: int) -> bool:
        # pg_locks lists the whole server's locks; advisory keys are per database, and
        # another database's watcher (another installation, a parallel test run) holds
        # nothing of ours.
        row = self.lock_conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s"
            " AND objid = %s AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (locks.SINGLETON, shard_lock_key(shard, self.group)),
        ).fetchone()
        return bool(row and row[0])


def _hold_locks_and_watch(lock_conn: psycopg.Connection[Any], stop: threading.Event) -> bool:
    """Stand by until a shard is ours, then watch, taking over shards left free. True when
    the lock connection was lost."""
    total = settings.CS_WATCHER_SHARDS
    shards = Shards(lock_conn, total, namespaces.group())
    watcher: Watcher | None = None
    last_heartbeat = last_take = 0.0
    try:
        while not stop.is_set():
            now = time.monotonic()
            if watcher is None or now - last_take >= STANDBY_POLL_SECONDS:
                last_take = now
                taken = shards.take()
                if taken and watcher is None:
                    logger.info("this watcher is now active (shards %s)", sorted(taken))
                    _heartbeat()
                    last_heartbeat = time.monotonic()
                    watcher = Watcher(frozenset(taken), total)
                    try:
                        watcher.run_leader()
                    except DatabaseError as exc:
                        logger.warning("could not start watching: %s", exc)
                        watcher.shutdown()
                        close_old_connections()
                        return True
                    _heartbeat(watcher)
                elif taken and watcher is not None:
                    logger.info("taking over shard(s) %s", sorted(taken))
                    watcher.add_shards(taken)
                    _heartbeat(watcher)
                elif watcher is None:
                    _heartbeat()
                    logger.info("another watcher is active; standing by")
            # Check the lock's connection often (a standby polls every
            # STANDBY_POLL_SECONDS, and must never find a lock free while its holder writes).
            if stop.wait(LOCK_CHECK_SECONDS if watcher is not None else STANDBY_POLL_SECONDS):
                break
            lock_conn.execute("SELECT 1")
            if watcher is not None and time.monotonic() - last_heartbeat >= HEARTBEAT_SECONDS:
                watcher.vouch_when_synced()
                _heartbeat(watcher)
                close_old_connections()
                last_heartbeat = time.monotonic()
    except psycopg.Error:
        # Without the locks another instance may take over: stop writing at once.
        if watcher is not None:
            watcher.shutdown()
        return True
    if watcher is not None:
        watcher.shutdown()
        time.sleep(0.2)
    return False


def _verdict_inputs(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What a warm pool's verdict reads of a pool or template: its spec (its generation,
    which a status update leaves alone) and its annotations (the relaxations)."""
    return ((obj.get("metadata") or {}).get("generation"), dict(annotations_of(obj)))

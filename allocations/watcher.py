"""The watcher: lists and watches managed Sandboxes, SandboxClaims, Pods, PVCs and
NetworkPolicies and turns every event into an observed-state update.

One instance is active at a time (a PostgreSQL advisory lock held on a dedicated
connection); the others wait to take over. Each collection has an informer thread that
keeps a cache (list, then watch from the list's resourceVersion; relist on 410 Gone).
Events mark pools dirty; one processing thread recomputes a dirty pool from the caches and
writes the result, so readiness is never recomputed from stale pieces in two places.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from allocations import services
from allocations.models import ACTIVE_PHASES, Allocation, ContextResource
from allocations.observe import PoolKey, PoolObjects, pool_key
from contextsvc.core import locks, namespaces
from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.services import heartbeat_record
from contextsvc.kube import client as kube
from contextsvc.kube import objects

logger = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
STANDBY_POLL_SECONDS = 5.0
HEARTBEAT_SECONDS = 15.0
LOCK_CHECK_SECONDS = 1.0
ObjKey = tuple[str, str]
ContextKey = tuple[str, str]
# (is it a named context?, its key): what the processing thread is asked to look at.
DirtyItem = tuple[bool, tuple[str, str]]


class Informer:
    """A cache of one collection, kept current by list + watch."""

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
        fresh = {objects.object_key(item): item for item in items}
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
        obj = event["object"]
        new = None if event["type"] == "DELETED" else obj
        with self.lock:
            old = self._put(objects.object_key(obj), new)
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
                        resource_version = objects.resource_version_of(event["object"])
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
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.dirty_pools: queue.Queue[DirtyItem | None] = queue.Queue()
        self.informers: list[Informer] = []
        self.events_processed = 0

    # --- wiring ---------------------------------------------------------------------------

    def _targets(self) -> list[tuple[kube.Watchable, str]]:
        managed = objects.MANAGED_SELECTOR
        targets = []
        for namespace in namespaces.scopes():
            targets += [
                (kube.Watchable(objects.SANDBOX, namespace, managed), "sandboxes"),
                (kube.Watchable(objects.SANDBOX_CLAIM, namespace, managed), "claims"),
                (kube.Watchable(objects.POD, namespace, objects.POOLED_POD_SELECTOR), "pods"),
                (kube.Watchable(objects.PVC, namespace, managed), "pvcs"),
                (kube.Watchable(objects.NETWORK_POLICY, namespace, managed), "policies"),
            ]
        return targets

    def _on_change(
        self, field: str
    ) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], None]:
        def changed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            touched = [obj for obj in (old, new) if obj is not None]
            dirty: set[DirtyItem] = {(False, key) for obj in touched if (key := pool_key(obj))}
            if field == "pvcs":
                # Named contexts' PVCs come through the same (managed) PVC collection.
                dirty |= {(True, key) for obj in touched if (key := objects.context_key(obj))}
            for item in dirty:
                self.dirty_pools.put(item)

        return changed

    def pool_objects(self, key: PoolKey) -> PoolObjects:
        pool = PoolObjects()
        for informer in self.informers:
            getattr(pool, informer.field).extend(informer.items_for(key))
        pool.pods = objects.sandbox_pods_among(pool.pods)
        return pool

    # --- processing -------------------------------------------------------------------------

    def process_pool(self, key: PoolKey) -> None:
        namespace, name = key
        row = (
            Allocation.objects.filter(namespace=namespace, name=name, phase__in=ACTIVE_PHASES)
            .values("id", "phase", "strategy", "requested_at")
            .first()
        )
        if row is None:
            return  # unknown pools are the resync's (adoption) business
        services.allocation_record_observed(
            allocation_id=row["id"],
            phase=row["phase"],
            strategy=row["strategy"],
            requested_at=row["requested_at"],
            pool=self.pool_objects(key),
        )

    def process_context(self, key: ContextKey) -> None:
        namespace, name = key
        context = (
            ContextResource.objects.filter(namespace=namespace, name=name)
            .exclude(status=ContextResource.Status.DELETED)
            .first()
        )
        if context is None:
            return
        # Contexts are few and rarely change: a scan of the PVC cache is cheap enough.
        pvc = next(
            (
                obj
                for informer in self.informers
                if informer.field == "pvcs"
                for obj in informer.items()
                if objects.context_key(obj) == key
            ),
            None,
        )
        services.context_record_observed(context=context, pvc=pvc)

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
                for is_context, key in sorted(batch):
                    try:
                        if is_context:
                            self.process_context(key)
                        else:
                            self.process_pool(key)
                    except Exception:
                        logger.exception("could not process %s", key)
                        close_old_connections()
                    self.events_processed += 1
        finally:
            connection.close()

    # --- lifecycle ---------------------------------------------------------------------------

    def run_leader(self) -> None:
        """Run informers and the processor until stopped (the caller holds the lock)."""
        for target, field in self._targets():
            informer = Informer(target, field, self._on_change(field), self.stop)
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
        for namespace, name in Allocation.objects.filter(phase__in=ACTIVE_PHASES).values_list(
            "namespace", "name"
        ):
            self.dirty_pools.put((False, (namespace, name)))
        logger.info("watching %d collections", len(self.informers))

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


def run(stop: threading.Event) -> int:
    """Be the active watcher while this process holds the lock, until ``stop``.

    The lock lives as long as its connection. When the connection is lost (PostgreSQL
    restarted, a network blip) this instance stops writing at once — another may take
    over — then reconnects with backoff and competes for the lock again, starting from a
    fresh list of everything; the process itself never exits for it."""
    key = locks.singleton_key("watcher")
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
            lost = _hold_lock_and_watch(lock_conn, key, stop)
        finally:
            lock_conn.close()
        if lost:
            logger.error("lost the watcher lock connection; stopped watching, reconnecting")
            stop.wait(1.0)
    return 0


def _heartbeat() -> None:
    try:
        heartbeat_record(kind=ProcessHeartbeat.Kind.WATCHER)
    except DatabaseError as exc:
        # The lock connection tells whether the database is gone; a heartbeat is not worth
        # dying for.
        logger.warning("could not record the watcher heartbeat: %s", exc)
        close_old_connections()


def _hold_lock_and_watch(
    lock_conn: psycopg.Connection[Any], key: int, stop: threading.Event
) -> bool:
    """Stand by until the lock is ours, then watch. True when the connection was lost."""
    try:
        while not stop.is_set():
            acquired = lock_conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (locks.SINGLETON, key)
            ).fetchone()
            if acquired and acquired[0]:
                break
            _heartbeat()
            logger.info("another watcher is active; standing by")
            stop.wait(STANDBY_POLL_SECONDS)
    except psycopg.Error:
        return True
    if stop.is_set():
        return False
    logger.info("this watcher is now active")
    _heartbeat()
    watcher = Watcher()
    try:
        watcher.run_leader()
    except DatabaseError as exc:
        logger.warning("could not start watching: %s", exc)
        watcher.shutdown()
        close_old_connections()
        return True
    last_heartbeat = time.monotonic()
    # Check the lock's connection often (a standby polls every STANDBY_POLL_SECONDS, and
    # must never find the lock free while this one still writes).
    while not stop.wait(LOCK_CHECK_SECONDS):
        try:
            lock_conn.execute("SELECT 1")
        except psycopg.Error:
            # Without the lock another instance may take over: stop writing at once.
            watcher.shutdown()
            return True
        if time.monotonic() - last_heartbeat >= HEARTBEAT_SECONDS:
            _heartbeat()
            close_old_connections()
            last_heartbeat = time.monotonic()
    watcher.shutdown()
    time.sleep(0.2)
    return False

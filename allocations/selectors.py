"""Reads for allocations: PostgreSQL only, never Kubernetes."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Count, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL
from django.utils import timezone

from allocations.models import (
    ACTIVE_PHASES,
    VISIBLE_PHASES,
    Allocation,
    AllocationEvent,
    ForeignObject,
    Phase,
    PoolPresence,
    Strategy,
    WarmPoolSeen,
)
from allocations.observe import HEARTBEAT_SECONDS, MILESTONES, Seen, managed_volumes, shard_of
from contextsvc.core.models import ProcessHeartbeat
from contextsvc.core.retention import Kept, kept
from contextsvc.core.tallies import with_retired
from contextsvc.core.teams import Reach, storage_in_use
from contextsvc.infra import namespaces
from contextsvc.infra.errors import InvalidRequest, NotFound

V1_STATUS_PHASES = {
    "provisioning": (Phase.REQUESTED, Phase.PROVISIONING),
    "ready": (Phase.READY,),
    "failed": (Phase.FAILED,),
}


# Callers poll this until their pool is ready: the hottest read. Written out once rather
# than compiled by the ORM per request (docs/performance.md). At most one row matches: a
# name is unique among allocations that are not released.
_VISIBLE_SQL = "SELECT * FROM allocations_allocation WHERE name = %s AND phase = ANY(%s) LIMIT 1"


def pool_not_found(name: str) -> NotFound:
    return NotFound(f'sandbox pool "{name}" not found')


def allocation_get_visible(*, name: str, reach: Reach) -> Allocation:
    """The allocation a v1 caller can see under ``name`` (a releasing one is gone for it,
    another team's was never there)."""
    found = list(Allocation.objects.raw(_VISIBLE_SQL, [name, list(VISIBLE_PHASES)]))
    if not found or not reach.allows(found[0].team_id):
        raise pool_not_found(name)
    return found[0]


class LiveAllocation(NamedTuple):
    id: int
    phase: str
    strategy: str
    requested_at: datetime
    seen: Seen


# The watcher reads this on every event of every pool it watches (several per Pod that
# starts): written out for the reason _VISIBLE_SQL is.
_LIVE_SQL = (
    "SELECT id, phase, strategy, requested_at, replicas, ready_replicas, reason, message,"
    " artifacts_size <> '', volumes_bound_at IS NOT NULL, pods_scheduled_at IS NOT NULL,"
    " claims_bound_at IS NOT NULL"
    " FROM allocations_allocation WHERE namespace = %s AND name = %s AND phase = ANY(%s)"
    " LIMIT 1"
)


def watcher_vouches(*, namespace: str, name: str | None = None) -> bool:
    """Whether an active watcher's caches hold what a create checks, filled and current:
    the heartbeat, at most two heartbeats old, of a watcher of this namespace group that
    holds shard 0 (which records others' objects and the warm pools: ForeignObject,
    WarmPoolSeen) and, for a pool ``name``, the pool's shard (whose leftovers PoolPresence
    records). One query, whichever watchers hold the shards."""
    managed = namespaces.managed_namespaces()
    if managed is not None and namespace not in managed:
        return False
    shards = {0}
    if name is not None:
        shards.add(shard_of((namespace, name), settings.CS_WATCHER_SHARDS))
    held = ProcessHeartbeat.objects.filter(
        kind=ProcessHeartbeat.Kind.WATCHER,
        group=namespaces.group(),
        last_seen__gte=timezone.now() - timedelta(seconds=2 * HEARTBEAT_SECONDS),
    ).values_list("shards", flat=True)
    return shards <= {shard for listed in held for shard in listed}


def foreign_objects(*, namespace: str, wanted: list[tuple[str, str]]) -> list[str]:
    """Of the objects a create would make (kind, name), those somebody else's object
    already holds, as the watcher last saw them (``Kind/name``)."""
    if not wanted:
        return []
    found = ForeignObject.objects.filter(ForeignObject.named(namespace, wanted))
    return sorted(f"{kind}/{name}" for kind, name in found.values_list("kind", "name"))


def warm_pool_verdict(*, namespace: str, name: str) -> dict[str, Any] | None:
    """The watcher's record of a warm pool and its template (None: it saw no such pool)."""
    found = WarmPoolSeen.objects.filter(namespace=namespace, name=name).first()
    return dict(found.verdict) if found is not None else None


def pool_leftovers(*, namespace: str, name: str) -> list[str]:
    """What the watcher last saw left of a pool no live allocation has (Kind/name), if any."""
    found = PoolPresence.objects.filter(namespace=namespace, pool=name).first()
    return list(found.objects_seen) if found is not None else []


def live_pool_keys() -> set[tuple[str, str]]:
    """(namespace, name) of every allocation in an active phase."""
    return set(Allocation.objects.filter(phase__in=ACTIVE_PHASES).values_list("namespace", "name"))


def live_allocation(*, namespace: str, name: str) -> LiveAllocation | None:
    """The allocation of an active phase behind the pool ``namespace/name``, if any."""
    with connection.cursor() as cursor:
        cursor.execute(_LIVE_SQL, [namespace, name, list(ACTIVE_PHASES)])
        row = cursor.fetchone()
    if row is None:
        return None
    pk, phase, strategy, requested_at, replicas, ready, reason, message, artifacts = row[:9]
    noted = frozenset(name for name, done in zip(MILESTONES, row[9:], strict=True) if done)
    volumes = managed_volumes(strategy, replicas, artifacts=artifacts)
    seen = Seen(replicas, ready, reason, message, volumes=volumes, noted=noted)
    return LiveAllocation(pk, phase, strategy, requested_at, seen)


def seen_of(allocation: Allocation) -> Seen:
    """An allocation's row as the observation decision reads it (the resync's, from the
    model; the watcher's comes from _LIVE_SQL)."""
    return Seen(
        replicas=allocation.replicas,
        ready_replicas=allocation.ready_replicas,
        reason=allocation.reason,
        message=allocation.message,
        volumes=managed_volumes(
            allocation.strategy, allocation.replicas, artifacts=allocation.has_artifacts
        ),
        noted=frozenset(
            name for name in MILESTONES if getattr(allocation, f"{name}_at") is not None
        ),
    )


def is_visible(allocation: Allocation) -> bool:
    return allocation.phase in VISIBLE_PHASES


def allocation_changes(
    *, since: str | None, reach: Reach, namespace: str | None = None
) -> tuple[list[Allocation], str]:
    """For the change stream: the allocations written by transactions that ``since`` did
    not see, in the order they were written (without ``since``: every visible one), and the
    cursor to ask from next time.

    Both come from one snapshot, and the cursor is that snapshot (``pg_snapshot`` text,
    ``xmin:xmax:in-progress ids``). A transaction it saw as committed wrote what this call
    read; any other (in progress then, or later) is not visible in it, so the next call
    reads its writes. A change is never skipped and an unchanged row never comes twice,
    whatever order concurrent writes commit in and however long another transaction on the
    server (another database's included: ids are server-wide) stays open.
    ``selectors.change_cursor`` checks a cursor a client sends back."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SELECT pg_current_snapshot()::text")
        row = cursor.fetchone()
        snapshot = str(row[0]) if row else "1:1:"
        queryset = reach.narrow(Allocation.objects.all())
        if since is None:
            queryset = queryset.filter(phase__in=VISIBLE_PHASES)
        else:
            xmin = int(since.split(":", 1)[0])
            # The range on the index first; the snapshot decides inside it.
            queryset = (
                queryset.filter(changed_xid__gte=xmin)
                .alias(
                    seen=RawSQL(
                        "pg_visible_in_snapshot((changed_xid::text)::xid8, %s::pg_snapshot)",
                        (since,),
                        output_field=BooleanField(),
                    )
                )
                .filter(seen=False)
            )
        if namespace:
            queryset = queryset.filter(namespace=namespace)
        return list(queryset.order_by("changed_xid", "id")), snapshot


# At most this many in-progress ids in a cursor: a server's open transactions are bounded
# by its connections, and PostgreSQL's own limit is far above any we run with.
CURSOR_MAX_IDS = 10_000
_XID = r"[0-9]{1,19}"
_CURSOR = re.compile(rf"({_XID}):({_XID}):((?:{_XID})(?:,{_XID})*)?")


def change_cursor(raw: str) -> str | None:
    """A cursor a client sent back, as the snapshot text ``allocation_changes`` takes; None
    when it is not one. An earlier stream's cursor (one transaction id ``N``: every
    transaction before ``N`` seen, none from it on) is the snapshot ``N:N:``."""
    if raw.isdigit() and len(raw) <= 19:
        return f"{int(raw)}:{int(raw)}:"
    match = _CURSOR.fullmatch(raw)
    if match is None:
        return None
    xmin, xmax = int(match[1]), int(match[2])
    ids = [int(part) for part in match[3].split(",")] if match[3] else []
    # PostgreSQL's own rules for a snapshot, so a bad one is refused here rather than
    # failing the query: ids ascending and unique, xmin <= id < xmax.
    if not 1 <= xmin <= xmax or len(ids) > CURSOR_MAX_IDS:
        return None
    if any(not xmin <= value < xmax for value in ids) or ids != sorted(set(ids)):
        return None
    return f"{xmin}:{xmax}:{','.join(map(str, ids))}"


class TeamUse(NamedTuple):
    """What a team's live allocations hold, as its quotas count it."""

    allocations: int
    sandboxes: int
    storage: int


def team_pools(*, team_id: int) -> tuple[int, int]:
    """The team's live (not released, not releasing) allocations, and the sandboxes they
    run (a suspended pool runs none; its volumes stay)."""
    found = Allocation.objects.filter(team_id=team_id, phase__in=VISIBLE_PHASES).aggregate(
        allocations=Count("id"),
        sandboxes=Sum("replicas", filter=~Q(phase=Phase.SUSPENDED)),
    )
    return found["allocations"], found["sandboxes"] or 0


def team_use(*, team_id: int) -> TeamUse:
    """``team_pools`` and the storage the team's objects request (its pools', named
    contexts' and agent workspaces')."""
    return TeamUse(*team_pools(team_id=team_id), storage_in_use(team_id))


def allocation_storage(team_id: int) -> int:
    """The bytes the team's live pools' PVCs request (the pools' part of its storage)."""
    found = Allocation.objects.filter(team_id=team_id, phase__in=VISIBLE_PHASES).aggregate(
        storage=Sum("requested_storage")
    )
    return int(found["storage"] or 0)


def allocation_list_visible(
    *, reach: Reach, status: str | None = None, namespace: str | None = None
) -> QuerySet[Allocation]:
    queryset = reach.narrow(Allocation.objects.filter(phase__in=VISIBLE_PHASES))
    if status:
        if status not in V1_STATUS_PHASES:
            raise InvalidRequest("status must be one of provisioning, ready, failed")
        queryset = queryset.filter(phase__in=V1_STATUS_PHASES[status])
    if namespace:
        queryset = queryset.filter(namespace=namespace)
    return queryset.order_by("name")


# --- Dashboard reads ----------------------------------------------------------------------


def allocation_phase_counts(*, reach: Reach) -> dict[str, int]:
    """Allocations per phase (released ones are history and not counted)."""
    counts = dict(
        reach.narrow(Allocation.objects.exclude(phase=Phase.RELEASED))
        .values_list("phase")
        .annotate(n=Count("id"))
        .values_list("phase", "n")
    )
    return {phase: counts.get(phase, 0) for phase in Phase.values if phase != Phase.RELEASED}


def allocation_needs_attention(
    *, stuck_after_seconds: int, reach: Reach, limit: int = 20
) -> list[dict[str, Any]]:
    """Failed allocations and those provisioning for longer than they should, with why."""
    cutoff = timezone.now() - timedelta(seconds=stuck_after_seconds)
    provisioning = (Phase.REQUESTED, Phase.PROVISIONING)
    found = (
        reach.narrow(Allocation.objects.all())
        .filter(
            Q(phase=Phase.FAILED)
            | Q(phase__in=provisioning, requested_at__lt=cutoff)
            # The controller says why it is not ready: worth a look at once, not in 5 minutes.
            | (Q(phase__in=provisioning) & ~Q(reason=""))
            | Q(phase=Phase.RELEASING, release_requested_at__lt=cutoff)
        )
        .order_by("requested_at")[:limit]
    )
    items = []
    for allocation in found:
        if allocation.phase == Phase.FAILED:
            why = f"failed: {allocation.reason} — {allocation.message}"
        elif allocation.phase == Phase.RELEASING:
            why = "release has not finished: objects remain in the cluster"
        else:
            reported = f"{allocation.reason}: " if allocation.reason else "last error: "
            why = (
                f"{allocation.ready_replicas}/{allocation.replicas} ready after "
                f"{int((timezone.now() - allocation.requested_at).total_seconds() // 60)} min"
                + (f"; {reported}{allocation.message}" if allocation.message else "")
            )
        items.append({"allocation": allocation, "why": why})
    return items


def allocation_page(
    *,
    reach: Reach,
    phase: str = "",
    strategy: str = "",
    namespace: str = "",
    text: str = "",
    page: int = 1,
    per_page: int = 50,
) -> tuple[list[Allocation], int]:
    """One page of the allocations table and the number of matching rows: two queries,
    whatever the page or the table size."""
    # Released allocations are history: shown only when asked for by phase.
    found = reach.narrow(
        Allocation.objects.filter(phase=phase)
        if phase
        else Allocation.objects.exclude(phase=Phase.RELEASED)
    )
    if strategy:
        found = found.filter(strategy=strategy)
    if namespace:
        found = found.filter(namespace=namespace)
    if text:
        found = found.filter(name__icontains=text)
    total = found.count()
    offset = (max(page, 1) - 1) * per_page
    rows = list(found.order_by("-requested_at", "-id")[offset : offset + per_page])
    return rows, total


def allocation_row(allocation: Allocation) -> dict[str, Any]:
    """One allocation as the dashboard shows it, in page snapshots and in live events alike
    (so a stale snapshot plus the events equals a fresh snapshot)."""
    return {
        "id": allocation.pk,
        "name": allocation.name,
        "namespace": allocation.namespace,
        "strategy": allocation.strategy,
        "profile": allocation.profile_name,
        "phase": allocation.phase,
        "readyReplicas": allocation.ready_replicas,
        "replicas": allocation.replicas,
        "reason": allocation.reason,
        "message": allocation.message,
        "requester": allocation.requester,
        "requestedAt": allocation.requested_at.isoformat() if allocation.requested_at else None,
    }


# --- Metrics (allocations/metrics.py) ----------------------------------------------------


def allocations_requested() -> QuerySet[Allocation]:
    """Every allocation ever requested (``requested_at`` → ``ready_at`` once ready)."""
    return Allocation.objects.all()


# Each readiness phase after the request and the field that says when it was reached.
PHASE_FIELDS = (
    ("objects_created", "provisioned_at"),
    ("volumes_bound", "volumes_bound_at"),
    ("pods_scheduled", "pods_scheduled_at"),
    ("claims_bound", "claims_bound_at"),
    ("ready", "ready_at"),
)


def warm_pool_demand(*, since: datetime) -> dict[tuple[str, str], int]:
    """(namespace, warm pool) → claims asked for since ``since``: the replicas of the
    warm-pool allocations requested from then on (released ones too: they were demand)."""
    rows = (
        Allocation.objects.filter(strategy=Strategy.WARMPOOL, requested_at__gte=since)
        .values_list("namespace", "warm_pool")
        .annotate(claims=Sum("replicas"))
        .order_by()
    )
    return {(namespace, pool): int(claims) for namespace, pool, claims in rows}


def warm_claim_counts(
    *, since: datetime | None = None, rows: QuerySet[Allocation] | None = None
) -> list[tuple[str, str, int, int]]:
    """(namespace, warm pool, claims that took a warm Sandbox, claims that cold-started) over
    every warm-pool allocation whose claims were bound (requested since ``since``; of
    ``rows`` only, when given), by pool. Rows retention removed are not counted here
    (``warm_claim_counts_all`` adds them)."""
    bound = (Allocation.objects.all() if rows is None else rows).filter(
        strategy=Strategy.WARMPOOL, claims_bound_at__isnull=False
    )
    if since is not None:
        bound = bound.filter(requested_at__gte=since)
    by_pool = (
        bound.values_list("namespace", "warm_pool")
        .annotate(warm=Sum("warm_claims"), cold=Sum("cold_claims"))
        .order_by("namespace", "warm_pool")
    )
    return [(namespace, pool, int(warm), int(cold)) for namespace, pool, warm, cold in by_pool]


def reconcile_error_counts(
    rows: QuerySet[Allocation] | None = None,
) -> list[tuple[tuple[str], int]]:
    """([reason], count) over every allocation's timeline (of ``rows`` only, when given):
    "transient" for the retries, else the failure's reason."""
    events = AllocationEvent.objects.all()
    if rows is not None:
        events = events.filter(allocation__in=rows)
    retries = events.filter(kind=AllocationEvent.Kind.RETRY).count()
    failed = (
        events.filter(kind=AllocationEvent.Kind.FAILED)
        .values_list("data__reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(("transient",), retries)] + [
        ((str(reason or "unknown"),), count) for reason, count in failed
    ]


# The /metrics series that count from allocation rows, and what retention folds into their
# tallies before it removes rows (core.tallies): the all-time numbers survive the removal.
TIME_TO_READY = "contextsvc_allocation_time_to_ready_seconds"
PHASE_SECONDS = "contextsvc_allocation_phase_seconds"
WARM_POOL_CLAIMS = "contextsvc_warm_pool_claims"
RECONCILE_ERRORS = "contextsvc_reconcile_errors"


READY_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600)


def warm_claims_labelled(
    rows: QuerySet[Allocation] | None = None,
) -> list[tuple[tuple[str, ...], float]]:
    """``warm_claim_counts`` as ((namespace, pool, origin), count): the series' labels."""
    labelled: list[tuple[tuple[str, ...], float]] = []
    for namespace, pool, warm, cold in warm_claim_counts(rows=rows):
        labelled += [((namespace, pool, "warm"), warm), ((namespace, pool, "cold"), cold)]
    return labelled


def warm_claim_counts_all() -> list[tuple[str, str, int, int]]:
    """``warm_claim_counts`` over every allocation ever, removed ones included."""
    by_pool: dict[tuple[str, str], list[int]] = {}
    for (namespace, pool, origin), count in with_retired(WARM_POOL_CLAIMS, warm_claims_labelled()):
        by_pool.setdefault((namespace, pool), [0, 0])[origin == "cold"] += int(count)
    return [(namespace, pool, warm, cold) for (namespace, pool), (warm, cold) in by_pool.items()]


def reconcile_error_counts_all() -> list[tuple[tuple[str, ...], float]]:
    """``reconcile_error_counts`` over every allocation ever, removed ones included."""
    return with_retired(RECONCILE_ERRORS, reconcile_error_counts())


# --- The dashboard's charts (frontend/charts.py) ----------------------------------------------

CHART_ROWS = 5000


def allocations_requested_since(since: datetime) -> QuerySet[Allocation]:
    """The allocations requested from ``since`` on (their PHASE_FIELDS say how long each
    phase took)."""
    return Allocation.objects.filter(requested_at__gte=since)


def phase_intervals(*, since: datetime) -> list[tuple[Any, ...]]:
    """(requested_at, ready_at, failed_at, release_requested_at, released_at) of the
    allocations alive at some moment since ``since`` (at most CHART_ROWS, newest first)."""
    fields = ("requested_at", "ready_at", "failed_at", "release_requested_at", "released_at")
    alive = Q(released_at__isnull=True) | Q(released_at__gte=since)
    return list(
        Allocation.objects.filter(alive).order_by("-requested_at").values_list(*fields)[:CHART_ROWS]
    )


def warm_pool_requests(*, since: datetime) -> list[tuple[str, str, datetime, int]]:
    """(namespace, warm pool, requested_at, replicas) of the warm-pool allocations since."""
    return list(
        Allocation.objects.filter(strategy=Strategy.WARMPOOL, requested_at__gte=since)
        .order_by("requested_at")
        .values_list("namespace", "warm_pool", "requested_at", "replicas")[:CHART_ROWS]
    )


def allocation_active_by_name(*, name: str) -> Allocation | None:
    """The allocation that holds ``name`` now (names are unique until released)."""
    return Allocation.objects.filter(name=name, phase__in=ACTIVE_PHASES).first()


def retention_kept() -> list[Kept]:
    """What the allocations' tables hold, as retention sees them (the Cluster page)."""
    days = settings.CS_RETENTION_RELEASED_DAYS
    released = Allocation.objects.filter(phase=Phase.RELEASED)
    return [
        kept(Allocation, released, "released_at", days),
        kept(AllocationEvent, None, "at", days),
    ]

"""Creating an allocation: the request checked against the cluster (the caller's PVC, the
warm pool and its template's hardening, StorageClasses, the name free in the database and
in the cluster; the name and the warm pool from the watcher's records while it vouches),
the runtime copied from its profile, the row recorded and its reconcile queued (a
warm-pool allocation's run in the request); and the profiles' warm pools that such
creates claim from, scaled to demand."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from allocations import provisioning, queue, selectors
from allocations.models import Allocation, AllocationEvent, Phase, Strategy
from allocations.requests import PoolRequest
from allocations.services.quotas import quotas_check
from allocations.services.reconcile import FAILED, NAME_COLLISION, allocation_reconcile_now
from allocations.services.timeline import announce, record_event
from allocations.services.warmpool import warm_pool_check
from contextsvc.core import capabilities
from contextsvc.core.models import default_team_pk
from contextsvc.core.services import audit_record
from contextsvc.core.teams import check_team_namespace, team_lock
from contextsvc.infra import namespaces
from contextsvc.infra.errors import AlreadyExists, InvalidRequest, Unavailable, cluster_call
from contextsvc.infra.storage import check_storage_classes
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import builtin_blueprint
from contextsvc.kube.objects.fields import name_of
from contextsvc.kube.objects.kinds import (
    PVC,
    SANDBOX,
    SANDBOX_CLAIM,
)
from contextsvc.kube.objects.labels import pool_selector
from contextsvc.kube.objects.names import profile_warm_pool_name
from contextsvc.kube.objects.pvc import managed_claim, pvc_shape, requested_storage
from profiles import warmpools
from profiles.services import profile_blueprint, profile_for_allocation


def _check_managed_claim(request: PoolRequest, namespace: str, pvc: dict[str, Any]) -> None:
    """A PVC this service manages is mounted through claimName only as its rule says:
    retained artifacts read-only; another allocation's volume and an agent type's
    workspace never (they hold other conversations), unless an admin names the PVC in
    CS_CLAIMS_ALLOWED. A PVC the service does not manage is the caller's: as v1 did."""
    managed = managed_claim(pvc)
    if managed is None or f"{namespace}/{request.claim_name}" in settings.CS_CLAIMS_ALLOWED:
        return
    kind, owner = managed
    claim = f'workspace.claimName "{request.claim_name}"'
    if kind == "artifacts":
        if request.read_only is True:
            return
        raise InvalidRequest(
            f"{claim} holds the artifacts retained as context {owner}: mount it with "
            "workspace.readOnly true"
        )
    whose = f'allocation "{owner}"' if kind == "allocation" else f'agent type "{owner}"'
    raise InvalidRequest(
        f"{claim} is the workspace of {whose}, which this service does not mount into "
        "another allocation (an admin may allow it by name: CS_CLAIMS_ALLOWED)"
    )


def _existing_workspace(request: PoolRequest, namespace: str) -> tuple[str, str, str]:
    """(size, accessMode, storageClass) of the caller's PVC, which must fit the request."""
    with cluster_call():
        pvc = kube.get_object(PVC, namespace, request.claim_name)
    if pvc is None:
        raise InvalidRequest(
            f'workspace.claimName "{request.claim_name}" does not exist in namespace "{namespace}"'
        )
    _check_managed_claim(request, namespace, pvc)
    shape = pvc_shape(pvc)
    if request.replicas > 1 and shape.access_mode != "ReadWriteMany":
        raise InvalidRequest(
            f'workspace.claimName "{request.claim_name}" must allow ReadWriteMany to be shared '
            f"by {request.replicas} replicas"
        )
    return shape.size, shape.access_mode, shape.storage_class


# What a pool's requested storage is kept in (a PostgreSQL bigint), and more than any
# volume a cluster has.
MAX_POOL_STORAGE = 2**63 - 1


def pool_storage(allocation: Allocation) -> int:
    """The storage ``allocation`` requests for its PVCs (what a team's quota counts), or a
    400 when it is more than any pool may request: a size times the replicas past 8 EiB."""
    total = requested_storage(provisioning.pool_spec(allocation))
    if total > MAX_POOL_STORAGE:
        raise InvalidRequest(
            f"the pool would request {total} bytes of storage (workspace.size for each of its "
            f"{allocation.replicas} replicas, and artifacts.size), more than the most a pool "
            f"may request ({MAX_POOL_STORAGE} bytes)"
        )
    return total


def _taken(name: str) -> AlreadyExists:
    return AlreadyExists(f'sandbox pool "{name}" already exists')


def _check_name_free(allocation: Allocation, *, claims: bool, vouched: bool) -> None:
    """409 while a row or any object labelled with this pool name still exists, or while
    an object of somebody else's sits under a name this allocation would create (the Go
    service met that as AlreadyExists in the request, and its callers expect the 409).

    While a watcher vouches for its caches, the cluster's part is read from what it
    records (PoolPresence, ForeignObject): the POST asks the API server nothing, which a
    burst of POSTs would otherwise queue behind the controllers' writes. A create that
    still meets somebody else's object (made in the last instant) fails the allocation,
    rolled back (provisioning.NameCollision). Without such a watcher, every cluster check
    at once: the POST waits for the slowest, not for their sum."""
    name, namespace = allocation.name, allocation.namespace
    if Allocation.objects.filter(name=name).exclude(phase=Phase.RELEASED).exists():
        raise _taken(name)
    wanted = provisioning.desired_objects(allocation)
    if vouched:
        if selectors.pool_leftovers(namespace=namespace, name=name) or selectors.foreign_objects(
            namespace=namespace, wanted=[(kind.kind, name_of(body)) for kind, body in wanted]
        ):
            raise _taken(name)
        return
    # Somebody else's object under one of our names: one GET each (the API server's own
    # answer); leftovers under other names: a list of each kind we label.
    checks: list[Callable[[], Any]] = [
        functools.partial(kube.get_object, kind, namespace, name_of(body)) for kind, body in wanted
    ]
    selector = pool_selector(name)
    labelled = [SANDBOX, PVC, *([SANDBOX_CLAIM] if claims else [])]
    checks += [functools.partial(kube.list_objects, kind, namespace, selector) for kind in labelled]
    checks.append(functools.partial(provisioning.sandbox_pods, namespace, name))
    with cluster_call():
        if any(found for found in kube.concurrently(checks)):
            raise _taken(name)


WARM_POOL_PROFILE_IGNORED = (
    "profile is ignored for warm-pool allocations: the pool's SandboxTemplate decides the runtime"
)


@dataclass(frozen=True)
class Created:
    allocation: Allocation
    warnings: tuple[str, ...] = ()


def _runtime(
    request: PoolRequest, caps: capabilities.Capabilities
) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """(profile, blueprint JSON, warnings) for a new allocation. The blueprint is copied
    now, so that editing the profile later never changes this allocation's Sandboxes."""
    if request.strategy == Strategy.WARMPOOL:
        problem = caps.extensions_problem()
        if problem:
            raise InvalidRequest(f"warm-pool allocations need {problem.removeprefix('the ')}")
        if request.profile_name and request.warm_pool == profile_warm_pool_name(
            request.profile_name
        ):
            # Its own warm pool: the profile's blueprint is what runs.
            return profile_for_allocation(request.profile_name), {}, ()
        return None, {}, (WARM_POOL_PROFILE_IGNORED,) if request.profile_name else ()
    profile = profile_for_allocation(request.profile_name)
    service_account = settings.CS_SANDBOX_SERVICE_ACCOUNT
    if profile is None:
        blueprint = builtin_blueprint(
            image=settings.CS_SANDBOX_IMAGE or "", service_account=service_account
        )
    else:
        blueprint = profile_blueprint(profile, service_account=service_account)
    return profile, blueprint.to_json(), ()


def warm_pools_scale(*, now: datetime | None = None) -> warmpools.Report:
    """Every profile's warm pool made and kept in step, and sized from the claims asked of
    it over the last CS_WARM_POOL_WINDOW_SECONDS."""
    now = now or timezone.now()
    since = now - timedelta(seconds=settings.CS_WARM_POOL_WINDOW_SECONDS)
    return warmpools.warm_pools_sync(demand=selectors.warm_pool_demand(since=since), now=now)


def _profile_warm_pool(request: PoolRequest, namespace: str) -> PoolRequest:
    """A request that names a profile and no workspace takes the profile's warm pool."""
    if request.strategy != Strategy.WARMPOOL or request.warm_pool:
        return request
    profile = profile_for_allocation(request.profile_name)
    if profile is None or not profile.has_warm_pool or profile.warm_pool_namespace != namespace:
        raise InvalidRequest(
            f'profile "{request.profile_name}" has no warm pool in namespace "{namespace}": '
            "give a workspace, or a warmPoolRef"
        )
    return dataclasses.replace(request, warm_pool=profile_warm_pool_name(profile.name))


def allocation_create(*, request: PoolRequest, actor: str, team_id: int | None = None) -> Created:
    """Validate against the cluster, record the allocation (the team's, the default team's
    without one) within the team's quotas, reconcile it after commit (a warm-pool one here,
    before answering)."""
    namespace = namespaces.check_requested(request.namespace)
    team_id = team_id if team_id is not None else default_team_pk()
    check_team_namespace(team_id, namespace)
    caps = capabilities.current()
    problem = caps.core_problem()
    if problem:
        raise Unavailable(problem)
    request = _profile_warm_pool(request, namespace)
    # Whether the watcher's records stand for the cluster (the warm pool's check and the
    # name's), asked once.
    vouched = selectors.watcher_vouches(namespace=namespace, name=request.name)
    profile, blueprint, warnings = _runtime(request, caps)
    relaxations: frozenset[str] = frozenset()
    check_storage_classes(
        {
            "workspace.storageClass": request.workspace_storage_class,
            "artifacts.storageClass": request.artifacts_storage_class,
        }
    )
    # The request's columns as asked, then what the service works out.
    allocation = Allocation(
        **request.columns(),
        profile=profile,
        blueprint=blueprint,
        requester=actor,
        team_id=team_id,
    )
    allocation.namespace = namespace
    allocation.profile_name = profile.name if profile else ""
    if request.strategy == Strategy.EXISTING:
        (
            allocation.workspace_size,
            allocation.workspace_access_mode,
            allocation.workspace_storage_class,
        ) = _existing_workspace(request, namespace)
    elif request.strategy == Strategy.WARMPOOL:
        checked = warm_pool_check(request.warm_pool, namespace, vouched=vouched)
        relaxations = checked.relaxations
        allocation.blueprint = {"fence": checked.fence, "relaxations": sorted(relaxations)}
    allocation.requested_storage = pool_storage(allocation)
    # The team is checked by team_lock below (a query of its own here).
    allocation.full_clean(exclude=["team"], validate_constraints=False)
    _check_name_free(allocation, claims=caps.extensions, vouched=vouched)
    try:
        with transaction.atomic():
            team = team_lock(allocation.team_id)
            quotas_check(
                team,
                allocations=1,
                sandboxes=allocation.replicas,
                storage=allocation.requested_storage,
            )
            allocation.save()
            relaxed = (
                [f"The warm pool's owner relaxes: {', '.join(sorted(relaxations))}."]
                if relaxations
                else []
            )
            record_event(
                allocation,
                AllocationEvent.Kind.CREATED,
                " ".join([f"requested by {actor}.", *warnings, *relaxed]).strip(),
            )
            audit_record(
                actor=actor,
                team_id=allocation.team_id,
                action="allocation.create",
                target_type="allocation",
                target=allocation.name,
                payload={
                    "namespace": namespace,
                    "replicas": allocation.replicas,
                    "strategy": allocation.strategy,
                    "profile": allocation.profile_name,
                    "team": team.name,
                    **({"relaxations": sorted(relaxations)} if relaxations else {}),
                },
            )
            announce(allocation, "allocation.created")
            if allocation.strategy != Strategy.WARMPOOL:
                queue.reconcile(allocation.pk)
    except IntegrityError:
        # Another request took the name between our check and our insert.
        raise _taken(request.name) from None
    # A warm-pool allocation's claims are made here, after the commit
    # (allocation_reconcile_now says why). A claim's name somebody else took meanwhile fails
    # the allocation, rolled back, and the caller gets the contract's 409, as from the Go
    # service's create. Otherwise the answer is the pool as made, as the Go service's was
    # (provisioning, none ready), even when the watcher has already seen its claims Ready:
    # the controller can be that quick, and what the caller waits on is GET ?wait.
    if allocation.strategy == Strategy.WARMPOOL and (
        allocation_reconcile_now(allocation.pk) == FAILED
    ):
        failed = Allocation.objects.get(pk=allocation.pk)
        if failed.reason == NAME_COLLISION:
            raise _taken(allocation.name)
        return Created(failed, warnings)
    return Created(allocation, warnings)

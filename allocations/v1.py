"""The v1 HTTP contract for sandbox pools: request parsing in the contract's
validation order with its exact messages, and the exact response shapes.

Decoding problems (unknown fields, wrong JSON types) are reported first, as the Go service's
strict decoder did; then the contract's checks run in order. Where ``v1-api.md`` gives a
message it is used verbatim; the other messages are ours and are listed in docs/api.md.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from allocations.models import Allocation, Phase, Strategy
from allocations.observe import managed_volumes
from allocations.requests import (
    ARTIFACTS_SHARED_MESSAGE,
    KEEP,
    Artifacts,
    PoolRequest,
    PoolUpdate,
)
from contextsvc.core.errors import InvalidRequest
from contextsvc.core.jsonbody import field, reject_unknown_fields
from contextsvc.core.validators import (
    ACCESS_MODES,
    NAME_MESSAGE,
    NAMESPACE_MESSAGE,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_pool_name,
)
from contextsvc.kube.objects.names import artifacts_pvc_name
from contextsvc.quantity import is_positive_quantity

REPLICAS_MESSAGE = "replicas must be between 1 and 100"
WARM_POOL_WITH_WORKSPACE = "warmPoolRef cannot be combined with workspace settings"
READ_ONLY_REQUIRED = "workspace.readOnly is required with workspace.claimName"
READ_ONLY_WITHOUT_CLAIM = "workspace.readOnly requires workspace.claimName"
WARM_POOL_NAME_MESSAGE = "warmPoolRef must be a lowercase Kubernetes name"
CLAIM_NAME_MESSAGE = "workspace.claimName must be a lowercase Kubernetes name"
CLAIM_WITH_STORAGE = "workspace.claimName cannot be combined with size, accessMode, or storageClass"
SIZE_REQUIRED = "workspace.size is required"
SIZE_MESSAGE = "workspace.size must be a positive Kubernetes quantity"
# The two words in this order here, and the other way round in the contexts' message
# (contexts/v1.py): both are the Go service's own strings.
ACCESS_MODE_MESSAGE = "workspace.accessMode must be ReadWriteMany or ReadWriteOnce"

POOL_FIELDS = frozenset(
    {
        "name",
        "replicas",
        "warmPoolRef",
        "workspace",
        "profile",
        "namespace",
        "ttlSeconds",
        "expiresAt",
        "artifacts",
    }
)
WORKSPACE_FIELDS = frozenset({"size", "accessMode", "storageClass", "claimName", "readOnly"})


def parse_pool_request(body: dict[str, Any], *, now: datetime | None = None) -> PoolRequest:
    """The contract's request, then the lifecycle additions (checked after the contract's
    own checks, so a contract client gets the contract's messages in its order)."""
    request = _parse_contract_request(body)
    expires_at = _expiry(body, now or timezone.now())
    artifacts = _artifacts(body, request)
    if expires_at is None and artifacts is None:
        return request
    return dataclasses.replace(request, expires_at=expires_at, artifacts=artifacts)


def _parse_contract_request(body: dict[str, Any]) -> PoolRequest:
    reject_unknown_fields(body, POOL_FIELDS)
    workspace = field(body, "workspace", dict) or {}
    reject_unknown_fields(workspace, WORKSPACE_FIELDS, "workspace.")
    name = field(body, "name", str) or ""
    replicas = field(body, "replicas", int) or 0
    warm_pool = field(body, "warmPoolRef", str) or ""
    profile = field(body, "profile", str) or ""
    namespace = field(body, "namespace", str) or ""
    size = field(workspace, "size", str, where="workspace.") or ""
    access_mode = field(workspace, "accessMode", str, where="workspace.") or ""
    storage_class = field(workspace, "storageClass", str, where="workspace.") or ""
    claim = field(workspace, "claimName", str, where="workspace.") or ""
    read_only = field(workspace, "readOnly", bool, where="workspace.")

    if not is_pool_name(name):
        raise InvalidRequest(NAME_MESSAGE)
    if not 1 <= replicas <= 100:
        raise InvalidRequest(REPLICAS_MESSAGE)
    if warm_pool:
        if not is_dns1123_subdomain(warm_pool):
            raise InvalidRequest(WARM_POOL_NAME_MESSAGE)
        if size or access_mode or storage_class or claim or read_only is not None:
            raise InvalidRequest(WARM_POOL_WITH_WORKSPACE)
        _check_namespace(namespace)
        return PoolRequest(
            name,
            replicas,
            Strategy.WARMPOOL,
            warm_pool=warm_pool,
            profile=profile,
            namespace=namespace,
        )
    if profile and not (size or access_mode or storage_class or claim or read_only is not None):
        # v1 addition: a profile and no workspace ask for the profile's own warm pool (the
        # service resolves it; a profile without one is refused there).
        _check_namespace(namespace)
        return PoolRequest(name, replicas, Strategy.WARMPOOL, profile=profile, namespace=namespace)
    if claim:
        if not is_dns1123_subdomain(claim):
            raise InvalidRequest(CLAIM_NAME_MESSAGE)
        if size or access_mode or storage_class:
            raise InvalidRequest(CLAIM_WITH_STORAGE)
        if read_only is None:
            raise InvalidRequest(READ_ONLY_REQUIRED)
        _check_namespace(namespace)
        return PoolRequest(
            name,
            replicas,
            Strategy.EXISTING,
            claim_name=claim,
            read_only=read_only,
            profile=profile,
            namespace=namespace,
        )
    if read_only is not None:
        raise InvalidRequest(READ_ONLY_WITHOUT_CLAIM)
    if not size.strip():
        raise InvalidRequest(SIZE_REQUIRED)
    if not is_positive_quantity(size):
        raise InvalidRequest(SIZE_MESSAGE)
    if access_mode not in ACCESS_MODES:
        raise InvalidRequest(ACCESS_MODE_MESSAGE)
    if storage_class and not is_dns1123_subdomain(storage_class):
        raise InvalidRequest("workspace.storageClass must be a DNS-1123 subdomain")
    _check_namespace(namespace)
    strategy = Strategy.SHARED if access_mode == "ReadWriteMany" else Strategy.DEDICATED
    return PoolRequest(
        name,
        replicas,
        strategy,
        size=size,
        access_mode=access_mode,
        storage_class=storage_class,
        profile=profile,
        namespace=namespace,
    )


def _check_namespace(namespace: str) -> None:
    if namespace and not is_dns1123_label(namespace):
        raise InvalidRequest(NAMESPACE_MESSAGE)


# --- Lifecycle additions ---------------------------------------------------------------------

MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 30 * 24 * 3600
TTL_MESSAGE = f"ttlSeconds must be between {MIN_TTL_SECONDS} and {MAX_TTL_SECONDS}"
EXPIRES_AT_MESSAGE = (
    "expiresAt must be a time with its zone (RFC 3339, e.g. 2026-12-24T18:00:00Z) at least "
    f"{MIN_TTL_SECONDS} s and at most {MAX_TTL_SECONDS // 86400} days from now"
)
EXPIRY_BOTH_MESSAGE = "give ttlSeconds or expiresAt, not both"
ARTIFACTS_FIELDS = frozenset({"size", "accessMode", "storageClass", "retain"})
PATCH_FIELDS = frozenset({"replicas", "ttlSeconds", "expiresAt"})


def _expiry(body: dict[str, Any], now: datetime) -> datetime | None:
    ttl = field(body, "ttlSeconds", int)
    expires = field(body, "expiresAt", str)
    if ttl is not None and expires is not None:
        raise InvalidRequest(EXPIRY_BOTH_MESSAGE)
    if ttl is not None:
        if not MIN_TTL_SECONDS <= ttl <= MAX_TTL_SECONDS:
            raise InvalidRequest(TTL_MESSAGE)
        return now + timedelta(seconds=ttl)
    if expires is None:
        return None
    try:
        moment = datetime.fromisoformat(expires.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(EXPIRES_AT_MESSAGE) from None
    seconds = (moment - now).total_seconds() if moment.tzinfo else None
    if seconds is None or not MIN_TTL_SECONDS <= seconds <= MAX_TTL_SECONDS:
        raise InvalidRequest(EXPIRES_AT_MESSAGE)
    return moment


def _artifacts(body: dict[str, Any], request: PoolRequest) -> Artifacts | None:
    raw = field(body, "artifacts", dict)
    if raw is None:
        return None
    reject_unknown_fields(raw, ARTIFACTS_FIELDS, "artifacts.")
    size = field(raw, "size", str, where="artifacts.") or ""
    access_mode = field(raw, "accessMode", str, where="artifacts.") or ""
    storage_class = field(raw, "storageClass", str, where="artifacts.") or ""
    retain = field(raw, "retain", bool, where="artifacts.")
    if request.strategy == Strategy.WARMPOOL:
        raise InvalidRequest(
            "artifacts cannot be combined with warmPoolRef (the pool's template decides the "
            "volumes)"
        )
    if not is_positive_quantity(size):
        raise InvalidRequest("artifacts.size must be a positive Kubernetes quantity")
    if access_mode not in ACCESS_MODES:
        raise InvalidRequest("artifacts.accessMode must be ReadWriteMany or ReadWriteOnce")
    if access_mode == "ReadWriteOnce" and request.replicas > 1:
        raise InvalidRequest(ARTIFACTS_SHARED_MESSAGE)
    if storage_class and not is_dns1123_subdomain(storage_class):
        raise InvalidRequest("artifacts.storageClass must be a DNS-1123 subdomain")
    return Artifacts(size, access_mode, storage_class, bool(retain))


def parse_pool_update(body: dict[str, Any], *, now: datetime | None = None) -> PoolUpdate:
    reject_unknown_fields(body, PATCH_FIELDS)
    if not body:
        raise InvalidRequest("give replicas, ttlSeconds or expiresAt")
    replicas = field(body, "replicas", int)
    if replicas is not None and not 1 <= replicas <= 100:
        raise InvalidRequest(REPLICAS_MESSAGE)
    if "expiresAt" in body and "ttlSeconds" in body:
        # Both named, even as null (clear it and set it): a contradiction, refused like
        # both values (issue 32: {"ttlSeconds": 600, "expiresAt": null} set a 600 s expiry).
        raise InvalidRequest(EXPIRY_BOTH_MESSAGE)
    if "expiresAt" in body and body["expiresAt"] is None:
        return PoolUpdate(replicas=replicas, expires_at=None)  # no expiry any more
    expires_at = _expiry(body, now or timezone.now())
    return PoolUpdate(replicas=replicas, expires_at=KEEP if expires_at is None else expires_at)


V1_STATUS = {
    Phase.REQUESTED: "provisioning",
    Phase.PROVISIONING: "provisioning",
    Phase.READY: "ready",
    Phase.SUSPENDED: "suspended",
    Phase.FAILED: "failed",
}


def pool_status(allocation: Allocation) -> str:
    """``provisioning`` until every replica is ready, then ``ready`` (+ ``failed``)."""
    return V1_STATUS.get(Phase(allocation.phase), "provisioning")


def _timestamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def pool_phases(allocation: Allocation) -> list[dict[str, Any]]:
    """The readiness phases that apply to the allocation, in order, each with when it was
    first seen and the seconds since the request (both null until then)."""
    if allocation.strategy == Strategy.WARMPOOL:
        steps = [
            ("claimed", allocation.provisioned_at),
            ("claimsBound", allocation.claims_bound_at),
        ]
    else:
        steps = [("objectsCreated", allocation.provisioned_at)]
        if managed_volumes(
            allocation.strategy, allocation.replicas, artifacts=allocation.has_artifacts
        ):
            steps.append(("volumesBound", allocation.volumes_bound_at))
        steps.append(("podsScheduled", allocation.pods_scheduled_at))
    steps = [("accepted", allocation.requested_at), *steps, ("ready", allocation.ready_at)]
    # Each phase implies the ones before it (ready means scheduled, scheduled means
    # created), but the watcher may see them in another order under load (a Pod's
    # scheduling after its Sandbox's ready): a phase seen after a later one is shown at
    # that later one's time, so the timeline never runs backwards.
    later: datetime | None = None
    for index in range(len(steps) - 1, -1, -1):
        phase, at = steps[index]
        if at is not None and later is not None and at > later:
            steps[index] = (phase, later)
        later = steps[index][1] or later
    return [
        {
            "phase": phase,
            "at": _timestamp(at) if at else None,
            "seconds": round((at - allocation.requested_at).total_seconds(), 3) if at else None,
        }
        for phase, at in steps
    ]


def pool_response(
    allocation: Allocation, *, default_namespace: str, phases: bool = False
) -> dict[str, Any]:
    workspace: dict[str, Any] = {
        "size": allocation.workspace_size,
        "accessMode": allocation.workspace_access_mode,
    }
    if allocation.workspace_storage_class:
        workspace["storageClass"] = allocation.workspace_storage_class
    if allocation.claim_name:
        workspace["claimName"] = allocation.claim_name
    if allocation.read_only is not None:
        workspace["readOnly"] = allocation.read_only
    body: dict[str, Any] = {
        "name": allocation.name,
        "status": pool_status(allocation),
        "replicas": allocation.replicas,
        "readyReplicas": allocation.ready_replicas,
        "sandboxSelector": allocation.selector,
        "workspace": workspace,
    }
    if allocation.warm_pool:
        body["warmPoolRef"] = allocation.warm_pool
    # Additions that break nothing: fields a Go client ignores, present only when they apply.
    if allocation.phase == Phase.FAILED or (
        allocation.message and allocation.phase in (Phase.REQUESTED, Phase.PROVISIONING)
    ):
        # Why it failed, or why it is not ready yet (what the controller, or the last
        # retry, reported).
        body["message"] = allocation.message
    if allocation.profile_name:
        body["profile"] = allocation.profile_name
    if allocation.namespace != default_namespace:
        body["namespace"] = allocation.namespace
    if allocation.expires_at is not None:
        body["expiresAt"] = _timestamp(allocation.expires_at)
    if allocation.has_artifacts:
        artifacts: dict[str, Any] = {
            "size": allocation.artifacts_size,
            "accessMode": allocation.artifacts_access_mode,
            "retain": allocation.artifacts_retain,
            "claimName": artifacts_pvc_name(allocation.name),
        }
        if allocation.artifacts_storage_class:
            artifacts["storageClass"] = allocation.artifacts_storage_class
        body["artifacts"] = artifacts
    if phases:
        # Asked for with ?detail=phases: where the time to ready went.
        body["phases"] = pool_phases(allocation)
        if allocation.strategy == Strategy.WARMPOOL and allocation.claims_bound_at:
            body["claims"] = {"warm": allocation.warm_claims, "cold": allocation.cold_claims}
    return body

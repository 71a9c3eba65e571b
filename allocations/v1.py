"""The v1 HTTP contract for sandbox pools: request parsing in the contract's
validation order with its exact messages, and the exact response shapes.

Decoding problems (unknown fields, wrong JSON types) are reported first, as the Go service's
strict decoder did; then the contract's checks run in order. Where ``v1-api.md`` gives a
message it is used verbatim; the other messages are ours and are listed in docs/api.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.utils import timezone

from allocations.models import Allocation, Phase, Strategy
from allocations.observe import managed_volumes
from allocations.requests import ARTIFACTS_SHARED_MESSAGE, KEEP, PoolRequest, PoolUpdate
from contextsvc.infra import openapi
from contextsvc.infra.contract import Body, Field, reject_unknown_fields
from contextsvc.infra.errors import InvalidRequest
from contextsvc.infra.validators import (
    ACCESS_MODES,
    NAME_MESSAGE,
    NAMESPACE_MESSAGE,
)
from contextsvc.kube.objects.names import artifacts_pvc_name
from contextsvc.quantity import MAX_LENGTH as MAX_QUANTITY_LENGTH
from contextsvc.quantity import is_positive_quantity

REPLICAS_MESSAGE = "replicas must be between 1 and 100"
WARM_POOL_WITH_WORKSPACE = "warmPoolRef cannot be combined with workspace settings"
READ_ONLY_REQUIRED = "workspace.readOnly is required with workspace.claimName"
READ_ONLY_WITHOUT_CLAIM = "workspace.readOnly requires workspace.claimName"
CLAIM_WITH_STORAGE = "workspace.claimName cannot be combined with size, accessMode, or storageClass"
SIZE_REQUIRED = "workspace.size is required"

# --- The sandbox-pool request, declared once (the parser below and the document in api.py) ---

MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 30 * 24 * 3600
TTL_MESSAGE = f"ttlSeconds must be between {MIN_TTL_SECONDS} and {MAX_TTL_SECONDS}"
EXPIRES_AT_MESSAGE = (
    "expiresAt must be a time with its zone (RFC 3339, e.g. 2026-12-24T18:00:00Z) at least "
    f"{MIN_TTL_SECONDS} s and at most {MAX_TTL_SECONDS // 86400} days from now"
)
EXPIRY_BOTH_MESSAGE = "give ttlSeconds or expiresAt, not both"

_QUANTITY = {"pattern": openapi.POSITIVE_QUANTITY, "maxLength": MAX_QUANTITY_LENGTH}
_SUBDOMAIN = {"pattern": openapi.DNS_SUBDOMAIN, "maxLength": 253}
# "" is Go's zero value: the same as leaving the storage class out.
_OPTIONAL_SUBDOMAIN = {"pattern": rf"^$|{openapi.DNS_SUBDOMAIN}", "maxLength": 253}

NAME = Field(
    "name",
    required=True,
    schema={"pattern": openapi.POOL_NAME, "maxLength": 50},
    message=NAME_MESSAGE,
)
REPLICAS = Field(
    "replicas",
    int,
    required=True,
    schema={"minimum": 1, "maximum": 100},
    message=REPLICAS_MESSAGE,
    whole_floats=False,  # Go's decoder refused 2.0 for an int
)
WARM_POOL_REF = Field(
    "warmPoolRef",
    required=True,
    schema=_SUBDOMAIN,
    message="warmPoolRef must be a lowercase Kubernetes name",
)
PROFILE = Field(
    "profile",
    schema={"pattern": openapi.DNS_LABEL, "maxLength": 63},
    # No profile can have another name (profiles/v1.py), so none is looked up.
    message="profile must be a lowercase Kubernetes name (a profile's name)",
    help="v1 extension: a sandbox profile",
    column="profile_name",
)
NAMESPACE = Field(
    "namespace",
    schema={"pattern": openapi.DNS_LABEL, "maxLength": 63},
    message=NAMESPACE_MESSAGE,
    help="v1 extension",
)
TTL_SECONDS = Field(
    "ttlSeconds",
    int,
    schema={"minimum": MIN_TTL_SECONDS, "maximum": MAX_TTL_SECONDS},
    message=TTL_MESSAGE,
    help="v1 extension: released this many seconds from now (or expiresAt)",
)
EXPIRES_AT = Field(
    "expiresAt",
    schema={"format": "date-time"},
    message=EXPIRES_AT_MESSAGE,
    help="v1 extension: released at this time (RFC 3339, with a zone), 60 s to 30 days ahead",
)
SIZE = Field(
    "size",
    required=True,
    schema=_QUANTITY,
    message="workspace.size must be a positive Kubernetes quantity",
    test=is_positive_quantity,
    help="A Kubernetes quantity, e.g. 5Gi",
)
ACCESS_MODE = Field(
    "accessMode",
    required=True,
    schema={"enum": list(ACCESS_MODES)},
    # The two words in this order here, and the other way round in the contexts message:
    # both are the Go service's own strings.
    message="workspace.accessMode must be ReadWriteMany or ReadWriteOnce",
    help="ReadWriteOnce (one PVC per sandbox) or ReadWriteMany (one shared)",
)
STORAGE_CLASS = Field(
    "storageClass",
    schema=_OPTIONAL_SUBDOMAIN,
    message="workspace.storageClass must be a DNS-1123 subdomain",
)
CLAIM_NAME = Field(
    "claimName",
    required=True,
    schema=_SUBDOMAIN,
    message="workspace.claimName must be a lowercase Kubernetes name",
    help="The caller's PVC (never deleted)",
)
READ_ONLY = Field("readOnly", bool, required=True)


def _go_zero_value(item: Field) -> Field:
    """A field of another strategy that Go clients always send, as its zero value: their
    structs have no ``omitempty`` on ``size`` and ``accessMode``, so ``contextctl --claim``
    and ``--warm-pool`` send ``"size": ""`` and ``"accessMode": ""``; anything else is
    refused. (``storageClass`` is ``omitempty`` there, but "" is taken as its absence.)"""
    return item.but(
        required=False,
        schema={"maxLength": 0},
        help=f"Only the empty string (Go's zero {item.name})",
    )


WORKSPACE = Body(
    "PoolWorkspace",
    (
        SIZE.but(required=False),
        ACCESS_MODE.but(required=False),
        STORAGE_CLASS,
        CLAIM_NAME.but(required=False),
        READ_ONLY.but(required=False),
    ),
)
MANAGED_WORKSPACE = Body("ManagedWorkspace", (SIZE, ACCESS_MODE, STORAGE_CLASS))
EXISTING_WORKSPACE = Body(
    "ExistingWorkspace",
    (*(_go_zero_value(item) for item in (SIZE, ACCESS_MODE, STORAGE_CLASS)), CLAIM_NAME, READ_ONLY),
)
EMPTY_WORKSPACE = Body(
    "EmptyWorkspace",
    tuple(_go_zero_value(item) for item in (SIZE, ACCESS_MODE, STORAGE_CLASS)),
    "A warm-pool claim has no workspace of its own: absent, ``{}``, or Go's zero values.",
)

ARTIFACTS = Body(
    "ArtifactsRequest",
    (
        SIZE.but(message="artifacts.size must be a positive Kubernetes quantity", help=""),
        ACCESS_MODE.but(
            message="artifacts.accessMode must be ReadWriteMany or ReadWriteOnce",
            help="ReadWriteMany with more than one replica",
        ),
        STORAGE_CLASS.but(message="artifacts.storageClass must be a DNS-1123 subdomain"),
        Field(
            "retain",
            bool,
            help="Kept after release as the named context <name>-artifacts (type artifacts)",
        ),
    ),
)
_ARTIFACTS_HELP = "v1 extension: a PVC mounted at /artifacts in every sandbox"
_WORKSPACE = Field("workspace", dict)
_ARTIFACTS = Field("artifacts", dict, help=_ARTIFACTS_HELP)
_COMMON = (NAME, REPLICAS, TTL_SECONDS, EXPIRES_AT, PROFILE, NAMESPACE)
# One ttlSeconds or one expiresAt (the document says so: "not" both).
EXPIRY_EXCLUSIVE = (("ttlSeconds", "expiresAt", EXPIRY_BOTH_MESSAGE),)

# What the parser reads: every field any strategy has, in the order their types are checked.
POOL = Body(
    "SandboxPoolRequest",
    (
        _WORKSPACE.but(body=WORKSPACE),
        NAME,
        REPLICAS,
        WARM_POOL_REF.but(required=False),
        PROFILE,
        NAMESPACE,
        TTL_SECONDS,
        EXPIRES_AT,
        _ARTIFACTS.but(body=ARTIFACTS),
    ),
)


def _variant(component: str, description: str, *fields: Field) -> Body:
    return Body(component, (*_COMMON, *fields), description, exclusive=EXPIRY_EXCLUSIVE)


def _managed(component: str, description: str, workspace: Body) -> Body:
    """A strategy with a workspace of its own (and so an artifacts volume beside it)."""
    return _variant(
        component,
        description,
        _WORKSPACE.but(required=True, body=workspace),
        _ARTIFACTS.but(body=ARTIFACTS),
    )


# What the document shows: one strategy per request, as the contract has it.
POOL_VARIANTS = (
    _managed(
        "ManagedPoolRequest",
        "Dedicated (ReadWriteOnce: a PVC per sandbox) or shared (ReadWriteMany: one PVC).",
        MANAGED_WORKSPACE,
    ),
    _managed(
        "ExistingPoolRequest", "Sandboxes around the caller's existing PVC.", EXISTING_WORKSPACE
    ),
    _variant(
        "WarmPoolRequest",
        "Claims from an existing SandboxWarmPool (its template decides the runtime).",
        WARM_POOL_REF,
        _WORKSPACE.but(body=EMPTY_WORKSPACE),
    ),
    Body(
        "ProfileWarmPoolRequest",
        (
            *(item for item in _COMMON if item.name != "profile"),
            PROFILE.but(required=True, help=""),
            _WORKSPACE.but(body=EMPTY_WORKSPACE),
        ),
        "v1 addition: claims from the warm pool the named profile owns (no workspace).",
        exclusive=EXPIRY_EXCLUSIVE,
    ),
)

POOL_UPDATE = Body(
    "SandboxPoolUpdate",
    (
        REPLICAS.but(required=False),
        TTL_SECONDS.but(help=""),
        EXPIRES_AT.but(nullable=True, help="null: no expiry any more"),
    ),
    exclusive=EXPIRY_EXCLUSIVE,
    # Both named, even as null (clear it and set it), is a contradiction.
    exclusive_counts_null=True,
    empty_message="give replicas, ttlSeconds or expiresAt",
)


def parse_pool_request(body: dict[str, Any], *, now: datetime | None = None) -> PoolRequest:
    """The body decoded once (unknown fields, then every field's JSON type, as Go's strict
    decoder read it), the contract's checks in its order, then the lifecycle additions'
    (a contract client sends none of them, so it gets the contract's messages in its
    order), as one typed request."""
    values = POOL.decode(body)
    columns = _parse_contract_request(values)
    columns["expires_at"] = _expiry(values, now or timezone.now())
    if body.get("artifacts") is not None:
        columns.update(_artifacts(values["artifacts"], columns["strategy"], columns["replicas"]))
    return PoolRequest(**columns)


def _parse_contract_request(values: dict[str, Any]) -> dict[str, Any]:
    """The request's columns from the contract's fields (decoded), in the contract's order
    of checks."""
    workspace = values["workspace"]
    name = values["name"] or ""
    replicas = values["replicas"] or 0
    warm_pool = values["warmPoolRef"] or ""
    namespace = values["namespace"] or ""
    size = workspace["size"] or ""
    access_mode = workspace["accessMode"] or ""
    storage_class = workspace["storageClass"] or ""
    claim = workspace["claimName"] or ""
    read_only = workspace["readOnly"]
    any_workspace = bool(size or access_mode or storage_class or claim or read_only is not None)

    NAME.check(name)
    REPLICAS.check(replicas)
    # The fields every strategy has and keeps as given, each into the column its
    # declaration names, held to its constraints when it has a message of its own (absent:
    # the request's default): a new one is a Field with a column, and nothing here.
    columns: dict[str, Any] = {
        item.column: (item.check(values[item.name]) if item.message else values[item.name])
        for item in POOL.fields
        if item.column and values[item.name] not in (None, "")  # "": Go's zero value
    } | {"name": name, "replicas": replicas, "namespace": namespace}
    if warm_pool:
        WARM_POOL_REF.check(warm_pool)
        if any_workspace:
            raise InvalidRequest(WARM_POOL_WITH_WORKSPACE)
        NAMESPACE.check(namespace or None)
        return columns | {"strategy": Strategy.WARMPOOL, "warm_pool": warm_pool}
    if columns.get("profile_name") and not any_workspace:
        # v1 addition: a profile and no workspace ask for the profile's own warm pool (the
        # service resolves it; a profile without one is refused there).
        NAMESPACE.check(namespace or None)
        return columns | {"strategy": Strategy.WARMPOOL}
    if claim:
        CLAIM_NAME.check(claim)
        if size or access_mode or storage_class:
            raise InvalidRequest(CLAIM_WITH_STORAGE)
        if read_only is None:
            raise InvalidRequest(READ_ONLY_REQUIRED)
        NAMESPACE.check(namespace or None)
        return columns | {
            "strategy": Strategy.EXISTING,
            "claim_name": claim,
            "read_only": read_only,
        }
    if read_only is not None:
        raise InvalidRequest(READ_ONLY_WITHOUT_CLAIM)
    if not size.strip():
        raise InvalidRequest(SIZE_REQUIRED)
    SIZE.check(size)
    ACCESS_MODE.check(access_mode)
    STORAGE_CLASS.check(storage_class)
    NAMESPACE.check(namespace or None)
    return columns | {
        "strategy": Strategy.SHARED if access_mode == "ReadWriteMany" else Strategy.DEDICATED,
        "workspace_size": size,
        "workspace_access_mode": access_mode,
        "workspace_storage_class": storage_class,
    }


# --- Lifecycle additions ---------------------------------------------------------------------


_EXPIRY = ("ttlSeconds", "expiresAt")


def _expiry(values: dict[str, Any], now: datetime) -> datetime | None:
    ttl, expires = values["ttlSeconds"], values["expiresAt"]
    if ttl is not None and expires is not None:
        raise InvalidRequest(EXPIRY_BOTH_MESSAGE)
    if ttl is not None:
        TTL_SECONDS.check(ttl)
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


def _artifacts(raw: dict[str, Any], strategy: str, replicas: int) -> dict[str, Any]:
    """The artifacts volume's columns, from its decoded fields."""
    if strategy == Strategy.WARMPOOL:
        raise InvalidRequest(
            "artifacts cannot be combined with warmPoolRef (the pool's template decides the "
            "volumes)"
        )
    size = raw["size"] or ""
    access_mode = raw["accessMode"] or ""
    storage_class = raw["storageClass"] or ""
    ARTIFACTS["size"].check(size)
    ARTIFACTS["accessMode"].check(access_mode)
    if access_mode == "ReadWriteOnce" and replicas > 1:
        raise InvalidRequest(ARTIFACTS_SHARED_MESSAGE)
    ARTIFACTS["storageClass"].check(storage_class)
    return {
        "artifacts_size": size,
        "artifacts_access_mode": access_mode,
        "artifacts_storage_class": storage_class,
        "artifacts_retain": bool(raw["retain"]),
    }


def parse_pool_update(body: dict[str, Any], *, now: datetime | None = None) -> PoolUpdate:
    reject_unknown_fields(body, POOL_UPDATE.known)
    if not body:
        raise InvalidRequest(POOL_UPDATE.empty_message)
    replicas = REPLICAS.check(POOL_UPDATE.decode(body, only=("replicas",))["replicas"])
    if "expiresAt" in body and "ttlSeconds" in body:
        # Both named, even as null (clear it and set it): a contradiction, refused like
        # both values (issue 32: {"ttlSeconds": 600, "expiresAt": null} set a 600 s expiry).
        raise InvalidRequest(EXPIRY_BOTH_MESSAGE)
    if "expiresAt" in body and body["expiresAt"] is None:
        return PoolUpdate(replicas=replicas, expires_at=None)  # no expiry any more
    expires_at = _expiry(POOL_UPDATE.decode(body, only=_EXPIRY), now or timezone.now())
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


def _timestamp(at: datetime | None) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at else None


class Step(NamedTuple):
    """A readiness phase: when it was first seen (None until then), and the request's time."""

    phase: str
    at: datetime | None
    since: datetime


def pool_phases(allocation: Allocation) -> list[Step]:
    """The readiness phases that apply to the allocation, in order."""
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
    return [Step(phase, at, allocation.requested_at) for phase, at in steps]


@dataclass(frozen=True)
class Shown:
    """An allocation as a response shows it: what the caller asked to see with it."""

    allocation: Allocation
    default_namespace: str
    phases: bool = False  # ?detail=phases
    warnings: tuple[str, ...] = ()


def _of(attribute: str) -> Callable[[Shown], Any]:
    return lambda shown: getattr(shown.allocation, attribute)


def _waiting_or_failed(allocation: Allocation) -> bool:
    """Whether the answer says why it failed, or why it is not ready yet (what the
    controller, or the last retry, reported)."""
    return allocation.phase == Phase.FAILED or bool(
        allocation.message and allocation.phase in (Phase.REQUESTED, Phase.PROVISIONING)
    )


# The responses, declared once for the body and its document. The contract's fields come
# first, then additions that break nothing: fields a Go client ignores, present only when
# they apply.
SHOWN_WORKSPACE = Body(
    "Workspace",
    (
        Field.out("size", lambda a: a.workspace_size, help="Empty for a warm-pool allocation"),
        Field.out(
            "accessMode",
            lambda a: a.workspace_access_mode,
            help="Empty for a warm-pool allocation",
        ),
        Field.out_when_set("storageClass", lambda a: a.workspace_storage_class),
        Field.out_when_set("claimName", lambda a: a.claim_name),
        Field.out("readOnly", lambda a: a.read_only, bool, shown=lambda a: a.read_only is not None),
    ),
)
SHOWN_ARTIFACTS = Body(
    "Artifacts",
    (
        Field.out("size", lambda a: a.artifacts_size),
        Field.out("accessMode", lambda a: a.artifacts_access_mode),
        Field.out("retain", lambda a: a.artifacts_retain, bool),
        Field.out(
            "claimName",
            lambda a: artifacts_pvc_name(a.name),
            help="The PVC (and, once retained, the context's)",
        ),
        Field.out_when_set("storageClass", lambda a: a.artifacts_storage_class),
    ),
)
SHOWN_PHASE = Body(
    "PoolPhase",
    (
        Field.out(
            "phase",
            lambda step: step.phase,
            schema={
                "enum": [
                    "accepted",
                    "objectsCreated",
                    "volumesBound",
                    "podsScheduled",
                    "claimed",
                    "claimsBound",
                    "ready",
                ]
            },
        ),
        Field.out(
            "at",
            lambda step: _timestamp(step.at),
            schema={"format": "date-time"},
            nullable=True,
            help="When it was first seen",
        ),
        Field.out(
            "seconds",
            lambda step: round((step.at - step.since).total_seconds(), 3) if step.at else None,
            float,
            nullable=True,
            help="Since the request",
        ),
    ),
)
SHOWN_CLAIMS = Body(
    "ClaimOrigins",
    (
        Field.out("warm", lambda a: a.warm_claims, int, help="Claims that took a warm Sandbox"),
        Field.out(
            "cold", lambda a: a.cold_claims, int, help="Claims whose Sandbox was started for them"
        ),
    ),
)
POOL_SHOWN = Body(
    "SandboxPool",
    (
        Field.out("name", _of("name")),
        Field.out(
            "status",
            lambda shown: pool_status(shown.allocation),
            schema={"enum": ["provisioning", "ready", "suspended", "failed"]},
        ),
        Field.out("replicas", _of("replicas"), int),
        Field.out("readyReplicas", _of("ready_replicas"), int),
        Field.out("sandboxSelector", _of("selector")),
        Field.out("workspace", lambda s: s.allocation, dict, body=SHOWN_WORKSPACE),
        Field.out_when_set("warmPoolRef", _of("warm_pool")),
        Field.out(
            "message",
            _of("message"),
            shown=lambda s: _waiting_or_failed(s.allocation),
            help="Why it failed, or why it is not ready yet",
        ),
        # The request's fields that are kept as they were given, under their columns.
        *(item.echo(lambda s: s.allocation) for item in POOL.fields if item.column),
        Field.out(
            "namespace",
            _of("namespace"),
            shown=lambda s: s.allocation.namespace != s.default_namespace,
            help="When not the default",
        ),
        Field.out(
            "expiresAt",
            lambda s: _timestamp(s.allocation.expires_at),
            shown=lambda s: s.allocation.expires_at is not None,
            schema={"format": "date-time"},
            help="When it is released",
        ),
        Field.out(
            "artifacts",
            lambda s: s.allocation,
            dict,
            body=SHOWN_ARTIFACTS,
            shown=lambda s: s.allocation.has_artifacts,
        ),
        Field.out(
            "phases",
            lambda s: pool_phases(s.allocation),
            list,
            body=SHOWN_PHASE,
            shown=lambda s: s.phases,
            help="Only with ?detail=phases",
        ),
        Field.out(
            "claims",
            lambda s: s.allocation,
            dict,
            body=SHOWN_CLAIMS,
            shown=lambda s: bool(
                s.phases
                and s.allocation.strategy == Strategy.WARMPOOL
                and s.allocation.claims_bound_at
            ),
            help="Warm-pool allocations with ?detail=phases, once bound",
        ),
        Field.out(
            "warnings",
            lambda s: list(s.warnings),
            list,
            shown=lambda s: bool(s.warnings),
            schema={"items": {"type": "string"}},
        ),
    ),
)
POOL_LIST = Body(
    "SandboxPoolList", (Field.out("items", lambda shown: shown, list, body=POOL_SHOWN),)
)


def pool_response(
    allocation: Allocation,
    *,
    default_namespace: str,
    phases: bool = False,
    warnings: tuple[str, ...] = (),
) -> dict[str, Any]:
    return POOL_SHOWN.render(Shown(allocation, default_namespace, phases, warnings))

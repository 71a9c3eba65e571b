"""Warm pools the service makes and owns for profiles (``warmPool: {min, max}``).

Level-based, so every run is safe to repeat and a lost one is made good by the next: the
cluster is made to hold exactly, for each profile that wants one, a SandboxTemplate (the
profile's hardened blueprint) and a SandboxWarmPool in the profile's namespace, and none of
ours anywhere else. The pool's size follows demand (claims in a recent window, which the
allocations app counts and passes in) between min and max: up at once, down only once the
last change is older than the cool-down, so a burst that comes and goes does not make the
controller start and stop Sandboxes every few seconds. Every change is audited as
``system:warm-pools``, right after the cluster took it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from contextsvc.core.services import audit_record
from contextsvc.infra import namespaces
from contextsvc.infra.errors import InvalidRequest
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import (
    annotations_of,
    labels_of,
    name_of,
    namespace_of,
    object_key,
)
from contextsvc.kube.objects.kinds import (
    SANDBOX_TEMPLATE,
    SANDBOX_WARM_POOL,
    SANDBOX_WARM_POOL_SCALE,
    ApiKind,
)
from contextsvc.kube.objects.labels import (
    MANAGED_SELECTOR,
    PROFILE_LABEL,
    profile_warm_pool_selector,
)
from contextsvc.kube.objects.names import profile_warm_pool_name
from contextsvc.kube.objects.warmpool import (
    WARM_POOL_RELAXATIONS_ANNOTATION,
    profile_template_manifest,
    profile_warm_pool_manifest,
    scaled_at_patch,
    spec_hash,
    spec_hash_of,
    warm_pool_replicas,
    warm_pool_scaled_at,
)
from profiles import services
from profiles.models import SandboxProfile

logger = logging.getLogger(__name__)
ACTOR = "system:warm-pools"
KINDS = (SANDBOX_WARM_POOL, SANDBOX_TEMPLATE)
# Demand per pool: (namespace, pool name) → claims asked for in the window.
Demand = Mapping[tuple[str, str], int]


def _audit(action: str, namespace: str, name: str, **payload: Any) -> None:
    with transaction.atomic():
        audit_record(
            actor=ACTOR,
            action=action,
            target_type="warm_pool",
            target=f"{namespace}/{name}",
            payload=payload,
        )


def scale_target(
    *,
    current: int,
    demand: int,
    low: int,
    high: int,
    scaled_at: datetime | None,
    now: datetime,
    cooldown: timedelta,
) -> int:
    """The size a pool should have: the demand within [low, high]; a smaller size only once
    the last change is older than ``cooldown`` (hysteresis), a larger one at once."""
    wanted = min(max(demand, low), high)
    if wanted < current and scaled_at is not None and now - scaled_at < cooldown:
        # Out of bounds is corrected at once all the same (the profile's max was lowered).
        return min(current, high)
    return wanted


@dataclass
class Report:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    scaled: int = 0


def _ours(profile: str | None = None) -> list[tuple[ApiKind, dict[str, Any]]]:
    """Every template and pool the service made for profiles (or for ``profile``), in every
    managed namespace, each with the kind it was listed as."""
    selector = (
        profile_warm_pool_selector(profile) if profile else f"{MANAGED_SELECTOR},{PROFILE_LABEL}"
    )
    return [
        (kind, obj)
        for kind in KINDS
        for scope in namespaces.scopes()
        for obj in kube.list_objects(kind, scope, selector)
    ]


def warm_pools_sync(
    *, profile_name: str | None = None, demand: Demand | None = None, now: datetime | None = None
) -> Report:
    """Make the cluster hold what the profiles want (one profile, or all), and with
    ``demand`` size each pool from it."""
    report = Report()
    profiles = SandboxProfile.objects.filter(warm_pool_max__isnull=False, enabled=True)
    if profile_name is not None:
        profiles = profiles.filter(name=profile_name)
    wanted = {profile.name: profile for profile in profiles}
    ours = _ours(profile_name)
    # What the list found is what the rest of the run reads: no second GET per object.
    found = {(kind.kind, *object_key(obj)): obj for kind, obj in ours}
    for kind, obj in ours:
        owner = labels_of(obj).get(PROFILE_LABEL, "")
        profile = wanted.get(owner)
        if profile is not None and namespace_of(obj) == profile.warm_pool_namespace:
            continue
        # Disabled, deleted, its warm pool removed, or moved to another namespace. Deleting
        # the pool removes only its unclaimed Sandboxes: claimed ones belong to allocations.
        if kube.delete_object(kind, namespace_of(obj), name_of(obj)):
            _audit(
                f"warmpool.delete_{kind.kind.lower()}",
                namespace_of(obj),
                name_of(obj),
                profile=owner,
            )
            report.deleted += 1
    for profile in wanted.values():
        try:
            pool = _ensure(profile, found, report)
        except (InvalidRequest, kube.KubeError) as exc:
            # One profile the cluster refuses (its template vanished, say) must not stop
            # the others; the next run tries it again.
            logger.warning("warm pool of profile %s: %s", profile.name, exc)
            continue
        if demand is not None and pool is not None:
            _scale(profile, pool, demand, now or timezone.now(), report)
    return report


def _bounds(profile: SandboxProfile) -> tuple[int, int]:
    return profile.warm_pool_min or 0, profile.warm_pool_max or 0


def _ensure(
    profile: SandboxProfile, found: Mapping[tuple[str, str, str], dict[str, Any]], report: Report
) -> dict[str, Any] | None:
    """The profile's template and pool made or brought in step (``found``: ours, as listed
    at the start of the run). Returns the pool as it now is (None: another run made it)."""
    namespace, name = profile.warm_pool_namespace, profile_warm_pool_name(profile.name)
    blueprint = services.profile_blueprint(
        profile, service_account=settings.CS_SANDBOX_SERVICE_ACCOUNT
    )
    template = profile_template_manifest(profile.name, namespace, blueprint)
    existing_template = found.get((SANDBOX_TEMPLATE.kind, namespace, name))
    if existing_template is None:
        if kube.create_if_absent(SANDBOX_TEMPLATE, template):
            _audit("warmpool.create_template", namespace, name, profile=profile.name)
            report.created += 1
    elif spec_hash_of(existing_template) != spec_hash(template["spec"]):
        # The profile changed: the pool's Recreate strategy replaces its unclaimed Sandboxes.
        kube.replace_spec(
            SANDBOX_TEMPLATE,
            namespace,
            name,
            template["spec"],
            annotations=template["metadata"]["annotations"],
        )
        _audit("warmpool.update_template", namespace, name, profile=profile.name)
        report.updated += 1
    low, high = _bounds(profile)
    pool = profile_warm_pool_manifest(profile.name, namespace, low, blueprint.relaxations)
    existing = found.get((SANDBOX_WARM_POOL.kind, namespace, name))
    if existing is None:
        if not kube.create_if_absent(SANDBOX_WARM_POOL, pool):
            return None  # made meanwhile by another run
        _audit(
            "warmpool.create",
            namespace,
            name,
            profile=profile.name,
            replicas=low,
            bounds=[low, high],
        )
        report.created += 1
        return pool
    annotations = dict(annotations_of(existing))
    wanted_annotations = pool["metadata"]["annotations"]
    relaxations = WARM_POOL_RELAXATIONS_ANNOTATION
    if annotations.get(relaxations) != wanted_annotations.get(relaxations):
        kube.patch_object(
            SANDBOX_WARM_POOL,
            namespace,
            name,
            {"metadata": {"annotations": {relaxations: wanted_annotations.get(relaxations)}}},
        )
        _audit("warmpool.update", namespace, name, profile=profile.name)
        report.updated += 1
    return existing


def _scale(
    profile: SandboxProfile, pool: Mapping[str, Any], demand: Demand, now: datetime, report: Report
) -> None:
    namespace, name = profile.warm_pool_namespace, profile_warm_pool_name(profile.name)
    low, high = _bounds(profile)
    current = warm_pool_replicas(pool)
    asked = demand.get((namespace, name), 0)
    target = scale_target(
        current=current,
        demand=asked,
        low=low,
        high=high,
        scaled_at=warm_pool_scaled_at(pool),
        now=now,
        cooldown=timedelta(seconds=settings.CS_WARM_POOL_COOLDOWN_SECONDS),
    )
    if target == current:
        return
    kube.scale(SANDBOX_WARM_POOL_SCALE, namespace, name, target)
    kube.patch_object(SANDBOX_WARM_POOL, namespace, name, scaled_at_patch(now))
    _audit(
        "warmpool.scale",
        namespace,
        name,
        profile=profile.name,
        replicas=[current, target],
        demand=asked,
        window_seconds=settings.CS_WARM_POOL_WINDOW_SECONDS,
    )
    report.scaled += 1

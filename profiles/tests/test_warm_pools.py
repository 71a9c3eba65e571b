"""Warm pools the service owns for a profile (issue 21), against the real worker, watcher,
agent-sandbox controller and cluster: made after the profile is saved, sized from a scripted
demand with hysteresis, kept in step with the profile, and removed with exactly what the
service made."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from allocations.models import Allocation, Phase
from allocations.services.create import warm_pools_scale
from contextsvc.core.models import AuditEntry
from contextsvc.kube import client as kube
from contextsvc.kube.objects.fields import is_deleting, labels_of
from contextsvc.kube.objects.kinds import SANDBOX, SANDBOX_TEMPLATE, SANDBOX_WARM_POOL
from contextsvc.kube.objects.warmpool import warm_pool_ready, warm_pool_replicas
from profiles.models import SandboxProfile
from profiles.warmpools import scale_target
from tests.support.api import ApiClient
from tests.support.kube import pool_objects, wait_for_phase
from tests.support.processes import wait_until
from tests.support.unchanged import everything

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
POOL = "profile-coder"


def pool(namespace: str) -> dict[str, Any] | None:
    return kube.get_object(SANDBOX_WARM_POOL, namespace, POOL)


def template(namespace: str) -> dict[str, Any] | None:
    return kube.get_object(SANDBOX_TEMPLATE, namespace, POOL)


def wait_pool(namespace: str, replicas: int) -> None:
    def filled() -> bool:
        found = pool(namespace) or {}
        return warm_pool_replicas(found) == replicas and warm_pool_ready(found) == replicas

    wait_until(filled, timeout=90, interval=0.2, message=f"{POOL} to hold {replicas} ready")


def unclaimed_images(namespace: str) -> list[str]:
    """The image of each Sandbox the pool holds in reserve (owned by the pool: a claimed
    one belongs to its claim)."""
    return sorted(
        sandbox["spec"]["podTemplate"]["spec"]["containers"][0]["image"]
        for sandbox in kube.list_objects(SANDBOX, namespace)
        if not is_deleting(sandbox)
        and [owner["kind"] for owner in sandbox["metadata"].get("ownerReferences", [])]
        == ["SandboxWarmPool"]
    )


def scaling(namespace: str) -> list[tuple[str, Any]]:
    return [
        (entry.action, entry.payload.get("replicas"))
        for entry in AuditEntry.objects.filter(
            actor="system:warm-pools", target=f"{namespace}/{POOL}"
        ).order_by("id")
    ]


def test_scale_target_follows_demand_up_at_once_and_down_after_the_cool_down() -> None:
    now = timezone.now()
    cooldown = timedelta(seconds=300)
    recent, old = now - timedelta(seconds=10), now - timedelta(seconds=301)

    def target(current: int, demand: int, scaled_at: Any) -> int:
        return scale_target(
            current=current,
            demand=demand,
            low=1,
            high=5,
            scaled_at=scaled_at,
            now=now,
            cooldown=cooldown,
        )

    assert target(1, 3, recent) == 3  # up at once, even right after a change
    assert target(3, 9, recent) == 5  # never past max
    assert target(3, 0, recent) == 3  # down waits for the cool-down
    assert target(3, 0, old) == 1  # then goes, to no less than min
    assert target(3, 2, None) == 2  # a pool never scaled by us follows demand
    assert target(7, 0, recent) == 5  # a lowered max is obeyed at once


@override_settings(CS_WARM_POOL_WINDOW_SECONDS=60, CS_WARM_POOL_COOLDOWN_SECONDS=300)
def test_a_profile_warm_pool_follows_demand_the_profile_and_goes_with_it(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    created = admin.post(
        "/v1/profiles",
        {
            "name": "coder",
            "image": "busybox:1.36",
            "warmPool": {"min": 1, "max": 3, "namespace": namespace},
        },
    )
    assert created.status_code == 201, created.content
    assert created.json()["warmPool"] == {
        "min": 1,
        "max": 3,
        "namespace": namespace,
        "name": POOL,
    }
    # The worker makes the template and the pool once the profile is committed.
    wait_pool(namespace, 1)
    made = template(namespace)
    assert made is not None
    labels = labels_of(made)
    # (The controller adds a label of its own, the template's hash.)
    assert (labels["app.kubernetes.io/managed-by"], labels["context.rossoctl.io/profile"]) == (
        "context-service",
        "coder",
    )
    pod_spec = made["spec"]["podTemplate"]["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert made["spec"]["networkPolicyManagement"] == "Unmanaged"
    assert (pool(namespace) or {})["spec"]["updateStrategy"] == {"type": "Recreate"}

    # Scripted demand: three allocations name the profile and no workspace.
    for i in range(3):
        response = caller.post(
            "/v1/sandbox-pools",
            {"name": f"job-{i}", "replicas": 1, "namespace": namespace, "profile": "coder"},
        )
        assert response.status_code == 201, response.content
        assert (response.json()["warmPoolRef"], response.json()["profile"]) == (POOL, "coder")
        wait_for_phase(f"job-{i}", Phase.READY, timeout=90)
    assert Allocation.objects.get(name="job-0").profile == SandboxProfile.objects.get(name="coder")

    now = timezone.now()
    assert warm_pools_scale(now=now).scaled == 1
    wait_pool(namespace, 3)
    # The demand leaves the window; within the cool-down the pool keeps its size...
    quiet = now + timedelta(seconds=61)
    assert warm_pools_scale(now=quiet).scaled == 0
    assert warm_pool_replicas(pool(namespace) or {}) == 3
    # ...and after it shrinks to min.
    assert warm_pools_scale(now=now + timedelta(seconds=301)).scaled == 1
    wait_pool(namespace, 1)
    assert scaling(namespace) == [
        ("warmpool.create_template", None),
        ("warmpool.create", 1),
        ("warmpool.scale", [1, 3]),
        ("warmpool.scale", [3, 1]),
    ]

    # The profile changes: its template follows, and the controller replaces the Sandbox
    # held in reserve (Recreate) so that warm capacity is never a stale blueprint.
    changed = admin.client.put(
        "/v1/profiles/coder",
        data={"name": "coder", "image": "busybox:1.37"},
        content_type="application/json",
        headers=admin.headers,
    )
    assert changed.status_code == 200, changed.content
    wait_until(
        lambda: (
            (template(namespace) or {})["spec"]["podTemplate"]["spec"]["containers"][0]["image"]
            == "busybox:1.37"
        ),
        timeout=60,
        message="the template to follow the profile",
    )
    wait_until(
        lambda: unclaimed_images(namespace) == ["busybox:1.37"],
        timeout=90,
        message="the reserve Sandbox to be replaced",
    )

    # Removing the warm pool deletes exactly what the service made; the allocations keep
    # the Sandboxes they claimed.
    removed = admin.client.put(
        "/v1/profiles/coder",
        data={"name": "coder", "warmPool": None},
        content_type="application/json",
        headers=admin.headers,
    )
    assert removed.status_code == 200, removed.content
    assert removed.json()["warmPool"] is None
    wait_until(
        lambda: pool(namespace) is None and template(namespace) is None,
        timeout=60,
        message="the pool and its template to be deleted",
    )
    # Each deletion's audit entry is committed just after its object is gone.
    wait_until(
        lambda: (
            sorted(action for action, _ in scaling(namespace)[-2:])
            == ["warmpool.delete_sandboxtemplate", "warmpool.delete_sandboxwarmpool"]
        ),
        timeout=30,
        message="both deletions in the audit log",
    )
    for i in range(3):
        assert pool_objects(namespace, f"job-{i}")["claims"] == [f"claim-job-{i}-0"]
        assert Allocation.objects.get(name=f"job-{i}").phase == Phase.READY


def test_warm_pool_refusals_change_nothing(
    admin: ApiClient, caller: ApiClient, namespace: str
) -> None:
    before = everything(namespace)

    inverted = admin.post(
        "/v1/profiles",
        {"name": "coder", "image": "busybox:1.36", "warmPool": {"min": 3, "max": 1}},
    )
    malformed = admin.post(
        "/v1/profiles", {"name": "coder", "image": "busybox:1.36", "warmPool": {"min": 1}}
    )
    assert (inverted.status_code, inverted.json()["message"]) == (
        400,
        "warmPool: min and max must satisfy 0 <= min <= max, 1 <= max <= 100",
    )
    assert (malformed.status_code, malformed.json()["message"]) == (
        400,
        "warmPool must be null or an object with min and max (integers) and optionally namespace",
    )
    assert everything(namespace) == before

    # A profile without a warm pool, asked for with no workspace: the caller's error.
    assert admin.post("/v1/profiles", {"name": "plain", "image": "busybox:1.36"}).status_code == 201
    before = everything(namespace)
    refused = caller.post(
        "/v1/sandbox-pools",
        {"name": "job", "replicas": 1, "namespace": namespace, "profile": "plain"},
    )
    assert (refused.status_code, refused.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": f'profile "plain" has no warm pool in namespace "{namespace}": give a '
            "workspace, or a warmPoolRef",
        },
    )
    assert everything(namespace) == before

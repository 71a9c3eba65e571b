"""Readiness phases (issue 21), end to end against the real worker, watcher, controller and
cluster: each phase's time in the API (only when asked for), in the timeline and in
/metrics, and whether a warm-pool claim took a warm Sandbox or cold-started one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from allocations.models import Allocation, AllocationEvent, Phase
from contextsvc.kube import client as kube
from contextsvc.kube.objects.kinds import SANDBOX_WARM_POOL
from tests.support.api import ApiClient, issue_token
from tests.support.kube import admin_patch, make_warm_pool, wait_for_phase
from tests.support.processes import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))


def created(api: ApiClient, body: dict[str, Any]) -> None:
    response = api.post("/v1/sandbox-pools", body)
    assert response.status_code == 201, response.content
    assert "phases" not in response.json()


def phases_of(api: ApiClient, name: str) -> dict[str, Any]:
    response = api.get(f"/v1/sandbox-pools/{name}", detail="phases")
    assert response.status_code == 200, response.content
    return dict(response.json())


def moments(body: dict[str, Any]) -> list[datetime]:
    return [datetime.fromisoformat(step["at"]) for step in body["phases"]]


def test_a_dedicated_allocation_shows_each_phase_in_order(api: ApiClient, namespace: str) -> None:
    created(
        api,
        {
            "name": "timed",
            "replicas": 2,
            "namespace": namespace,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
        },
    )
    row = wait_for_phase("timed", Phase.READY, timeout=90)

    body = phases_of(api, "timed")
    plain = api.get("/v1/sandbox-pools/timed").json()

    assert [step["phase"] for step in body["phases"]] == [
        "accepted",
        "objectsCreated",
        "volumesBound",
        "podsScheduled",
        "ready",
    ]
    # Each phase is when it was first seen; which of the middle ones comes first depends on
    # the cluster (a PVC that waits for its first consumer binds after the Pod is scheduled).
    assert moments(body)[0] == min(moments(body))
    assert moments(body)[-1] == max(moments(body))
    assert body["phases"][0]["seconds"] == 0
    assert row.ready_at is not None
    assert body["phases"][-1]["seconds"] == round(
        (row.ready_at - row.requested_at).total_seconds(), 3
    )
    assert "claims" not in body
    # Without ?detail=phases the answer is the contract's, exactly.
    assert "phases" not in plain
    assert {key: value for key, value in body.items() if key != "phases"} == plain
    timeline = list(
        AllocationEvent.objects.filter(allocation=row)
        .exclude(kind=AllocationEvent.Kind.REPLICAS)
        .values_list("kind", flat=True)
    )
    assert (timeline[0], timeline[-1]) == ("created", "ready")
    assert sorted(timeline[1:-1]) == ["applied", "pods_scheduled", "volumes_bound"]


def test_a_claim_is_warm_when_the_pool_has_a_sandbox_and_cold_when_it_is_empty(
    api: ApiClient, namespace: str
) -> None:
    make_warm_pool(namespace, "agents", replicas=1)
    created(api, {"name": "first", "replicas": 1, "namespace": namespace, "warmPoolRef": "agents"})
    wait_for_phase("first", Phase.READY, timeout=90)
    # The pool keeps no Sandbox in reserve now: the next claim must start its own.
    admin_patch(SANDBOX_WARM_POOL, namespace, "agents", {"spec": {"replicas": 0}})
    wait_until(
        lambda: (
            (kube.get_object(SANDBOX_WARM_POOL, namespace, "agents") or {})
            .get("status", {})
            .get("replicas", 0)
            == 0
        ),
        timeout=60,
        message="the warm pool to be empty",
    )
    created(api, {"name": "second", "replicas": 1, "namespace": namespace, "warmPoolRef": "agents"})
    wait_for_phase("second", Phase.READY, timeout=90)

    first, second = phases_of(api, "first"), phases_of(api, "second")

    assert [step["phase"] for step in first["phases"]] == [
        "accepted",
        "claimed",
        "claimsBound",
        "ready",
    ]
    assert moments(first)[-1] == max(moments(first))
    assert (first["claims"], second["claims"]) == ({"warm": 1, "cold": 0}, {"warm": 0, "cold": 1})
    bound = AllocationEvent.objects.get(
        allocation=Allocation.objects.get(name="second"), kind=AllocationEvent.Kind.CLAIMS_BOUND
    )
    assert (bound.data["warm"], bound.data["cold"]) == (0, 1)

    reader = issue_token("prometheus", ["read"])
    scraped = Client().get("/metrics", headers={"Authorization": f"Bearer {reader}"})
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.content.decode())
        for sample in family.samples
    }
    pool = (("namespace", namespace), ("pool", "agents"))

    def claims(origin: str) -> float:
        labels = (("namespace", namespace), ("origin", origin), ("pool", "agents"))
        return samples[("contextsvc_warm_pool_claims_total", labels)]

    assert (claims("warm"), claims("cold")) == (1, 1)
    assert samples[("contextsvc_warm_pool_hit_ratio", pool)] == 0.5
    assert samples[("contextsvc_allocation_phase_seconds_count", (("phase", "claims_bound"),))] == 2
    assert samples[("contextsvc_allocation_phase_seconds_count", (("phase", "ready"),))] == 2


def test_an_unknown_detail_is_refused(api: ApiClient, namespace: str) -> None:
    refused = api.get("/v1/sandbox-pools", detail="everything")
    waiting = api.get("/v1/sandbox-pools/absent", detail="everything")

    assert (refused.status_code, refused.json()) == (
        400,
        {"error": "invalid_request", "message": 'detail must be "phases"'},
    )
    assert waiting.status_code == 400

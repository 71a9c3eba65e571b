"""Usage end to end, against the real web process's API, worker, watcher and cluster: a
pool made, suspended, resumed and released; the meter's hours, the CSV and the Usage page
add up to what the allocation's own timestamps say."""

from __future__ import annotations

import csv
import io

import pytest
from django.utils import timezone

from allocations.models import Allocation, AllocationEvent, Phase
from contextsvc.core import services
from frontend.tests.support import client_for
from tests.support.api import ApiClient, issue_token
from tests.support.kube import wait_for_phase
from usage.models import UsageHour
from usage.services import usage_meter

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def test_the_usage_sums_are_the_lifecycles_own_timestamps(namespace: str) -> None:
    research = services.team_create(name="research", actor="system:test")
    api = ApiClient(issue_token("research-harness", ["allocations"], team=research))
    body = {
        "name": "metered",
        "replicas": 2,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    assert api.post("/v1/sandbox-pools", body).status_code == 201
    wait_for_phase("metered", Phase.READY, timeout=90)
    assert api.post("/v1/sandbox-pools/metered/suspend").status_code == 200
    wait_for_phase("metered", Phase.SUSPENDED)
    assert api.post("/v1/sandbox-pools/metered/resume").status_code == 200
    wait_for_phase("metered", Phase.READY, timeout=90)
    assert api.delete("/v1/sandbox-pools/metered").status_code == 204
    released = wait_for_phase("metered", Phase.RELEASED, timeout=90)

    usage_meter(now=timezone.now())

    pool = Allocation.objects.get(pk=released.pk)
    assert pool.provisioned_at is not None
    assert pool.released_at is not None
    suspended = pool.events.get(kind=AllocationEvent.Kind.SUSPENDED).at
    resumed = pool.events.get(kind=AllocationEvent.Kind.RESUMED).at
    lived = (pool.released_at - pool.provisioned_at).total_seconds()
    asleep = (resumed - suspended).total_seconds()
    hours = list(UsageHour.objects.filter(team=research).order_by("hour"))
    assert {row.profile for row in hours} == {""}
    assert sum(row.sandbox_seconds for row in hours) == pytest.approx(
        2 * (lived - asleep), rel=1e-9
    )
    assert sum(row.suspended_seconds for row in hours) == pytest.approx(2 * asleep, rel=1e-9)
    # Two 1Gi workspaces, for as long as the objects lived (suspended or not).
    assert sum(row.storage_gib_hours for row in hours) == pytest.approx(2 * lived / 3600, rel=1e-9)

    # The CSV says the same, hour by hour; the page shows the sum.
    admin = client_for("admin")
    exported = admin.get("/usage.csv?days=1")
    assert exported["Content-Type"] == "text/csv; charset=utf-8"
    lines = list(csv.DictReader(io.StringIO(exported.content.decode())))
    mine = [line for line in lines if line["team"] == "research"]
    assert [float(line["sandbox_seconds"]) for line in mine] == [h.sandbox_seconds for h in hours]
    assert [float(line["storage_gib_hours"]) for line in mine] == [
        h.storage_gib_hours for h in hours
    ]
    page = admin.get("/usage/?days=1").content.decode()
    sandbox_hours = sum(row.sandbox_seconds for row in hours) / 3600
    assert f"<td>research</td><td>(built-in runtime)</td><td>{sandbox_hours:.2f}</td>" in page

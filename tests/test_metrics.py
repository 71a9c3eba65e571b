"""/metrics against the real database: every series parses and carries what was recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from allocations.models import Allocation
from allocations.tests.factories import AllocationFactory
from tests.support.api import issue_token
from tests.support.workspaces import agent_client, ensure, platform_client, ready

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
GiB = 2**30


def test_metrics_parse_and_carry_every_series(namespace: str) -> None:
    rossoctl, agent = platform_client(), agent_client()
    ensure(rossoctl, namespace)
    ready(namespace)
    agent.post(
        f"/v1/agent-workspaces/{namespace}/weather-service/contexts",
        {"contextId": "ctx-1", "diskUsageBytes": 1234},
    )
    agent.post(f"/v1/agent-workspaces/{namespace}/weather-service/usage", {"usedBytes": 4321})
    reader = issue_token("prometheus", ["read"])
    now = timezone.now()
    # Became ready three days ago in 4 s, and just now in 40 s: both count, for ever.
    for name, ago, took in (("old", timedelta(days=3), 4), ("new", timedelta(0), 40)):
        row = AllocationFactory.create(name=name, namespace=namespace)
        Allocation.objects.filter(pk=row.pk).update(
            phase="released",
            requested_at=now - ago - timedelta(seconds=took),
            ready_at=now - ago,
        )

    refused = Client().get("/metrics")
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {reader}"})

    assert refused.status_code == 401
    assert response.status_code == 200
    families = {
        family.name: family for family in text_string_to_metric_families(response.content.decode())
    }
    assert set(families) >= {
        "rossoctl_context_workspace_bytes",
        "rossoctl_workspace_pvc_usage_bytes",
        "rossoctl_workspace_pvc_capacity_bytes",
        "rossoctl_context_last_accessed_timestamp",
        "contextsvc_allocations",
        "contextsvc_allocation_time_to_ready_seconds",
        "contextsvc_approvals_pending",
        "contextsvc_approval_decision_latency_seconds",
        "contextsvc_reconcile_errors",
    }
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in families.values()
        for s in family.samples
    }
    labels = (("agent", "weather-service"), ("context_id", "ctx-1"), ("namespace", namespace))
    assert samples[("rossoctl_context_workspace_bytes", labels)] == 1234
    workspace_labels = (("agent", "weather-service"), ("namespace", namespace))
    assert samples[("rossoctl_workspace_pvc_usage_bytes", workspace_labels)] == 4321
    assert samples[("rossoctl_workspace_pvc_capacity_bytes", workspace_labels)] == 5 * GiB
    ready_seconds = "contextsvc_allocation_time_to_ready_seconds"
    assert [
        samples[(f"{ready_seconds}_bucket", (("le", le),))] for le in ("2.0", "5.0", "60.0", "+Inf")
    ] == [0, 1, 2, 2]
    assert samples[(f"{ready_seconds}_sum", ())] == 44

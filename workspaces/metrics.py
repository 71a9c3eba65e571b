"""The workspaces' series of ``/metrics``: every context's disk use and last use, every
agent workspace PVC's use and size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily

from contextsvc.core.teams import EVERY_TEAM
from workspaces import selectors


class WorkspaceCollector:
    def collect(self) -> Iterator[Any]:
        context_bytes = GaugeMetricFamily(
            "rossoctl_context_workspace_bytes",
            "Disk used by one context's directory.",
            labels=["context_id", "agent", "namespace"],
        )
        last_accessed = GaugeMetricFamily(
            "rossoctl_context_last_accessed_timestamp",
            "When a context was last used (TTL tracking).",
            labels=["context_id", "agent", "namespace"],
        )
        for context in selectors.contexts_active():
            labels = [context.context_id, context.workspace.agent_type, context.workspace.namespace]
            context_bytes.add_metric(labels, context.disk_usage_bytes)
            last_accessed.add_metric(labels, context.last_accessed_at.timestamp())
        yield context_bytes
        yield last_accessed

        usage = GaugeMetricFamily(
            "rossoctl_workspace_pvc_usage_bytes",
            "Used space of an agent workspace PVC.",
            labels=["agent", "namespace"],
        )
        capacity = GaugeMetricFamily(
            "rossoctl_workspace_pvc_capacity_bytes",
            "Size of an agent workspace PVC.",
            labels=["agent", "namespace"],
        )
        for workspace in selectors.workspace_list_live(reach=EVERY_TEAM):
            labels = [workspace.agent_type, workspace.namespace]
            usage.add_metric(labels, workspace.usage_bytes or 0)
            capacity.add_metric(labels, workspace.capacity_bytes or workspace.requested_bytes)
        yield usage
        yield capacity

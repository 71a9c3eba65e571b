"""Helpers for tests of agent workspaces: ensure one through the API, wait until its PVC
binds, and finish a cleanup Job as the Job controller would."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from contextsvc.kube.objects.kinds import JOB
from tests.support.api import ApiClient, issue_token
from tests.support.kube import admin_patch_status
from tests.support.processes import wait_until
from workspaces.models import AgentWorkspace


def ensure(client: ApiClient, namespace: str, **extra: Any) -> Any:
    return client.post(
        "/v1/agent-workspaces",
        {
            "agentType": "weather-service",
            "namespace": namespace,
            "initialSize": "5Gi",
            "maxSize": "20Gi",
            **extra,
        },
    )


def ready(namespace: str) -> AgentWorkspace:
    """The namespace's workspace once the watcher saw its PVC bound."""

    def bound() -> AgentWorkspace | None:
        found = AgentWorkspace.objects.filter(namespace=namespace).first()
        return found if found and found.status == AgentWorkspace.Status.READY else None

    found = wait_until(bound, timeout=60, interval=0.3, message="the workspace PVC to bind")
    assert isinstance(found, AgentWorkspace)
    return found


def complete_job(namespace: str, name: str) -> None:
    """What the Job controller and a kubelet would write when the Pod succeeded."""
    now = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    admin_patch_status(
        JOB,
        namespace,
        name,
        {
            "startTime": now,
            "completionTime": now,
            "succeeded": 1,
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "lastTransitionTime": now,
                    "lastProbeTime": now,
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                },
                {
                    "type": "Complete",
                    "status": "True",
                    "lastTransitionTime": now,
                    "lastProbeTime": now,
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                },
            ],
        },
    )


def platform_client() -> ApiClient:
    """A platform caller that may create workspaces (the allocations scope)."""
    return ApiClient(issue_token("rossoctl", ["allocations"]))


def agent_client() -> ApiClient:
    """An agent of the type the helpers use."""
    return ApiClient(issue_token("weather-agent", ["agent"]))

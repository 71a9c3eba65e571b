"""Agent workspaces and named contexts belong to a team: for another team's callers they
are absent (404) for every verb, and taking the name is the 409 of a name taken, word for
word what the owner gets, never saying whose."""

from __future__ import annotations

import pytest

from contexts.models import ContextResource
from contextsvc.core import services
from contextsvc.core.models import Team
from tests.support.api import ApiClient, issue_token
from tests.support.processes import wait_until
from tests.support.unchanged import kept
from tests.support.workspaces import ensure, ready
from workspaces.models import AgentWorkspace

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def team(name: str) -> Team:
    return services.team_create(name=name, actor="system:test")


def test_another_teams_workspace_is_absent_for_every_verb(namespace: str) -> None:
    research, billing = team("research"), team("billing")
    owner = ApiClient(issue_token("research-platform", ["allocations"], team=research))
    other = ApiClient(issue_token("billing-platform", ["allocations"], team=billing))
    other_agent = ApiClient(issue_token("billing-agent", ["agent"], team=billing))
    assert ensure(owner, namespace).status_code == 201
    ready(namespace)
    base = f"/v1/agent-workspaces/{namespace}/weather-service"
    absent = {
        "error": "not_found",
        "message": f'no workspace for agent "weather-service" in namespace "{namespace}"',
    }

    with kept(namespace):
        for answer in (
            other.get(base),
            other.get(f"{base}/contexts"),
            other.delete(base),
            other_agent.post(f"{base}/contexts", {"contextId": "ctx-1"}),
            other_agent.post(f"{base}/usage", {"usedBytes": 1}),
        ):
            assert (answer.status_code, answer.json()) == (404, absent)
        assert other.get("/v1/agent-workspaces").json() == {"items": []}
        taken = ensure(other, namespace)
        assert (taken.status_code, taken.json()) == (
            409,
            {
                "error": "already_exists",
                "message": f'the workspace of "weather-service" in "{namespace}" already exists',
            },
        )

    # The owner's ensure finds its own (200), and its team is recorded.
    assert ensure(owner, namespace).status_code == 200
    assert AgentWorkspace.objects.get().team_id == research.pk


def test_another_teams_context_is_absent_for_every_verb(namespace: str) -> None:
    research, billing = team("research"), team("billing")
    owner = ApiClient(issue_token("research-rossoctl", ["allocations"], team=research))
    other = ApiClient(issue_token("billing-rossoctl", ["allocations"], team=billing))
    body = {
        "name": "research-memory",
        "namespace": namespace,
        "type": "memory",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    assert owner.post("/v1/contexts", body).status_code == 201
    wait_until(
        lambda: ContextResource.objects.filter(status=ContextResource.Status.READY).exists(),
        timeout=60,
        message="the context's PVC to bind",
    )
    path = f"/v1/namespaces/{namespace}/contexts/research-memory"
    seen = owner.get(path).json()
    absent = {
        "error": "not_found",
        "message": f'context "research-memory" not found in namespace "{namespace}"',
    }

    with kept(namespace):
        for answer in (other.get(path), other.delete(path)):
            assert (answer.status_code, answer.json()) == (404, absent)
        assert other.get(f"/v1/namespaces/{namespace}/contexts").json() == {"items": []}
        taken, again = other.post("/v1/contexts", body), owner.post("/v1/contexts", body)
        assert (taken.status_code, taken.json()) == (409, again.json())
        assert again.status_code == 409

    assert owner.get(path).json()["name"] == seen["name"]
    assert ContextResource.objects.get().team_id == research.pk

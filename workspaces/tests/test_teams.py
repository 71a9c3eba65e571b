"""Agent workspaces and named contexts belong to a team: for another team's callers they
are absent (404) for every verb, and taking the name is the 409 of a name taken, word for
word what the owner gets, never saying whose."""

from __future__ import annotations

from typing import Any

import pytest

from allocations.tests.test_consumers import pool as allocation_pool
from contexts.models import ContextResource
from contexts.selectors import context_storage
from contextsvc.core import services
from contextsvc.core.models import Team
from tests.support.api import ApiClient, issue_token
from tests.support.processes import wait_until
from tests.support.unchanged import kept
from tests.support.workspaces import ensure, ready
from workspaces.models import AgentWorkspace
from workspaces.selectors import workspace_storage

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]

GIB = 1024**3


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


def test_storage_is_one_quota_over_pools_contexts_and_workspaces(namespace: str) -> None:
    limited = services.team_set_quotas(
        team=team("limited"), actor="system:test", max_storage_bytes=6 * GIB
    )
    caller = ApiClient(issue_token("limited-platform", ["allocations"], team=limited))

    def context(name: str, size: str) -> Any:
        return caller.post(
            "/v1/contexts",
            {
                "name": name,
                "namespace": namespace,
                "type": "memory",
                "storage": {"backend": "pvc", "size": size, "accessMode": "ReadWriteOnce"},
            },
        )

    assert context("first", "2Gi").status_code == 201
    # A workspace of 5Gi on top of 2Gi passes 6Gi: refused, nothing written, nothing made.
    with kept(namespace):
        refused = ensure(caller, namespace)
        assert (refused.status_code, refused.json()) == (
            403,
            {
                "error": "quota_exceeded",
                "message": 'team "limited" is limited to 6Gi of requested storage; '
                "2Gi in use, this request needs 5Gi more",
                "quota": "max_storage_bytes",
                "limit": 6 * GIB,
                "inUse": 2 * GIB,
                "requested": 5 * GIB,
            },
        )
    assert ensure(caller, namespace, initialSize="4Gi").status_code == 201
    # 6Gi in use: a context of 1Gi more, and a pool's 1Gi workspace, are refused too.
    with kept(namespace):
        more = context("second", "1Gi")
        assert (more.status_code, more.json()["inUse"], more.json()["requested"]) == (
            403,
            6 * GIB,
            GIB,
        )
        pool = caller.post("/v1/sandbox-pools", allocation_pool("over", namespace))
        assert (pool.status_code, pool.json()["quota"], pool.json()["inUse"]) == (
            403,
            "max_storage_bytes",
            6 * GIB,
        )
    # Deleting the context gives its share back.
    assert caller.delete(f"/v1/namespaces/{namespace}/contexts/first").status_code == 204
    wait_until(
        lambda: context_storage(limited.pk) == 0, timeout=60, message="the context to be deleted"
    )
    assert context("second", "1Gi").status_code == 201
    assert (context_storage(limited.pk), workspace_storage(limited.pk)) == (GIB, 4 * GIB)

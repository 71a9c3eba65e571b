"""Teams and quotas over the sandbox-pool API, against the real web process, worker, watcher
and cluster: another team's pool is absent for every verb, a name another team holds is the
contract's 409 without saying whose, admins see every team's, and a burst of 8 concurrent
callers is refused at exactly the team's limit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from allocations.models import Allocation, Phase
from allocations.tests.test_consumers import Stream, pool, request
from allocations.tests.test_lifecycle import patch
from contextsvc.core import services
from contextsvc.core.models import AuditEntry, Team
from tests.support.api import ApiClient, issue_token
from tests.support.kube import wait_for_phase
from tests.support.unchanged import kept

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]

GIB = 1024**3


def team(name: str, **limits: int) -> Team:
    made = services.team_create(name=name, actor="system:test")
    return services.team_set_quotas(team=made, actor="system:test", **limits) if limits else made


def test_another_teams_pool_is_absent_for_every_verb(web_server: str, namespace: str) -> None:
    research, billing = team("research"), team("billing")
    owner_token = issue_token("research-harness", ["allocations"], team=research)
    other_token = issue_token("billing-harness", ["allocations"], team=billing)
    owner, other = ApiClient(owner_token), ApiClient(other_token)
    admin = ApiClient(issue_token("platform", ["admin"]))
    assert owner.post("/v1/sandbox-pools", pool("theirs", namespace)).status_code == 201
    wait_for_phase("theirs", Phase.READY, timeout=90)
    mine = owner.get("/v1/sandbox-pools/theirs").json()
    absent = {"error": "not_found", "message": 'sandbox pool "theirs" not found'}

    with kept(namespace):
        for answer in (
            other.get("/v1/sandbox-pools/theirs"),
            patch(other, "theirs", {"replicas": 3}),
            other.delete("/v1/sandbox-pools/theirs"),
            other.post("/v1/sandbox-pools/theirs/suspend"),
            other.post("/v1/sandbox-pools/theirs/resume"),
        ):
            assert (answer.status_code, answer.json()) == (404, absent)
        assert request(web_server, "GET", "/v1/sandbox-pools/theirs?wait=1", other_token) == (
            404,
            absent,
        )
        assert other.get("/v1/sandbox-pools").json() == {"items": []}
        # The stream opens with every pool the caller reaches: none, so a bookmark.
        stream = Stream(web_server, other_token)
        try:
            [first] = stream.until(lambda line: True)
        finally:
            stream.close()
        assert list(first) == ["type", "cursor"]
        assert first["type"] == "bookmark"
        # Taking the name is the contract's 409, word for word what the owner itself gets:
        # nothing says whose the name is.
        taken = other.post("/v1/sandbox-pools", pool("theirs", namespace))
        again = owner.post("/v1/sandbox-pools", pool("theirs", namespace))
        assert (taken.status_code, taken.json()) == (409, again.json())
        assert again.status_code == 409
        assert "research" not in taken.content.decode()

    # The owner and an admin see it as it was; an admin sees every team's.
    assert owner.get("/v1/sandbox-pools/theirs").json() == mine
    assert admin.get("/v1/sandbox-pools/theirs").json() == mine
    assert [item["name"] for item in admin.get("/v1/sandbox-pools").json()["items"]] == ["theirs"]
    allocation = Allocation.objects.get(name="theirs")
    assert (allocation.team_id, allocation.requester) == (research.pk, "api:research-harness")
    assert AuditEntry.objects.get(action="allocation.create").payload["team"] == "research"
    # Its audit entries are the team's (its people read them; the other team's do not).
    assert set(AuditEntry.objects.filter(target="theirs").values_list("team_id", flat=True)) == {
        research.pk
    }
    assert owner.delete("/v1/sandbox-pools/theirs").status_code == 204
    wait_for_phase("theirs", Phase.RELEASED, timeout=90)


def test_a_burst_past_a_quota_is_refused_at_exactly_the_limit(
    web_server: str, namespace: str
) -> None:
    small = team("small", max_live_sandboxes=5)
    token = issue_token("small-harness", ["allocations"], team=small)
    # Another team's pools count for nothing here.
    other = issue_token("default-harness", ["allocations"])
    bystander = request(
        web_server, "POST", "/v1/sandbox-pools", other, pool("bystander", namespace)
    )
    assert bystander[0] == 201
    barrier = threading.Barrier(8)
    answers: dict[str, tuple[int, Any]] = {}

    def create(name: str) -> None:
        barrier.wait()
        answers[name] = request(
            web_server, "POST", "/v1/sandbox-pools", token, pool(name, namespace)
        )

    callers = [threading.Thread(target=create, args=(f"burst-{i}",)) for i in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    made = sorted(name for name, (status, _) in answers.items() if status == 201)
    refused = [body for status, body in answers.values() if status == 403]
    assert (len(made), len(refused)) == (5, 3)
    assert (
        refused
        == [
            {
                "error": "quota_exceeded",
                "message": 'team "small" is limited to 5 live sandboxes; 5 in use, '
                "this request needs 1 more",
                "quota": "max_live_sandboxes",
                "limit": 5,
                "inUse": 5,
                "requested": 1,
            }
        ]
        * 3
    )
    assert sorted(Allocation.objects.filter(team=small).values_list("name", flat=True)) == made
    assert AuditEntry.objects.filter(action="allocation.create").count() == 6


def test_scale_resume_and_storage_are_held_to_the_quota(namespace: str) -> None:
    limited = team("limited", max_live_sandboxes=3, max_storage_bytes=3 * GIB)
    api = ApiClient(issue_token("limited-harness", ["allocations"], team=limited))
    assert api.post("/v1/sandbox-pools", pool("wide", namespace, replicas=2)).status_code == 201
    wait_for_phase("wide", Phase.READY, timeout=90)

    # 2 × 1Gi held: another 2Gi would pass 3Gi (one more sandbox would not pass 3).
    bigger = {
        **pool("second", namespace),
        "workspace": {"size": "2Gi", "accessMode": "ReadWriteOnce"},
    }
    with kept(namespace):
        refused = api.post("/v1/sandbox-pools", bigger)
        assert (refused.status_code, refused.json()["message"]) == (
            403,
            'team "limited" is limited to 3Gi of requested storage; 2Gi in use, '
            "this request needs 2Gi more",
        )
        scaled = patch(api, "wide", {"replicas": 4})
        assert (scaled.status_code, scaled.json()["message"]) == (
            403,
            'team "limited" is limited to 3 live sandboxes; 2 in use, this request needs 2 more',
        )

    # A suspended pool runs no sandbox (its volumes still count); resuming it counts again.
    assert api.post("/v1/sandbox-pools/wide/suspend").status_code == 200
    wait_for_phase("wide", Phase.SUSPENDED)
    shared = {
        **pool("shared-one", namespace, replicas=2),
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
    }
    assert api.post("/v1/sandbox-pools", shared).status_code == 201
    wait_for_phase("shared-one", Phase.READY, timeout=90)
    with kept(namespace):
        resumed = api.post("/v1/sandbox-pools/wide/resume")
        assert (resumed.status_code, resumed.json()["message"]) == (
            403,
            'team "limited" is limited to 3 live sandboxes; 2 in use, this request needs 2 more',
        )
    # Scaling down is never refused, and frees what it held.
    assert patch(api, "shared-one", {"replicas": 1}).status_code == 200
    assert api.post("/v1/sandbox-pools/wide/resume").status_code == 200
    for name in ("wide", "shared-one"):
        assert api.delete(f"/v1/sandbox-pools/{name}").status_code == 204
        wait_for_phase(name, Phase.RELEASED, timeout=90)


def test_a_team_makes_objects_only_in_its_namespaces(namespace: str, other_namespace: str) -> None:
    fenced = team("fenced")
    services.team_set_namespaces(team=fenced, namespaces=[namespace], actor="system:test")
    api = ApiClient(issue_token("fenced-harness", ["allocations"], team=fenced))
    refusal = {
        "error": "forbidden",
        "message": f'team "fenced" may not use namespace "{other_namespace}" '
        f"(its namespaces: {namespace})",
    }
    context = {
        "name": "fenced-memory",
        "namespace": other_namespace,
        "type": "memory",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    workspace = {"agentType": "weather-service", "namespace": other_namespace}
    with kept(namespace, other_namespace):
        for answer in (
            api.post("/v1/sandbox-pools", pool("elsewhere", other_namespace)),
            api.post("/v1/contexts", context),
            api.post("/v1/agent-workspaces", workspace),
        ):
            assert (answer.status_code, answer.json()) == (403, refusal)

    assert api.post("/v1/sandbox-pools", pool("at-home", namespace)).status_code == 201
    wait_for_phase("at-home", Phase.READY, timeout=90)
    assert api.delete("/v1/sandbox-pools/at-home").status_code == 204
    wait_for_phase("at-home", Phase.RELEASED, timeout=90)


def test_a_pool_requesting_more_storage_than_any_pool_may_is_a_400_and_changes_nothing(
    namespace: str,
) -> None:
    """The sum is kept in a bigint: past it the request is refused with what it would
    need, at create and at scale (schemathesis found the 500 this was)."""
    api = ApiClient(issue_token("harness", ["allocations"]))
    huge = {
        **pool("huge", namespace, replicas=88),
        "workspace": {"size": "550217330352777550", "accessMode": "ReadWriteOnce"},
    }
    one_exbibyte = {
        **pool("exbi", namespace),
        "workspace": {"size": "1Ei", "accessMode": "ReadWriteOnce"},
    }
    with kept(namespace):
        created = api.post("/v1/sandbox-pools", huge)
    assert (created.status_code, created.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "the pool would request 48419125071044424400 bytes of storage "
            "(workspace.size for each of its 88 replicas, and artifacts.size), more than the "
            "most a pool may request (9223372036854775807 bytes)",
        },
    )
    assert api.post("/v1/sandbox-pools", one_exbibyte).status_code == 201
    wait_for_phase("exbi", Phase.READY, timeout=90)

    with kept(namespace):
        scaled = patch(api, "exbi", {"replicas": 8})

    assert (scaled.status_code, scaled.json()["message"]) == (
        400,
        "the pool would request 9223372036854775808 bytes of storage (workspace.size for "
        "each of its 8 replicas, and artifacts.size), more than the most a pool may request "
        "(9223372036854775807 bytes)",
    )
    assert Allocation.objects.get(name="exbi").replicas == 1
    assert api.delete("/v1/sandbox-pools/exbi").status_code == 204
    wait_for_phase("exbi", Phase.RELEASED, timeout=90)

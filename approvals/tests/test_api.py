"""The approval queue API (approvals/api.py): immediate decisions, pending requests, final
decisions, grants, expiry, cancellation, and who may see what, as agents and reviewers
call it."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from approvals.models import ApprovalRequest, Status
from approvals.selectors import operation_digest
from approvals.tasks import expire_due
from approvals.tests.factories import GrantFactory
from contextsvc.core.models import AuditEntry
from profiles.tests.factories import SandboxProfileFactory
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import kept

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("data_agent")]


def ask(agent: ApiClient, command: str, context: str = "ctx-1", **extra: Any) -> Any:
    return agent.post(
        "/v1/approvals",
        {
            "contextId": context,
            "agentType": "data-agent",
            "operation": {"kind": "shell", "command": command},
            **extra,
        },
    )


def test_rules_decide_at_once_with_their_explanation(agent: ApiClient) -> None:
    allowed = ask(agent, "ls -la")
    denied = ask(agent, "ls && curl https://evil.example")

    assert allowed.status_code == 200
    assert allowed.json()["decision"] == "allow"
    assert allowed.json()["evaluation"]["rule"] == "shell(ls:*)"
    # What may run, exactly, how, and the decision's record (which a run report names).
    assert allowed.json()["operation"] == {"kind": "shell", "command": "ls -la"}
    assert allowed.json()["execution"] == {
        "isolation": "namespaces",
        "runtimeClass": None,
        "timeLimitSeconds": None,
        "memoryLimitMb": None,
        "workspace": "/workspace/ctx-1",
        "network": "pod",
        # Where any run of the agent type may connect: no sources.json and no network allow
        # rule, so nowhere.
        "egress": {"hosts": [], "blocked": [], "ports": [80, 443]},
        # What the executor holds it to: a listing of the context, nothing written.
        "effects": {
            "read": ["/workspace/ctx-1"],
            "write": [],
            "delete": [],
            "network": [],
            "programs": ["ls"],
            # Nothing the deny rules forbid reading is a fixed path.
            "hidden": [],
        },
    }
    assert allowed.json()["checkId"] == AuditEntry.objects.get(action="approval.allow").pk
    assert denied.status_code == 200
    body = denied.json()
    assert body["decision"] == "deny"
    assert body["evaluation"]["rule"] == "shell(curl:*)"
    assert [(part["text"], part["decision"]) for part in body["evaluation"]["parts"]] == [
        ("ls", "allow"),
        ("curl https://evil.example", "deny"),
    ]
    assert ApprovalRequest.objects.count() == 0
    assert list(
        AuditEntry.objects.filter(action__startswith="approval.")
        .order_by("id")
        .values_list("action", "actor", "target", "payload")
    ) == [
        (
            "approval.allow",
            "api:agent-1",
            "ctx-1",
            {
                "agent_type": "data-agent",
                "operation": "ls -la",
                "rule": "shell(ls:*)",
                "sources_entry": None,
                "judged_sha256": operation_digest({"kind": "shell", "command": "ls -la"}),
            },
        ),
        (
            "approval.refuse",
            "api:agent-1",
            "ctx-1",
            {
                "agent_type": "data-agent",
                "operation": "ls && curl https://evil.example",
                "rule": "shell(curl:*)",
                "sources_entry": None,
                "judged_sha256": operation_digest(
                    {"kind": "shell", "command": "ls && curl https://evil.example"}
                ),
            },
        ),
    ]


def test_an_agent_token_speaks_only_for_its_agent_types(approver: ApiClient) -> None:
    SandboxProfileFactory.create(
        name="lenient-agent", rules={"permissions": {"allow": ["shell(curl:*)"]}}
    )
    bound = ApiClient(issue_token("data-agent-1", ["agent"], agent_types=["data-agent"]))

    # Naming a more lenient profile's type would pick its rules: refused, nothing written.
    with kept():
        refused = ask(bound, "curl https://evil.example", agentType="lenient-agent")
    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "forbidden",
            "message": 'API client "data-agent-1" may not act for agent type "lenient-agent"',
        },
    )
    assert ask(bound, "ls").json()["decision"] == "allow"


@pytest.mark.parametrize(
    ("agent_types", "message"),
    [
        ([], "an agent client needs the agent types it may act for (or '*')"),
        (["Not A Name"], "'Not A Name' is not an agent type name"),
    ],
)
def test_agent_clients_must_name_valid_agent_types(agent_types: list[str], message: str) -> None:
    with kept(), pytest.raises(ValidationError) as excinfo:
        issue_token("nameless-agent", ["agent"], agent_types=agent_types)

    assert excinfo.value.messages == [message]


def test_undecided_operations_wait_for_a_human(agent: ApiClient) -> None:
    response = ask(agent, "pip install pandas", allocation="pool-a", agentInstance="pod-7")

    assert response.status_code == 202
    body = response.json()
    assert response["Location"] == f"/v1/approvals/{body['id']}"
    assert (
        body["decision"],
        body["status"],
        body["contextId"],
        body["allocation"],
        body["agentInstance"],
        body["risk"],
    ) == (None, "pending", "ctx-1", "pool-a", "pod-7", "high")
    # The 202 is the request exactly as GET shows it (decision null while pending).
    assert agent.get(f"/v1/approvals/{body['id']}").json() == body
    assert body["evaluation"]["parts"][0]["decision"] == "ask"
    assert body["evaluation"]["parts"][0]["rule"] is None
    request = ApprovalRequest.objects.get()
    assert request.requested_by == "api:agent-1"
    assert 295 <= (request.deadline - request.created_at).total_seconds() <= 301
    assert AuditEntry.objects.filter(action="approval.request", target=str(request.pk)).count() == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {
                "contextId": "../etc",
                "agentType": "data-agent",
                "operation": {"kind": "shell", "command": "ls"},
            },
            "contextId: must be 1-253 of A-Z a-z 0-9 . _ : @ + - ; got '../etc'",
        ),
        (
            {
                "contextId": "c",
                "agentType": "ghost",
                "operation": {"kind": "shell", "command": "ls"},
            },
            'agent type "ghost" has no enabled profile',
        ),
        (
            {"contextId": "c", "agentType": "data-agent", "operation": {"kind": "exec"}},
            "operation.kind: must be one of shell, file, network; got 'exec'",
        ),
        # Found by schemathesis: a kind that is not a string was a 500.
        (
            {"contextId": "c", "agentType": "data-agent", "operation": {"kind": {}}},
            "operation.kind: must be one of shell, file, network; got {}",
        ),
        (
            {"contextId": "c", "agentType": "data-agent", "operation": {"kind": ["shell"]}},
            "operation.kind: must be one of shell, file, network; got ['shell']",
        ),
        (
            {
                "contextId": "c",
                "agentType": "data-agent",
                "operation": {"kind": "file", "action": "chmod", "path": "x"},
            },
            "operation.action: must be read, write or delete; got 'chmod'",
        ),
        (
            {"contextId": "c", "agentType": "data-agent", "operation": "ls"},
            "operation must be an object",
        ),
        (
            {"agentType": "data-agent", "operation": {"kind": "shell", "command": "ls"}},
            "contextId is required",
        ),
        (
            {
                "contextId": "c",
                "agentType": "data-agent",
                "operation": {"kind": "shell", "command": "x"},
                "deadlineSeconds": 0,
            },
            "deadlineSeconds must be between 1 and 3600",
        ),
        (
            {
                "contextId": "c",
                "agentType": "data-agent",
                "operation": {"kind": "shell", "command": "x"},
                "priority": "high",
            },
            'unknown field "priority"',
        ),
    ],
)
def test_bad_requests_are_refused_and_change_nothing(
    agent: ApiClient, body: dict[str, Any], message: str
) -> None:
    with kept():
        response = agent.post("/v1/approvals", body)

    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "message": message}


def test_a_decision_is_final_and_a_second_one_is_refused(
    agent: ApiClient, approver: ApiClient
) -> None:
    request_id = ask(agent, "pip install pandas").json()["id"]

    first = approver.post(
        f"/v1/approvals/{request_id}/decision", {"decision": "deny", "reason": "not today"}
    )
    with kept():
        second = approver.post(f"/v1/approvals/{request_id}/decision", {"decision": "approve"})

    assert first.status_code == 200
    assert (
        first.json()["status"],
        first.json()["decision"],
        first.json()["reason"],
        first.json()["decidedBy"],
    ) == ("denied", "deny", "not today", "api:alice")
    assert second.status_code == 409
    assert second.json() == {
        "error": "conflict",
        "message": f"approval request {request_id} is already denied",
    }
    assert ApprovalRequest.objects.get().status == Status.DENIED
    assert list(
        AuditEntry.objects.filter(target=request_id).values_list("action", flat=True).order_by("id")
    ) == [
        "approval.request",
        "approval.deny",
    ]


def test_approve_and_allow_similar_grants_a_scoped_narrow_rule(
    agent: ApiClient, approver: ApiClient
) -> None:
    for command, context in [
        ("pip install pandas --quiet", "ctx-1"),
        ("pip install pandas", "ctx-2"),
        ("pip install numpy", "ctx-1"),
    ]:
        assert ask(agent, command, context=context).status_code == 202
    request_id = ask(agent, "pip install pandas", context="ctx-1").json()["id"]
    similar = f"/v1/approvals/{request_id}/similar"
    # Earlier requests only (this one is not counted), in the scope the reviewer picks.
    assert approver.get(similar).json() == {
        "rule": "shell(pip install pandas:*)",
        "scope": "agent_type",
        "matches": 2,
    }
    assert approver.get(similar, scope="context").json()["matches"] == 1
    assert approver.get(similar, rule="shell(pip:*)").json()["matches"] == 3
    refused = approver.get(similar, scope="everyone")
    assert (refused.status_code, refused.json()["message"]) == (
        400,
        "scope must be context or agent_type",
    )
    assert approver.get(similar, rule="shell(").status_code == 400

    decided = approver.post(
        f"/v1/approvals/{request_id}/decision",
        {"decision": "approve_similar", "scope": "context", "expiresInSeconds": 3600},
    )

    assert decided.status_code == 200
    grant = decided.json()["grant"]
    assert (grant["rule"], grant["scope"], grant["contextId"], grant["agentType"]) == (
        "shell(pip install pandas:*)",
        "context",
        "ctx-1",
        "data-agent",
    )
    assert ask(agent, "pip install pandas --quiet", context="ctx-1").json()["decision"] == "allow"
    assert ask(agent, "pip install pandas", context="ctx-2").status_code == 202
    assert ask(agent, "pip install numpy", context="ctx-1").status_code == 202
    # A grant never beats a deny.
    assert ask(agent, "pip install pandas && curl x", context="ctx-1").json()["decision"] == "deny"

    revoked = approver.delete(f"/v1/grants/{grant['id']}")
    assert revoked.status_code == 204
    assert ask(agent, "pip install pandas", context="ctx-1").status_code == 202
    with kept():
        assert approver.delete(f"/v1/grants/{grant['id']}").status_code == 409
    assert list(
        AuditEntry.objects.filter(target_type="grant")
        .values_list("action", flat=True)
        .order_by("id")
    ) == [
        "grant.create",
        "grant.revoke",
    ]


def test_expiry_means_deny_and_cannot_be_decided_after(
    agent: ApiClient, approver: ApiClient
) -> None:
    request_id = ask(agent, "pip install pandas", deadlineSeconds=1).json()["id"]
    time.sleep(1.2)

    state = agent.get(f"/v1/approvals/{request_id}").json()  # expired as it is read
    # The read only reads (selectors.approval_as_read): beat's task writes the expiry.
    assert ApprovalRequest.objects.get(pk=request_id).status == Status.PENDING
    assert expire_due() == 1
    with kept():
        late = approver.post(f"/v1/approvals/{request_id}/decision", {"decision": "approve"})

    assert (state["status"], state["decision"], state["reason"], state["decidedBy"]) == (
        "expired",
        "deny",
        "deadline passed",
        "system:approvals",
    )
    assert late.status_code == 409
    assert late.json()["message"] == f"approval request {request_id} is already expired"
    assert AuditEntry.objects.filter(action="approval.expire", target=request_id).count() == 1


def test_agents_see_and_cancel_only_their_own_requests(
    agent: ApiClient, approver: ApiClient
) -> None:
    other = ApiClient(issue_token("agent-2", ["agent"]))
    request_id = ask(agent, "pip install pandas").json()["id"]

    with kept():
        assert other.get(f"/v1/approvals/{request_id}").status_code == 404
        assert other.post(f"/v1/approvals/{request_id}/cancel").status_code == 404
        assert other.get("/v1/approvals").json() == {"items": [], "count": 0}
        assert (
            other.post(f"/v1/approvals/{request_id}/decision", {"decision": "approve"}).status_code
            == 403
        )

    cancelled = agent.post(f"/v1/approvals/{request_id}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert approver.get("/v1/approvals", status="cancelled").json()["count"] == 1


def test_an_approver_may_cancel_a_pending_request(agent: ApiClient, approver: ApiClient) -> None:
    """docs/approvals.md: approvers may cancel; they used to get a 403."""
    request_id = ask(agent, "pip install pandas").json()["id"]

    cancelled = approver.post(f"/v1/approvals/{request_id}/cancel")

    assert cancelled.status_code == 200
    assert (cancelled.json()["status"], cancelled.json()["decision"]) == ("cancelled", "deny")
    assert list(
        AuditEntry.objects.filter(action="approval.cancel", target=request_id).values_list(
            "actor", flat=True
        )
    ) == ["api:alice"]
    with kept():
        again = approver.post(f"/v1/approvals/{request_id}/cancel")
    assert again.status_code == 409


@pytest.mark.parametrize("seconds", [0, 10**30])
def test_a_grant_expiry_out_of_range_is_refused_and_changes_nothing(
    agent: ApiClient, approver: ApiClient, seconds: int
) -> None:
    """An expiry past timedelta's range was a 500."""
    request_id = ask(agent, "pip install pandas").json()["id"]

    with kept():
        response = approver.post(
            f"/v1/approvals/{request_id}/decision",
            {"decision": "approve_similar", "scope": "context", "expiresInSeconds": seconds},
        )

    assert (response.status_code, response.json()) == (
        400,
        {
            "error": "invalid_request",
            "message": "expiresInSeconds must be between 1 and 315360000",
        },
    )


def test_list_filters(agent: ApiClient, approver: ApiClient) -> None:
    ask(agent, "pip install a", context="c1")
    ask(agent, "pip install b", context="c2")

    listed = approver.get("/v1/approvals", contextId="c2").json()

    assert listed["count"] == 1
    assert listed["items"][0]["normalised"] == "pip install b"
    assert approver.get("/v1/approvals", status="nope").status_code == 400


def test_list_offsets_past_a_bigint_are_refused_not_a_500(approver: ApiClient) -> None:
    # Found by schemathesis: OFFSET 150374180800430526676598784 was a database error.
    huge = approver.get("/v1/approvals", offset="150374180800430526676598784")
    last = approver.get("/v1/approvals", offset="1000000000")

    assert (huge.status_code, huge.json()) == (
        400,
        {"error": "invalid_request", "message": "offset must be at most 1000000000"},
    )
    assert (last.status_code, last.json()) == (200, {"items": [], "count": 0})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "decision is required"),
        (
            {"decision": "maybe"},
            "decision must be approve, deny, approve_edited or approve_similar",
        ),
        ({"decision": "approve_similar"}, "scope is required"),
        ({"decision": "approve", "reason": 7}, "reason must be a string"),
        # The dashboard's box holds as much (frontend's decision_body reads through this).
        ({"decision": "deny", "reason": "x" * 1001}, "reason must be at most 1000 characters"),
        # Every field is read by its type, whichever decision it comes with.
        ({"decision": "approve", "scope": 5}, "scope must be a string"),
        (
            {"decision": "approve_similar", "scope": "context", "expiresInSeconds": "1h"},
            "expiresInSeconds must be an integer",
        ),
        ({"decision": "approve", "verdict": "yes"}, 'unknown field "verdict"'),
    ],
)
def test_bad_decisions_are_refused_and_change_nothing(
    agent: ApiClient, approver: ApiClient, body: dict[str, Any], message: str
) -> None:
    request_id = ask(agent, "pip install pandas").json()["id"]

    with kept():
        response = approver.post(f"/v1/approvals/{request_id}/decision", body)

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "message": message},
    )


def test_grants_are_listed_newest_first_and_active_ones_on_their_own(
    agent: ApiClient, approver: ApiClient
) -> None:
    now = timezone.now()
    active = GrantFactory.create(rule="shell(pip install pandas:*)")
    expired = GrantFactory.create(
        rule="shell(pip install numpy:*)", expires_at=now - timedelta(seconds=1)
    )
    revoked = GrantFactory.create(
        rule="shell(pip install scipy:*)", revoked_at=now, revoked_by="user:bob"
    )
    for_context = GrantFactory.create(
        rule="shell(make:*)",
        scope="context",
        context_id="ctx-9",
        expires_at=now + timedelta(days=1),
    )

    everything = approver.get("/v1/grants").json()["items"]
    current = approver.get("/v1/grants", active="true").json()["items"]

    assert [item["id"] for item in everything] == [
        for_context.pk,
        revoked.pk,
        expired.pk,
        active.pk,
    ]
    assert [item["id"] for item in current] == [for_context.pk, active.pk]
    assert current[0] == {
        "id": for_context.pk,
        "rule": "shell(make:*)",
        "scope": "context",
        "agentType": "data-agent",
        "contextId": "ctx-9",
        "expiresAt": (now + timedelta(days=1)).isoformat(),
        "createdAt": for_context.created_at.isoformat(),
        "createdBy": "user:test",
        "revokedAt": None,
        "revokedBy": None,
    }
    # Agents see no grants (nor may they revoke one).
    with kept():
        assert agent.get("/v1/grants").status_code == 403
        assert agent.delete(f"/v1/grants/{active.pk}").status_code == 403


@pytest.mark.parametrize(("isolation", "decision"), [("namespaces", "allow"), ("none", "ask")])
def test_a_script_of_an_allowed_interpreter_runs_contained_only_where_the_executor_holds_it(
    agent: ApiClient, isolation: str, decision: str
) -> None:
    SandboxProfileFactory.create(
        name="script-agent",
        executor_isolation=isolation,
        rules={"permissions": {"allow": ["shell(python3:*)"], "deny": ["file(read:/etc/shadow)"]}},
        sources={"web_access": {"enabled": True, "allowed_domains": ["pypi.org"]}},
    )

    response = agent.post(
        "/v1/approvals",
        {
            "contextId": "ctx-1",
            "agentType": "script-agent",
            "operation": {"kind": "shell", "command": "python3 analysis.py"},
        },
    )

    assert response.status_code == (200 if decision == "allow" else 202)
    body = response.json()
    assert body["decision"] == decision if decision == "allow" else body["status"] == "pending"
    assert body["evaluation"]["contained"] is (decision == "allow")
    assert body["evaluation"]["parts"][0]["contained"] is (decision == "allow")
    if decision == "allow":
        assert body["execution"]["effects"] == {
            "read": ["/workspace/ctx-1/**", "/workspace/ctx-1/analysis.py"],
            "write": ["/workspace/ctx-1/**"],
            "delete": [],
            "network": ["pypi.org"],
            "programs": ["python3"],
            "hidden": ["/etc/shadow"],
        }
        entry = AuditEntry.objects.get(action="approval.allow")
        assert entry.payload["contained"] is True
        assert entry.payload["rule"] == "shell(python3:*)"
        assert ApprovalRequest.objects.count() == 0
    else:
        assert not AuditEntry.objects.filter(action="approval.allow").exists()
        assert ApprovalRequest.objects.get().evaluation["contained"] is False

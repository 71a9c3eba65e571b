"""A profile's approval policy (profiles/approvalpolicy.py, the API's ``approvals``): how
it is written, read and refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from contextsvc.core.models import AuditEntry
from contextsvc.core.users import ensure_role_groups, user_set_role
from profiles.approvalpolicy import ApprovalPolicy, PolicyError, parse_approval_policy
from profiles.models import SandboxProfile
from tests.support.api import ApiClient
from tests.support.unchanged import rows

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_policy_parses_to_what_it_says() -> None:
    assert parse_approval_policy({}) == ApprovalPolicy()
    assert parse_approval_policy(
        {"twoPersonRule": True, "escalateAfter": 0.5, "escalateTo": ["bob"], "email": "high"}
    ) == ApprovalPolicy(
        two_person_rule=True, escalate_after=0.5, escalate_to=("bob",), email="high"
    )
    policy = ApprovalPolicy(two_person_rule=True, email="high")
    assert [policy.approvals_required(risk) for risk in ("low", "medium", "high")] == [1, 1, 2]
    assert [policy.emails_approvers(risk) for risk in ("low", "medium", "high")] == [
        False,
        False,
        True,
    ]
    assert ApprovalPolicy().approvals_required("high") == 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "must be an object"),
        ({"twoPerson": True}, "twoPerson is not a field (use email, escalateAfter, escalateTo, "
         "twoPersonRule)"),
        ({"twoPersonRule": "yes"}, "twoPersonRule must be a boolean"),
        ({"escalateAfter": 1, "escalateTo": ["bob"]},
         "escalateAfter must be a number between 0 and 1 (a share of the deadline)"),
        ({"escalateAfter": True, "escalateTo": ["bob"]},
         "escalateAfter must be a number between 0 and 1 (a share of the deadline)"),
        ({"escalateAfter": 0.5}, "escalateAfter and escalateTo go together"),
        ({"escalateTo": ["bob"]}, "escalateAfter and escalateTo go together"),
        ({"escalateAfter": 0.5, "escalateTo": ["bob", "bob"]}, "escalateTo names someone twice"),
        ({"escalateAfter": 0.5, "escalateTo": "bob"}, "escalateTo must be a list of usernames"),
        ({"email": "some"}, "email must be one of all, high, none"),
    ],
)  # fmt: skip
def test_a_malformed_policy_is_named(raw: Any, message: str) -> None:
    with pytest.raises(PolicyError) as excinfo:
        parse_approval_policy(raw)

    assert str(excinfo.value) == message


@pytest.mark.cluster
@pytest.mark.usefixtures("service")
def test_the_api_writes_reads_and_refuses_the_policy(admin: ApiClient) -> None:
    ensure_role_groups()
    bob = user_set_role(user=User.objects.create_user("bob"), role="approver", actor="user:test")
    user_set_role(user=User.objects.create_user("vera"), role="viewer", actor="user:test")
    policy = {"twoPersonRule": True, "escalateAfter": 0.5, "escalateTo": [bob.username]}

    created = admin.post(
        "/v1/profiles", {"name": "careful", "image": "busybox:1.36", "approvals": policy}
    )

    assert created.status_code == 201
    assert created.json()["approvals"] == policy
    assert admin.get("/v1/profiles/careful").json()["approvals"] == policy
    assert SandboxProfile.objects.get(name="careful").approval_policy == policy
    assert AuditEntry.objects.get(action="profile.create").payload["approval_policy"] == policy

    before = rows()
    for escalate_to, problem in (
        (["vera"], "escalateTo: 'vera' is not an active person with the approver role"),
        (["ghost"], "escalateTo: 'ghost' is not an active person with the approver role"),
    ):
        refused = admin.client.put(
            "/v1/profiles/careful",
            json.dumps(
                {"name": "careful", "approvals": {"escalateAfter": 0.2, "escalateTo": escalate_to}}
            ),
            content_type="application/json",
            headers=admin.headers,
        )
        assert (refused.status_code, refused.json()) == (
            400,
            {
                "error": "invalid_request",
                "message": f"approvals: {problem}",
                "problems": {"approvals": [problem]},
            },
        )
    assert rows() == before

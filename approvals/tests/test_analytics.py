"""How approvals go, counted: immediate decisions by rule, people's outcomes by agent type,
the grants that fire most, escalations and messages — on the analytics page and in
/metrics, from the same counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from approvals import selectors
from approvals.models import ApprovalRequest, Grant, RuleDecisionCount
from approvals.services.check import approval_check
from approvals.services.decisions import approval_approve_similar
from approvals.tests.factories import ApprovalRequestFactory
from contextsvc.core.teams import EVERY_TEAM
from contextsvc.core.users import ensure_role_groups, user_set_role
from tests.support.api import issue_token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("data_agent")]


def check(command: str, context: str = "ctx-1") -> str:
    return approval_check(
        operation={"kind": "shell", "command": command},
        context_id=context,
        agent_type="data-agent",
        actor="api:agent-1",
    ).decision


def history() -> None:
    """Three immediate allows (two by one rule), one denial, and people's outcomes."""
    assert [check(c) for c in ("ls", "ls -la", "git status", "curl https://x.example")] == [
        "allow",
        "allow",
        "allow",
        "deny",
    ]
    now = timezone.now()
    for status, edit, took in (
        ("approved", None, 10),
        ("approved", {"operation": {"kind": "shell", "command": "ls"}, "normalised": "ls"}, 200),
        ("denied", None, 40),
        ("expired", None, None),
    ):
        request = ApprovalRequestFactory.create(status=status, edit=edit)
        if took is not None:
            ApprovalRequest.objects.filter(pk=request.pk).update(
                decided_at=request.created_at + timedelta(seconds=took)
            )
    ApprovalRequestFactory.create(agent_type="other-agent", status="cancelled")
    ApprovalRequestFactory.create()  # pending: not an outcome yet
    ApprovalRequest.objects.filter(status="expired").update(escalated_at=now)


def test_each_immediate_decision_is_counted_by_its_rule() -> None:
    history()

    assert sorted(
        RuleDecisionCount.objects.values_list("agent_type", "decision", "rule", "count")
    ) == [
        ("data-agent", "allow", "shell(git status:*)", 1),
        ("data-agent", "allow", "shell(ls:*)", 2),
        ("data-agent", "deny", "shell(curl:*)", 1),
    ]
    assert selectors.outcome_counts() == [
        ("data-agent", "approved", 1),
        ("data-agent", "approved_edited", 1),
        ("data-agent", "denied", 1),
        ("data-agent", "expired", 1),
        ("other-agent", "cancelled", 1),
    ]


def test_a_grant_counts_what_it_allowed_and_the_profiles_own_rules_do_not() -> None:
    request = approval_check(
        operation={"kind": "shell", "command": "pip install pandas"},
        context_id="ctx-1",
        agent_type="data-agent",
        actor="api:agent-1",
    ).request
    assert request is not None
    _, grant = approval_approve_similar(
        request_id=request.pk, actor="user:alice", scope="agent_type"
    )
    # A grant repeating a rule the profile has is not what allowed "ls".
    duplicate = Grant.objects.create(
        rule="shell(ls:*)", scope="agent_type", agent_type="data-agent", created_by="user:bob"
    )

    assert [check("pip install pandas"), check("pip install pandas", "ctx-2"), check("ls")] == [
        "allow",
        "allow",
        "allow",
    ]

    assert list(Grant.objects.order_by("pk").values_list("pk", "hits")) == [
        (grant.pk, 2),
        (duplicate.pk, 0),
    ]
    assert [g.pk for g in selectors.grants_by_hits(reach=EVERY_TEAM)] == [grant.pk]
    assert RuleDecisionCount.objects.get(rule="shell(pip install pandas:*)").count == 2


def test_the_page_and_metrics_show_the_same_counts() -> None:
    history()
    ensure_role_groups()
    viewer = user_set_role(user=User.objects.create_user("vera"), role="viewer", actor="t")
    browser = Client()
    browser.force_login(viewer)

    page = browser.get("/approvals/analytics/")

    assert page.status_code == 200
    context = page.context
    assert (context["finished"], context["expired_share"]) == (5, 20)
    assert context["totals"] == {
        "approved": 1,
        "approved_edited": 1,
        "denied": 1,
        "expired": 1,
        "cancelled": 1,
    }
    assert context["charts"]["decisionTime"]["counts"][:3] == [0, 1, 0]  # 10 s: "≤ 15 s"
    assert context["charts"]["outcomes"] == {
        "labels": ["data-agent", "other-agent"],
        "series": {
            "approved": [1, 0],
            "approved as edited": [1, 0],
            "denied": [1, 0],
            "expired": [1, 0],
            "cancelled": [0, 1],
        },
    }
    assert context["escalations"] == [("data-agent", 1)]

    reader = issue_token("prometheus", ["read"])
    scraped = Client().get("/metrics", headers={"Authorization": f"Bearer {reader}"})
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.content.decode())
        for sample in family.samples
        if sample.name.startswith(
            ("contextsvc_rule_decisions", "contextsvc_approval_outcomes", "contextsvc_approval_esc")
        )
    }
    assert samples == {
        (
            "contextsvc_rule_decisions_total",
            (("agent_type", "data-agent"), ("decision", decision), ("rule", rule)),
        ): count
        for decision, rule, count in (
            ("allow", "shell(ls:*)", 2.0),
            ("allow", "shell(git status:*)", 1.0),
            ("deny", "shell(curl:*)", 1.0),
        )
    } | {
        (
            "contextsvc_approval_outcomes_total",
            (("agent_type", agent_type), ("outcome", outcome)),
        ): 1.0
        for agent_type, outcome in (
            ("data-agent", "approved"),
            ("data-agent", "approved_edited"),
            ("data-agent", "denied"),
            ("data-agent", "expired"),
            ("other-agent", "cancelled"),
        )
    } | {("contextsvc_approval_escalations_total", (("agent_type", "data-agent"),)): 1.0}

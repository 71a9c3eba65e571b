"""``manage.py team``: what an admin runs to split the service between teams."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from contextsvc.core.models import ApiClient, AuditEntry, Team, TeamMember
from contextsvc.core.teams import reach_of, team_id_of
from tests.support.api import issue_token
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db

GIB = 1024**3


def run(*args: str) -> str:
    out = StringIO()
    call_command("team", *args, stdout=out)
    return out.getvalue()


def test_a_team_gets_limits_clients_and_people() -> None:
    issue_token("research-harness", ["allocations"])
    User.objects.create_user("alice")

    assert run("create", "research", "--description", "Research agents") == (
        "team 'research' created (no limits)\n"
    )
    assert run("quota", "research", "--live-sandboxes", "40", "--storage", "500Gi") == (
        "research: live sandboxes 40, storage 500Gi\n"
    )
    assert run("client", "research", "research-harness") == (
        "API client 'research-harness' is in team 'research'\n"
    )
    assert run("person", "research", "alice") == "alice is in team 'research'\n"
    assert run("namespaces", "research", "team-b", "team-a", "team-a") == (
        "research: namespaces team-a, team-b\n"
    )
    assert run(
        "quota",
        "research",
        "--live-sandboxes",
        "none",
        "--pending-approvals",
        "5",
        "--requests-per-minute",
        "600",
    ) == ("research: storage 500Gi, pending approvals 5, requests per minute 600\n")

    research = Team.objects.get(name="research")
    assert (
        research.max_live_sandboxes,
        research.max_storage_bytes,
        research.max_pending_approvals,
        research.max_live_allocations,
        research.max_requests_per_minute,
    ) == (None, 500 * GIB, 5, None, 600)
    assert ApiClient.objects.get(name="research-harness").team == research
    alice = User.objects.get(username="alice")
    assert TeamMember.objects.get(user=alice).team == research
    assert (team_id_of(alice), reach_of(alice).team_id) == (research.pk, research.pk)
    assert run("list") == (
        "default: no limits\n  API clients: none\n  people: none\n"
        "research: storage 500Gi, pending approvals 5, requests per minute 600\n"
        "  namespaces team-a, team-b\n"
        "  API clients: research-harness\n  people: alice\n"
    )
    assert list(
        AuditEntry.objects.filter(action__in=["team.create", "team.quotas"])
        .order_by("id")
        .values_list("action", "payload")
    ) == [
        ("team.create", {"description": "Research agents"}),
        (
            "team.quotas",
            {
                "from": {
                    "max_live_allocations": None,
                    "max_live_sandboxes": None,
                    "max_storage_bytes": None,
                    "max_pending_approvals": None,
                    "max_requests_per_minute": None,
                },
                "to": {
                    "max_live_allocations": None,
                    "max_live_sandboxes": 40,
                    "max_storage_bytes": 500 * GIB,
                    "max_pending_approvals": None,
                    "max_requests_per_minute": None,
                },
            },
        ),
        (
            "team.quotas",
            {
                "from": {
                    "max_live_allocations": None,
                    "max_live_sandboxes": 40,
                    "max_storage_bytes": 500 * GIB,
                    "max_pending_approvals": None,
                    "max_requests_per_minute": None,
                },
                "to": {
                    "max_live_allocations": None,
                    "max_live_sandboxes": None,
                    "max_storage_bytes": 500 * GIB,
                    "max_pending_approvals": 5,
                    "max_requests_per_minute": 600,
                },
            },
        ),
    ]
    assert AuditEntry.objects.get(action="team.namespaces").payload == {
        "from": [],
        "to": ["team-a", "team-b"],
    }
    assert run("namespaces", "research") == "research: every managed namespace\n"
    assert Team.objects.get(name="research").namespaces == []
    assert AuditEntry.objects.get(action="api_client.team").payload == {
        "from": "default",
        "to": "research",
    }
    assert AuditEntry.objects.get(action="user.team").payload == {
        "from": "default",
        "to": "research",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "default"), 'team "default" already exists'),
        (("create", "Not A Slug"), "Enter a valid “slug”"),
        (("quota", "absent", "--live-sandboxes", "3"), "no team named 'absent'"),
        (("quota", "default"), "name at least one limit to set"),
        (("quota", "default", "--live-sandboxes", "-1"), "--live-sandboxes must be a whole"),
        (("quota", "default", "--storage", "lots"), "--storage must be a quantity (500Gi)"),
        (
            ("quota", "default", "--live-sandboxes", "2.5"),
            "--live-sandboxes must be a whole number",
        ),
        (("client", "default", "absent"), "no API client named 'absent'"),
        (("person", "default", "absent"), "no person named 'absent'"),
        (("namespaces", "default", "Not_A_Namespace"), "'Not_A_Namespace' is not a namespace"),
    ],
)
def test_bad_team_commands_say_what_is_wrong_and_change_nothing(
    args: tuple[str, ...], message: str
) -> None:
    with kept(), pytest.raises(CommandError) as excinfo:
        run(*args)
    assert message in str(excinfo.value)

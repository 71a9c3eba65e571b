"""``manage.py team``: what an admin runs to split the service between teams."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from contextsvc.core.limits import (
    LIVE_ALLOCATIONS,
    LIVE_SANDBOXES,
    PENDING_APPROVALS,
    REQUESTS_PER_MINUTE,
    STORAGE,
)
from contextsvc.core.models import ApiClient, AuditEntry, Team, TeamMember
from contextsvc.core.teams import reach_of, team_id_of
from tests.support.api import issue_token
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db

GIB = 1024**3
NAME = (
    "a team name is 1 to 63 lowercase letters, digits and hyphens, starting with a letter "
    "and not ending with a hyphen"
)


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
        LIVE_SANDBOXES.of(research),
        STORAGE.of(research),
        PENDING_APPROVALS.of(research),
        LIVE_ALLOCATIONS.of(research),
        REQUESTS_PER_MINUTE.of(research),
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
        (("create", "Not A Slug"), f"name 'Not A Slug' is not valid: {NAME}"),
        # Issue 45: these were created (ALPHA beside alpha), and a long name's error did
        # not name the field.
        (("create", "ALPHA"), f"name 'ALPHA' is not valid: {NAME}"),
        (("create", "Alpha2"), f"name 'Alpha2' is not valid: {NAME}"),
        (("create", "al_pha"), f"name 'al_pha' is not valid: {NAME}"),
        (("create", "12345"), f"name '12345' is not valid: {NAME}"),
        (("create", "alpha-"), f"name 'alpha-' is not valid: {NAME}"),
        (("create", "a" * 64), f"name '{'a' * 64}' is not valid: {NAME}"),
        (
            ("create", "alpha", "--description", "d" * 300),
            "description is 300 characters; at most 255",
        ),
        # Issue 45: 500 bytes of storage refused every create after it; an overflow did
        # not name the flag; an empty value passed and changed nothing.
        (
            ("quota", "default", "--storage", "500"),
            "--storage needs a unit (500Gi, 500Mi …): 500 alone is 500 bytes",
        ),
        (
            ("quota", "default", "--live-sandboxes", "99999999999999999999999"),
            "--live-sandboxes must be at most 2147483647",
        ),
        (
            ("quota", "default", "--live-allocations", ""),
            "--live-allocations needs a value: a limit, or 'none' to remove it",
        ),
        (
            ("delete", "default"),
            'team "default" cannot be deleted: whoever has no other team is in it',
        ),
        (("delete", "absent"), "no team named 'absent' (manage.py team create absent)"),
        (
            ("quota", "absent", "--live-sandboxes", "3"),
            "no team named 'absent' (manage.py team create absent)",
        ),
        (("quota", "default"), "name at least one limit to set"),
        (
            ("quota", "default", "--live-sandboxes", "-1"),
            "--live-sandboxes must be a whole amount of 0 or more",
        ),
        (
            ("quota", "default", "--storage", "lots"),
            "--storage must be a quantity (500Gi) or 'none'",
        ),
        (
            ("quota", "default", "--live-sandboxes", "2.5"),
            "--live-sandboxes must be a whole number or 'none'",
        ),
        (("client", "default", "absent"), "no API client named 'absent'"),
        (("person", "default", "absent"), "no person named 'absent'"),
        (
            ("namespaces", "default", "Not_A_Namespace"),
            "namespaces: 'Not_A_Namespace' is not a namespace name",
        ),
    ],
)
def test_bad_team_commands_say_what_is_wrong_and_change_nothing(
    args: tuple[str, ...], message: str
) -> None:
    with kept(), pytest.raises(CommandError) as excinfo:
        run(*args)
    assert str(excinfo.value) == message


def test_a_team_that_holds_nothing_can_be_deleted_and_one_that_holds_anything_cannot() -> None:
    """Issue 45: there was no way to delete a team (a typo, one made too early)."""
    run("create", "typo")
    run("create", "busy")
    issue_token("busy-harness", ["allocations"])
    run("client", "busy", "busy-harness")

    assert run("delete", "typo") == "team 'typo' deleted\n"
    with kept(), pytest.raises(CommandError) as refused:
        run("delete", "busy")

    assert str(refused.value) == ('team "busy" still has 1 API client: move or remove them first')
    assert sorted(Team.objects.values_list("name", flat=True)) == ["busy", "default"]
    assert AuditEntry.objects.filter(action="team.delete").get().target == "typo"

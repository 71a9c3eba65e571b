"""``manage.py profile load``: an agent type's profile from its settings.json and sources.json
(what `make agent` loads for the reference agent)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from contextsvc.core.models import AuditEntry
from profiles.models import SandboxProfile
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db

SEED = Path(__file__).resolve().parents[1] / "rules" / "tests" / "fixtures"


def load(*args: str) -> str:
    out = StringIO()
    call_command("profile", "load", *args, stdout=out)
    return out.getvalue()


def test_seed_001s_files_make_the_profile_and_a_second_load_updates_it(tmp_path: Path) -> None:
    settings_json = json.loads((SEED / "settings.json").read_text())
    sources_json = json.loads((SEED / "sources.json").read_text())

    created = load(
        "python-data-agent",
        "--settings",
        str(SEED / "settings.json"),
        "--sources",
        str(SEED / "sources.json"),
        "--context-workspace",
        "/srv/agent/${CONTEXT_ID}",
    )

    assert created == "profile python-data-agent created\n"
    profile = SandboxProfile.objects.get(name="python-data-agent")
    assert profile.rules == {**settings_json, "context_workspace": "/srv/agent/${CONTEXT_ID}"}
    assert (profile.sources, profile.source, profile.updated_by) == (
        sources_json,
        "builtin",
        "system:manage.py",
    )
    narrower = tmp_path / "settings.json"
    narrower.write_text(json.dumps({"permissions": {"allow": ["shell(ls:*)"], "deny": []}}))

    assert load("python-data-agent", "--settings", str(narrower)) == (
        "profile python-data-agent updated\n"
    )
    profile.refresh_from_db()
    assert (profile.rules, profile.sources) == (
        {"permissions": {"allow": ["shell(ls:*)"], "deny": []}},
        sources_json,
    )
    assert list(
        AuditEntry.objects.filter(target="python-data-agent")
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["profile.create", "profile.update"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ("[]", "must be a JSON object"),
        ('{"permissions": {"allow": ["shell(ls"]}}', "permissions"),
    ],
)
def test_a_bad_file_is_refused_and_changes_nothing(
    tmp_path: Path, content: str, message: str
) -> None:
    bad = tmp_path / "settings.json"
    bad.write_text(content)

    with kept(), pytest.raises(CommandError) as refused:
        load("python-data-agent", "--settings", str(bad))

    assert message in str(refused.value)
    assert not SandboxProfile.objects.filter(name="python-data-agent").exists()


def test_a_missing_file_is_named() -> None:
    with pytest.raises(CommandError) as refused:
        load("python-data-agent", "--settings", "/nonexistent/settings.json")

    assert str(refused.value) == (
        "cannot read the settings.json /nonexistent/settings.json: No such file or directory"
    )

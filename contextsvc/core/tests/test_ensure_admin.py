"""``manage.py ensure_admin`` (what ``make run`` calls): makes the admin once, says how to
log in, resets the password only when one is given, and audits what it changed."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from contextsvc.core.models import AuditEntry

pytestmark = pytest.mark.django_db


def run(monkeypatch: pytest.MonkeyPatch, password: str | None) -> str:
    if password is None:
        monkeypatch.delenv("CS_ADMIN_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("CS_ADMIN_PASSWORD", password)
    out = io.StringIO()
    call_command("ensure_admin", "--username", "boss", stdout=out)
    return out.getvalue()


def test_the_admin_is_made_once_and_reset_only_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    made = run(monkeypatch, None)

    shown = made.split("password: ")[1].split()[0]
    boss = User.objects.get(username="boss")
    assert (boss.is_superuser, boss.is_staff, boss.check_password(shown)) == (True, True, True)
    assert made == (
        "Created admin user 'boss'. Log in at http://127.0.0.1:8000/login/\n"
        f"  username: boss\n  password: {shown}   (shown only once)\n"
    )

    # Run again without a password: nothing changes, nothing is shown.
    again = run(monkeypatch, None)
    assert "exists" in again
    assert shown not in again
    assert User.objects.get(username="boss").check_password(shown)

    User.objects.filter(username="boss").update(is_active=False)
    reset = run(monkeypatch, "a-chosen-admin-password")

    boss = User.objects.get(username="boss")
    assert reset == "Reset admin user 'boss'. Log in at http://127.0.0.1:8000/login/\n"
    assert (boss.is_active, boss.check_password("a-chosen-admin-password")) == (True, True)
    assert list(AuditEntry.objects.order_by("id").values_list("actor", "action", "target")) == [
        ("system:ensure_admin", "user.create", "boss"),
        ("system:ensure_admin", "user.reset", "boss"),
    ]

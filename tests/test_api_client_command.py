"""``manage.py api_client``: what an admin runs to give SH, Rossoctl and agents a token."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from contextsvc.core.models import ApiClient, ApiToken, AuditEntry
from tests.support.unchanged import kept

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("api_client", *args, stdout=out)
    return out.getvalue()


def test_create_shows_the_token_once_and_it_works_until_revoked() -> None:
    output = run("create", "weather-agent", "--scope", "agent", "--agent-type", "weather-service")

    token = re.search(r"^token: (cs_\S+)$", output, re.M)
    assert token is not None
    client = ApiClient.objects.get(name="weather-agent")
    assert (client.scopes, client.agent_types) == (["agent"], ["weather-service"])
    [stored] = ApiToken.objects.filter(client=client)
    assert token.group(1) not in stored.token_hash
    headers = {"Authorization": f"Bearer {token.group(1)}"}
    assert Client().get("/v1/approvals", headers=headers).status_code == 200
    assert "weather-agent (active) scopes: agent agent types: weather-service" in run("list")

    assert run("revoke", stored.prefix) == f"revoked {stored.prefix}… of weather-agent\n"

    assert Client().get("/v1/approvals", headers=headers).status_code == 401
    assert list(
        AuditEntry.objects.filter(target_type__in=["api_client", "api_token"])
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["api_client.create", "api_token.issue", "api_token.revoke"]


def test_an_agent_client_without_agent_types_is_refused() -> None:
    with kept(), pytest.raises(CommandError) as excinfo:
        run("create", "loose-agent", "--scope", "agent")

    assert str(excinfo.value) == "an agent client needs the agent types it may act for (or '*')"

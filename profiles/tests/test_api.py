"""The profile API: who may write profiles, and the agent type's settings.json and
sources.json documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiles.models import SandboxProfile
from tests.support.api import ApiClient

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "tests" / "fixtures"


def test_profile_writes_need_the_admin_scope(caller: ApiClient) -> None:
    response = caller.post(
        "/v1/profiles", {"name": "x", "source": "builtin", "image": "busybox:1.36"}
    )

    assert response.status_code == 403
    assert not SandboxProfile.objects.exists()
    assert caller.get("/v1/profiles").json() == {"items": []}  # callers may list profiles


def test_settings_and_sources_documents_import_round_trip_and_refuse_bad_entries(
    admin: ApiClient,
) -> None:
    admin.post(
        "/v1/profiles", {"name": "python-data-agent", "source": "builtin", "image": "busybox:1.36"}
    )
    settings_json = json.loads((FIXTURES / "settings.json").read_text())
    sources_json = json.loads((FIXTURES / "sources.json").read_text())

    put_settings = admin.client.put(
        "/v1/profiles/python-data-agent/settings.json",
        json.dumps(settings_json),
        content_type="application/json",
        headers=admin.headers,
    )
    put_sources = admin.client.put(
        "/v1/profiles/python-data-agent/sources.json",
        json.dumps(sources_json),
        content_type="application/json",
        headers=admin.headers,
    )

    assert put_settings.status_code == 200
    assert put_sources.status_code == 200
    assert admin.get("/v1/profiles/python-data-agent/settings.json").json() == settings_json
    assert admin.get("/v1/profiles/python-data-agent/sources.json").json() == sources_json

    broken = json.loads(json.dumps(settings_json))
    broken["permissions"]["deny"][3] = "shell(chmod 777"
    refused = admin.client.put(
        "/v1/profiles/python-data-agent/settings.json",
        json.dumps(broken),
        content_type="application/json",
        headers=admin.headers,
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_request",
        "message": 'permissions.deny[3]: "shell(chmod 777" is missing its closing parenthesis',
    }
    assert admin.get("/v1/profiles/python-data-agent/settings.json").json() == settings_json

"""The profile API: who may write profiles, and the agent type's settings.json and
sources.json documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextsvc.core.models import AuditEntry
from profiles.models import SandboxProfile
from tests.support.api import ApiClient
from tests.support.unchanged import kept, rows

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]
FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "tests" / "fixtures"


def test_profile_writes_need_the_admin_scope(caller: ApiClient) -> None:
    with kept():
        response = caller.post(
            "/v1/profiles", {"name": "x", "source": "builtin", "image": "busybox:1.36"}
        )

    assert response.status_code == 403
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
    with kept():
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


def test_problems_name_the_fields_the_caller_sent(admin: ApiClient) -> None:
    with kept():
        refused = admin.post(
            "/v1/profiles",
            {
                "name": "odd",
                "image": "busybox:1.36",
                "enabled": False,
                "default": True,
                "podLabels": {"not a key!": "x"},
                "volumeMounts": [{"name": "scratch"}],
                "executorIsolation": "chroot",
            },
        )

    assert refused.status_code == 400
    problems = refused.json()["problems"]
    assert sorted(problems) == ["default", "executorIsolation", "podLabels", "volumeMounts"]
    assert problems["default"] == ["a disabled profile cannot be the default"]
    assert problems["podLabels"] == ["'not a key!' is not a valid label key"]
    assert problems["executorIsolation"] == ["must be one of namespaces, none"]
    assert problems["volumeMounts"] == [
        "volumeMounts[0].mountPath must be an absolute path",
        "volumeMounts[0].name 'scratch' is not one of the profile's volumes",
    ]


def test_a_profile_with_an_image_is_a_built_in_one_without_saying_so(admin: ApiClient) -> None:
    created = admin.post("/v1/profiles", {"name": "plain", "image": "busybox:1.36"})

    assert created.status_code == 201
    body = created.json()
    assert (body["source"], body["image"], body["executorIsolation"]) == (
        "builtin",
        "busybox:1.36",
        "namespaces",
    )
    assert SandboxProfile.objects.get(name="plain").source == "builtin"


def test_a_profile_is_read_replaced_field_by_field_and_deleted(
    admin: ApiClient, caller: ApiClient
) -> None:
    created = admin.post(
        "/v1/profiles", {"name": "plain", "image": "busybox:1.36", "description": "first"}
    ).json()
    assert caller.get("/v1/profiles/plain").json() == created

    replaced = admin.client.put(
        "/v1/profiles/plain",
        json.dumps({"description": "second", "executorIsolation": "none"}),
        content_type="application/json",
        headers=admin.headers,
    )

    assert replaced.status_code == 200
    body = replaced.json()
    assert (body["description"], body["executorIsolation"], body["image"], body["updatedBy"]) == (
        "second",
        "none",
        "busybox:1.36",
        "api:platform-admin",
    )
    assert caller.get("/v1/profiles/plain").json() == body
    before = rows()
    for client, payload, status, message in (
        (
            caller,
            {"description": "third"},
            403,
            "this credential lacks the scope this endpoint needs",
        ),
        (
            admin,
            {"name": "other"},
            400,
            'name "other" does not match the profile "plain" in the path',
        ),
    ):
        refused = client.client.put(
            "/v1/profiles/plain", json.dumps(payload), content_type="application/json",
            headers=client.headers,
        )  # fmt: skip
        assert (refused.status_code, refused.json()["message"]) == (status, message)
    assert caller.delete("/v1/profiles/plain").status_code == 403
    assert caller.get("/v1/profiles/ghost").json() == {
        "error": "not_found",
        "message": 'profile "ghost" not found',
    }
    assert rows() == before

    assert admin.delete("/v1/profiles/plain").status_code == 204

    assert caller.get("/v1/profiles/plain").status_code == 404
    assert not SandboxProfile.objects.filter(name="plain").exists()
    assert list(
        AuditEntry.objects.filter(target="plain").order_by("id").values_list("actor", "action")
    ) == [
        ("api:platform-admin", "profile.create"),
        ("api:platform-admin", "profile.update"),
        ("api:platform-admin", "profile.delete"),
    ]
    assert admin.delete("/v1/profiles/plain").json()["message"] == 'profile "plain" not found'

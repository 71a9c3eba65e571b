"""Bad input and bad credentials: a clear 4xx with the v1 error body, never a 500, and
nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from contextsvc.core.models import AuditEntry
from tests.support.api import ApiClient, issue_token
from tests.support.unchanged import everything, kept
from tests.support.v1_messages import CONTEXT_ERRORS, POOL_ERRORS

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> ApiClient:
    return ApiClient(issue_token("serverless-harness", ["allocations"]))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            "{",
            "malformed JSON: Expecting property name enclosed in double quotes at line 1 column 2",
        ),
        ("", "malformed JSON: the body is empty"),
        ("[1, 2]", "the body must be a JSON object"),
        ('"name"', "the body must be a JSON object"),
        ('{"name": "a", "name": "b", "replicas": 1}', "duplicate JSON field 'name'"),
        ('{"name": "a", "replicas": NaN}', "malformed JSON: NaN is not a JSON value"),
        (b"\xff\xfe{}", "malformed JSON: the body is not UTF-8"),
        ("[" * 100000 + "]" * 100000, "malformed JSON: nested too deeply"),
    ],
)
def test_malformed_bodies(api: ApiClient, raw: str | bytes, message: str) -> None:
    with kept():
        response = api.post("/v1/sandbox-pools", raw=raw)

    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "message": message}


def test_body_over_one_mebibyte_is_refused(api: ApiClient) -> None:
    body = json.dumps({"name": "big", "replicas": 1, "pad": "x" * (1024 * 1024)})

    with kept():
        response = api.post("/v1/sandbox-pools", raw=body)

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": "request body must not exceed 1 MiB",
    }


def test_validation_error_has_the_contract_body(api: ApiClient) -> None:
    with kept():
        response = api.post("/v1/sandbox-pools", {"name": "x", "replicas": 101, "workspace": {}})

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": "replicas must be between 1 and 100",
    }


def test_content_type_is_not_required(api: ApiClient) -> None:
    # The Go service decoded the body whatever the header said; callers rely on it.
    with kept():
        response = api.post(
            "/v1/sandbox-pools",
            raw='{"name": "Bad"}',
            content_type="application/x-www-form-urlencoded",
        )

    assert response.status_code == 400
    assert response.json()["message"] == (
        "name must be a lowercase Kubernetes name no longer than 50 characters"
    )


@pytest.mark.parametrize(
    "path",
    ["/v1/sandbox-pools/nope", "/v1/namespaces/team1/contexts/nope"],
)
def test_unknown_names_are_404(api: ApiClient, path: str) -> None:
    response = api.get(path)

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_unknown_endpoint_is_a_json_404(api: ApiClient) -> None:
    response = api.get("/v1/nothing-here")

    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "no such endpoint"}


def test_release_of_unknown_pool_is_404(api: ApiClient) -> None:
    with kept():
        response = api.delete("/v1/sandbox-pools/ghost")

    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": 'sandbox pool "ghost" not found'}


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "Authentication credentials were not provided."),
        ({"Authorization": "Bearer cs_notarealtoken"}, "invalid or revoked token"),
        ({"Authorization": "Bearer"}, "malformed bearer token"),
        ({"Authorization": "Bearer a b"}, "malformed bearer token"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "Authentication credentials were not provided."),
        ({"X-SH-Auth": "cs_notarealtoken"}, "invalid or revoked token"),
        ({"X-SH-Auth": "Bearer cs_x"}, "malformed X-SH-Auth token (send the token alone)"),
        ({"X-SH-Auth": " "}, "malformed X-SH-Auth token (send the token alone)"),
        (
            {"X-SH-Auth": "cs_a", "Authorization": "Basic dXNlcjpwYXNz"},
            "Authorization and X-SH-Auth carry different credentials",
        ),
    ],
)
def test_every_endpoint_needs_a_token(headers: dict[str, str], message: str) -> None:
    client = Client()
    before = everything()
    for method, path in [
        ("get", "/v1/sandbox-pools"),
        ("post", "/v1/sandbox-pools"),
        ("get", "/v1/sandbox-pools/x"),
        ("delete", "/v1/sandbox-pools/x"),
        ("post", "/v1/contexts"),
        ("get", "/v1/namespaces/team1/contexts"),
        ("get", "/api/schema/"),
    ]:
        response = getattr(client, method)(path, headers=headers)
        assert response.status_code == 401, (method, path)
        if path.startswith("/v1/"):
            assert response.json() == {"error": "unauthorized", "message": message}
            assert response["WWW-Authenticate"] == 'Bearer realm="context-service"'
    assert everything() == before


def test_x_sh_auth_is_the_same_credential_as_a_bearer_token() -> None:
    """contextctl sends ``X-SH-Auth: <token>``: the same token, scopes and audit identity."""
    raw = issue_token("contextctl-user", ["allocations"])
    reader_raw = issue_token("reader", ["read"])
    client = Client()

    listed = client.get("/v1/sandbox-pools", headers={"X-SH-Auth": raw})
    both = client.get(
        "/v1/sandbox-pools", headers={"X-SH-Auth": raw, "Authorization": f"Bearer {raw}"}
    )
    with kept():
        refused = client.post(
            "/v1/sandbox-pools",
            '{"name": "x", "replicas": 1}',
            content_type="application/json",
            headers={"X-SH-Auth": reader_raw},
        )

    assert (listed.status_code, listed.json()) == (200, {"items": []})
    assert (both.status_code, both.json()) == (200, {"items": []})
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "forbidden",
        "message": "this credential lacks the scope this endpoint needs",
    }


def test_two_different_tokens_in_one_request_are_refused() -> None:
    first = issue_token("first", ["allocations"])
    second = issue_token("second", ["admin"])

    with kept():
        response = Client().post(
            "/v1/sandbox-pools",
            '{"name": "x", "replicas": 1, "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}',
            content_type="application/json",
            headers={"X-SH-Auth": first, "Authorization": f"Bearer {second}"},
        )

    assert response.status_code == 401
    assert response.json() == {
        "error": "unauthorized",
        "message": "Authorization and X-SH-Auth carry different credentials",
    }
    assert response["WWW-Authenticate"] == 'Bearer realm="context-service"'


def test_revoked_token_stops_working() -> None:
    from contextsvc.core import services
    from contextsvc.core.models import ApiToken

    raw = issue_token("rossoctl", ["allocations"])
    api = ApiClient(raw)
    assert api.get("/v1/sandbox-pools").status_code == 200

    services.api_token_revoke(token=ApiToken.objects.get(), actor="user:admin")

    response = api.get("/v1/sandbox-pools")
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": "invalid or revoked token"}


def test_a_token_without_the_scope_is_refused_and_changes_nothing() -> None:
    reader = ApiClient(issue_token("dashboard-reader", ["read"]))

    with kept():
        listed = reader.get("/v1/sandbox-pools")
        created = reader.post("/v1/sandbox-pools", {"name": "x", "replicas": 1})
        released = reader.delete("/v1/sandbox-pools/x")

    assert listed.status_code == 200
    assert listed.json() == {"items": []}
    for response in (created, released):
        assert response.status_code == 403
        assert response.json() == {
            "error": "forbidden",
            "message": "this credential lacks the scope this endpoint needs",
        }


def test_tokens_are_stored_hashed() -> None:
    from contextsvc.core.auth import hash_token
    from contextsvc.core.models import ApiToken

    raw = issue_token("sh", ["allocations"])

    token = ApiToken.objects.get()
    assert token.token_hash == hash_token(raw)
    assert raw not in token.token_hash
    assert token.prefix == raw[:10]
    assert AuditEntry.objects.filter(action="api_token.issue", target="sh").count() == 1


def test_list_filter_refuses_unknown_status(api: ApiClient) -> None:
    response = api.get("/v1/sandbox-pools", status="sleeping")

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": "status must be one of provisioning, ready, failed",
    }


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [("/v1/sandbox-pools", body, message) for body, message in POOL_ERRORS]
    + [("/v1/contexts", body, message) for body, message in CONTEXT_ERRORS],
)
def test_every_validation_error_over_http(
    api: ApiClient, path: str, body: dict[str, Any], message: str
) -> None:
    with kept():
        response = api.post(path, body)

    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "message": message}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "a\x00b", "replicas": 1}, 'field "name" contains a NUL character'),
        (
            {"name": "a", "replicas": 1, "profile": "p\x00"},
            'field "profile" contains a NUL character',
        ),
        (
            {"name": "a", "replicas": 1, "workspace": {"claimName": "d\x00", "readOnly": True}},
            'field "workspace.claimName" contains a NUL character',
        ),
        (
            {"name": "a", "replicas": 1, "x\x00": 1},
            "a field name contains a NUL character: 'x\\x00'",
        ),
    ],
)
def test_nul_characters_in_the_body_are_refused(
    api: ApiClient, body: dict[str, Any], message: str
) -> None:
    with kept():
        response = api.post("/v1/sandbox-pools", body)

    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "message": message}


@pytest.mark.parametrize(
    "path",
    [
        "/v1/sandbox-pools/a%00b",
        "/v1/sandbox-pools?status=%00",
        "/v1/namespaces/team%00/contexts",
        "/v1/namespaces/team1/contexts/x%00",
    ],
)
def test_nul_characters_in_the_url_are_refused(api: ApiClient, path: str) -> None:
    response = api.client.get(path, headers=api.headers)

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "message": "the URL must not contain NUL characters",
    }

"""Who may read /metrics: a token with the read scope (either header); a valid token
without it is a 403, as docs/api.md promises (it used to be a 401)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.api import issue_token

pytestmark = pytest.mark.django_db


def test_metrics_need_the_read_scope() -> None:
    reader = issue_token("prometheus", ["read"])
    agent = issue_token("agent", ["agent"])
    client = Client()

    anonymous = client.get("/metrics")
    wrong_scope = client.get("/metrics", headers={"Authorization": f"Bearer {agent}"})
    bad_token = client.get("/metrics", headers={"Authorization": "Bearer cs_nope"})
    by_bearer = client.get("/metrics", headers={"Authorization": f"Bearer {reader}"})
    by_sh_auth = client.get("/metrics", headers={"X-SH-Auth": reader})

    assert (anonymous.status_code, anonymous.json()) == (
        401,
        {"error": "unauthorized", "message": "a token with the read scope is required"},
    )
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="context-service"'
    assert (bad_token.status_code, bad_token.json()) == (
        401,
        {"error": "unauthorized", "message": "invalid or revoked token"},
    )
    assert (wrong_scope.status_code, wrong_scope.json()) == (
        403,
        {"error": "forbidden", "message": "this credential lacks the scope this endpoint needs"},
    )
    assert by_bearer.status_code == 200
    assert by_sh_auth.status_code == 200
    assert by_bearer["Content-Type"].startswith("text/plain")

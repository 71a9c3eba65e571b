"""Who may read /metrics: a token with the read scope (either header); a valid token
without it is a 403, as docs/api.md promises (it used to be a 401)."""

from __future__ import annotations

import pytest
from django.test import Client

from contextsvc.core import services
from tests.support.api import issue_token
from workspaces.tests.factories import AgentWorkspaceFactory

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


def test_with_several_teams_a_teams_read_token_reads_no_metrics_and_a_metrics_one_does() -> None:
    """Issue 45: a team's read token read other teams' agents, names and usage in /metrics
    (a 404 for them through the API)."""
    alpha = services.team_create(name="alpha", actor="system:test")
    AgentWorkspaceFactory.create(agent_type="alpha-agent", team=alpha)
    teams_reader = issue_token("beta-reader", ["read"])  # the default team's
    prometheus = issue_token("prometheus", ["metrics"])
    admin = issue_token("platform", ["admin"])
    client = Client()

    refused = client.get("/metrics", headers={"Authorization": f"Bearer {teams_reader}"})
    answers = {
        name: client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        for name, token in (("metrics", prometheus), ("admin", admin))
    }

    assert (refused.status_code, refused.json()) == (
        403,
        {
            "error": "forbidden",
            "message": "/metrics describes every team; with more than one team it takes a "
            "token with the metrics or admin scope (a team's own objects are read through "
            "the API)",
        },
    )
    for answer in answers.values():
        assert answer.status_code == 200
        assert 'agent="alpha-agent"' in answer.content.decode()
    # The metrics scope reads nothing else.
    listed = client.get("/v1/sandbox-pools", headers={"Authorization": f"Bearer {prometheus}"})
    assert listed.status_code == 403

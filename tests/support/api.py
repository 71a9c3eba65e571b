"""Helpers for API tests: clients with real bearer tokens issued through the services."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable
from typing import Any

from django.test import Client

from contextsvc.core import services
from contextsvc.core.models import Team


def issue_token(
    name: str,
    scopes: Iterable[str],
    agent_types: Iterable[str] | None = None,
    *,
    team: Team | None = None,
) -> str:
    """A client's first token (a client of ``team``, the default team without one). Agent
    clients act for any agent type unless ``agent_types`` says which (the tests of that
    binding do)."""
    scopes = list(scopes)
    if agent_types is None:
        agent_types = ["*"] if "agent" in scopes else []
    client = services.api_client_create(
        name=name, scopes=scopes, agent_types=agent_types, actor="system:test", team=team
    )
    _, raw = services.api_token_issue(client=client, actor="system:test")
    return raw


class ApiClient:
    """A Django test client that always sends ``Authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, params, headers=self.headers)

    def post(
        self,
        path: str,
        body: Any = None,
        *,
        raw: bytes | str | None = None,
        content_type: str = "application/json",
    ) -> Any:
        data = raw if raw is not None else json.dumps(body)
        return self.client.post(path, data, content_type=content_type, headers=self.headers)

    def delete(self, path: str) -> Any:
        return self.client.delete(path, headers=self.headers)


def decide_over_http(
    web_server: str, token: str, request_id: object, body: dict[str, Any]
) -> dict[str, Any]:
    """A reviewer's decision sent to the real web process (for tests of what waits on it)."""
    request = urllib.request.Request(
        f"{web_server}/v1/approvals/{request_id}/decision",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return dict(json.loads(response.read()))


def run_report(request_id: str, command: str, *, duration_ms: int, stdout_bytes: int = 0) -> Any:
    """The body of an executor's POST /v1/runs for an approved request: ``command`` in
    ``ctx-1`` exited 0, nothing truncated."""
    return {
        "requestId": request_id,
        "contextId": "ctx-1",
        "command": command,
        "outcome": "exited",
        "exitStatus": 0,
        "signal": None,
        "durationMs": duration_ms,
        "stdoutBytes": stdout_bytes,
        "stderrBytes": 0,
        "truncated": False,
    }

"""Every v1 validation message over real HTTP, exactly as the Go service wrote it, with the
header contextctl sends, against the real web process; each refusal writes nothing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.api import issue_token
from tests.support.unchanged import kept
from tests.support.v1_messages import CONTEXT_ERRORS, POOL_ERRORS

pytestmark = pytest.mark.django_db(transaction=True)


def post(url: str, token: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-SH-Auth": token},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_every_validation_message_over_http(web_server: str) -> None:
    token = issue_token("contract-check", ["allocations"])
    cases = [("/v1/sandbox-pools", body, message) for body, message in POOL_ERRORS] + [
        ("/v1/contexts", body, message) for body, message in CONTEXT_ERRORS
    ]

    with kept():
        answers = [post(web_server + path, token, body) for path, body, _ in cases]

    expected = [(400, {"error": "invalid_request", "message": m}) for _, _, m in cases]
    assert answers == expected

"""How the client classifies what the API server answers: transient or not, and why."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from contextsvc.kube import client as kube


@pytest.mark.parametrize(
    ("status", "reason", "transient"),
    [
        (503, "ServiceUnavailable", True),
        (429, "TooManyRequests", True),
        (500, "InternalError", True),
        (409, "Conflict", True),
        (409, "AlreadyExists", False),
        (422, "Invalid", False),
        (403, "Forbidden", False),
        (404, "NotFound", False),
    ],
)
def test_error_classification(status: int, reason: str, transient: bool) -> None:
    body = json.dumps({"kind": "Status", "reason": reason, "message": f"it said {reason}"})

    error = kube.kube_error(ApiException(status=status, reason=reason, body=body), "doing x")

    assert (error.status, error.reason, error.transient) == (status, reason, transient)
    assert error.message == f"doing x: {status} it said {reason}"


def test_connection_failures_are_transient() -> None:
    error = kube.kube_error(ConnectionRefusedError("refused"), "listing")

    assert (error.status, error.reason, error.transient) == (None, "Unreachable", True)

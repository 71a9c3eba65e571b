"""A service that manages only some namespaces (``CS_ALLOWED_NAMESPACES``), through the
real web process: anything aimed at another namespace is refused with its reason and
leaves no row, no audit entry and no object anywhere; the managed namespace still works."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from allocations.models import Allocation
from tests.support.api import issue_token
from tests.support.processes import web_process
from tests.support.unchanged import everything

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("service")]


def call(url: str, token: str, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_namespace_the_service_does_not_manage_is_refused_and_nothing_is_written(
    namespace: str, other_namespace: str
) -> None:
    elsewhere = other_namespace
    platform = issue_token("platform", ["allocations", "admin"])
    refusal = f'namespace "{elsewhere}" is not managed by this service'
    before = everything(namespace, elsewhere)

    with web_process("web-allow-list", extra_env={"CS_ALLOWED_NAMESPACES": namespace}) as url:
        attempts = [
            ("POST", "/v1/sandbox-pools", {"name": "far", "replicas": 1, "namespace": elsewhere,
             "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}),
            ("POST", "/v1/contexts", {"name": "far-ctx", "type": "memory", "namespace": elsewhere,
             "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}),
            ("POST", "/v1/agent-workspaces", {"agentType": "far-agent", "namespace": elsewhere}),
            ("POST", "/v1/profiles", {"name": "far-pool", "image": "busybox:1.36",
             "warmPool": {"min": 0, "max": 1, "namespace": elsewhere}}),
        ]  # fmt: skip
        answers = [call(url, platform, *attempt) for attempt in attempts]
        after = everything(namespace, elsewhere)
        allowed = call(
            url,
            platform,
            "POST",
            "/v1/sandbox-pools",
            {"name": "near", "replicas": 1, "namespace": namespace,
             "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}},
        )  # fmt: skip

    assert [status for status, _ in answers] == [400, 400, 400, 400]
    assert [body["message"] for _, body in answers] == [
        refusal,
        refusal,
        refusal,
        f"warmPool: {refusal}",
    ]
    assert after == before
    assert allowed[0] == 201
    assert list(Allocation.objects.values_list("name", "namespace")) == [("near", namespace)]

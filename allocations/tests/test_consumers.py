"""Readiness pushed (allocations/consumers.py) against the real web process, worker, watcher
and cluster: a GET that waits for the pool to change, and the stream of pool changes that
a client resumes from its cursor."""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from allocations.models import Phase
from allocations.tests.factories import AllocationFactory
from tests.support.api import issue_token
from tests.support.kube import wait_for_phase

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]


def request(url: str, method: str, path: str, token: str | None, body: Any = None) -> Any:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=90)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        connection.close()


def pool(name: str, namespace: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "namespace": namespace,
        "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"},
    }


class Stream:
    """``GET /v1/sandbox-pools?watch=1``, read line by line on a thread of its own."""

    def __init__(self, url: str, token: str, since: str | None = None) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        path = "/v1/sandbox-pools?watch=1" + (f"&since={since}" if since is not None else "")
        self.connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        self.response = self.connection.getresponse()
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.response:
                self.lines.put(json.loads(raw))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            return

    def until(self, predicate: Any, timeout: float = 60) -> list[dict[str, Any]]:
        """Every line read until (and with) the first one ``predicate`` accepts."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            seen.append(line)
            if predicate(line):
                return seen

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def token() -> str:
    return issue_token("sh", ["allocations"])


@pytest.fixture
def stream_of(web_server: str, token: str) -> Iterator[Any]:
    opened: list[Stream] = []

    def open_stream(since: str | None = None) -> Stream:
        opened.append(Stream(web_server, token, since))
        return opened[-1]

    yield open_stream
    for stream in opened:
        stream.close()


@pytest.mark.usefixtures("service")
def test_a_waiting_get_answers_when_the_pool_changes(
    web_server: str, token: str, namespace: str
) -> None:
    created = request(web_server, "POST", "/v1/sandbox-pools", token, pool("pushed", namespace))
    assert (created[0], created[1]["status"]) == (201, "provisioning")

    # A caller waits, and each answer is a change of what it last saw, until ready.
    seen = [created[1]]
    while seen[-1]["status"] != "ready" and len(seen) < 5:
        status, waited = request(web_server, "GET", "/v1/sandbox-pools/pushed?wait=60", token)
        assert status == 200
        assert waited != seen[-1]
        seen.append(waited)

    waited = seen[-1]
    assert (waited["status"], waited["readyReplicas"]) == ("ready", 1)
    assert waited == request(web_server, "GET", "/v1/sandbox-pools/pushed", token)[1]
    # Ready is where a waiting caller stops: asked again, it answers at once.
    assert request(web_server, "GET", "/v1/sandbox-pools/pushed?wait=60", token) == (200, waited)


def test_a_waiting_get_of_an_unchanged_pool_answers_when_its_time_is_up(
    web_server: str, token: str
) -> None:
    AllocationFactory.create(name="slow", namespace="serverless-harness", phase=Phase.PROVISIONING)

    status, body = request(web_server, "GET", "/v1/sandbox-pools/slow?wait=1", token)

    assert (status, body) == (
        200,
        {
            "name": "slow",
            "status": "provisioning",
            "replicas": 1,
            "readyReplicas": 0,
            "sandboxSelector": "context.rossoctl.io/pool=slow",
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"},
        },
    )
    assert request(web_server, "GET", "/v1/sandbox-pools/slow?wait=soon", token) == (
        400,
        {"error": "invalid_request", "message": "wait must be a number of seconds"},
    )
    assert request(web_server, "GET", "/v1/sandbox-pools/absent?wait=1", token) == (
        404,
        {"error": "not_found", "message": 'sandbox pool "absent" not found'},
    )
    assert request(web_server, "GET", "/v1/sandbox-pools/slow?wait=1", None)[0] == 401
    agent = issue_token("agent", ["agent"])
    assert request(web_server, "GET", "/v1/sandbox-pools/slow?wait=1", agent)[0] == 403


@pytest.mark.usefixtures("service")
def test_the_stream_shows_every_change_and_resumes_from_its_cursor(
    web_server: str, token: str, namespace: str, stream_of: Any
) -> None:
    AllocationFactory.create(name="before", namespace=namespace, phase=Phase.READY)
    stream = stream_of()
    # First every live pool, then the stream's cursor.
    [first] = stream.until(lambda line: True)
    assert (first["type"], first["pool"]["name"], first["pool"]["status"]) == (
        "upsert",
        "before",
        "ready",
    )

    assert (
        request(web_server, "POST", "/v1/sandbox-pools", token, pool("live", namespace))[0] == 201
    )
    seen = stream.until(lambda line: line.get("pool", {}).get("status") == "ready")
    assert {line["pool"]["name"] for line in seen} == {"live"}
    assert seen[0]["pool"]["status"] == "provisioning"
    cursor = seen[-1]["cursor"]
    stream.close()

    # While nobody listens: one pool is released, another created.
    assert request(web_server, "DELETE", "/v1/sandbox-pools/live", token)[0] == 204
    assert (
        request(web_server, "POST", "/v1/sandbox-pools", token, pool("later", namespace))[0] == 201
    )
    wait_for_phase("later", Phase.READY, timeout=90)

    resumed = stream_of(since=cursor)
    # Each pool comes once, as it is now, in the order of its last change: "live" was last
    # changed when its release finished, which may be after "later" became ready.
    wanted = {("delete", "live"), ("upsert", "later", "ready")}
    found: set[tuple[str, ...]] = set()

    def seen_both(line: dict[str, Any]) -> bool:
        if line["type"] == "delete":
            found.add((line["type"], line["name"]))
        elif line["type"] == "upsert":
            found.add((line["type"], line["pool"]["name"], line["pool"]["status"]))
        return wanted <= found

    lines = resumed.until(seen_both)
    # Each change once, and "before" (unchanged since the cursor) not at all.
    assert sorted(
        (line["type"], line["name"] if line["type"] == "delete" else line["pool"]["name"])
        for line in lines
    ) == [("delete", "live"), ("upsert", "later")]
    assert {"type": "delete", "name": "live", "namespace": namespace} in [
        {key: line[key] for key in ("type", "name", "namespace")}
        for line in lines
        if line["type"] == "delete"
    ]
    assert all(line["cursor"] != cursor for line in lines)


def test_a_stream_with_a_cursor_that_is_not_one_is_refused(web_server: str, token: str) -> None:
    assert request(web_server, "GET", "/v1/sandbox-pools?watch=1&since=x1", token) == (
        400,
        {"error": "invalid_request", "message": "since must be a cursor from this stream"},
    )
    # A snapshot PostgreSQL would refuse is refused before it reaches it.
    assert request(web_server, "GET", "/v1/sandbox-pools?watch=1&since=820:812:", token) == (
        400,
        {"error": "invalid_request", "message": "since must be a cursor from this stream"},
    )
    assert request(web_server, "GET", "/v1/sandbox-pools?watch=1", None)[0] == 401


def raw_get(url: str, path: str, token: str) -> tuple[int, dict[str, str], bytes]:
    """(status, headers by lowercase name, the body's bytes) of a GET."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=90)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("wait", ["NaN", "nan", "-nan", "%2BNaN", "inf", "-Infinity"])
def test_a_wait_that_is_not_a_finite_number_is_refused(
    web_server: str, token: str, wait: str
) -> None:
    """Issue 45: NaN passed the clamp (every comparison with it is false) and was a 500."""
    AllocationFactory.create(name="slow", namespace="serverless-harness", phase=Phase.PROVISIONING)
    refused = (400, {"error": "invalid_request", "message": "wait must be a number of seconds"})

    assert request(web_server, "GET", f"/v1/sandbox-pools/slow?wait={wait}", token) == refused
    approver = issue_token("approver", ["approver"])
    missing = "/v1/approvals/00000000-0000-0000-0000-000000000000"
    assert request(web_server, "GET", f"{missing}?wait={wait}", approver) == refused


def test_a_waiting_gets_body_is_byte_for_byte_the_gets(web_server: str, token: str) -> None:
    """Issue 45: the long-poll wrote JSON with spaces after its separators; docs/api.md says
    its body is exactly GET's."""
    AllocationFactory.create(name="slow", namespace="serverless-harness", phase=Phase.PROVISIONING)

    plain = raw_get(web_server, "/v1/sandbox-pools/slow", token)
    waited = raw_get(web_server, "/v1/sandbox-pools/slow?wait=0.1", token)

    assert (plain[0], waited[0]) == (200, 200)
    assert waited[2] == plain[2]
    assert plain[2].startswith(b'{"name":"slow","status":"provisioning",')
    assert (waited[1]["content-type"], plain[1]["content-type"]) == (
        "application/json",
        "application/json",
    )

"""Bad input in every path parameter of every API route, over real HTTP: path traversal,
NUL, an overlong value and bytes that are not UTF-8, with every method. Writes must be
refused with a clear 4xx, nothing may be a 5xx, and nothing is written."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.support.api import issue_token
from tests.support.unchanged import rows

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]

BAD_VALUES = {
    "traversal": "..%2F..%2Fetc%2Fpasswd",
    "dot-dot": "..",
    "nul": "a%00b",
    "overlong": "a" * 5000,
    "not utf-8": "%FF%FEx",
    "raw not utf-8": "\udcff\udcfe",  # sent as the bytes FF FE
}
METHODS = ("GET", "POST", "PUT", "DELETE")
REFUSALS = {400, 401, 403, 404, 405, 409, 413, 414}
PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")


def routes(patterns: list[Any] | None = None, prefix: str = "") -> Iterator[str]:
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and route.startswith("v1/") and "<" in route:
            yield route


def send(url: str, method: str, path: bytes, token: str) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        connection.putrequest(method, "x", skip_accept_encoding=True)
        # putrequest checks the target; the raw bytes go out as they are.
        connection._buffer[0] = method.encode() + b" " + path + b" HTTP/1.1"  # type: ignore[attr-defined]
        connection.putheader("Authorization", f"Bearer {token}")
        connection.putheader("Content-Type", "application/json")
        body = b"{}" if method in ("POST", "PUT") else b""
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        return connection.getresponse().status
    finally:
        connection.close()


def test_every_path_parameter_refuses_bad_input_without_a_5xx_or_a_write(
    web_server: str,
) -> None:
    token = issue_token(
        "platform", ["admin", "allocations", "approver", "agent", "read"], agent_types=["*"]
    )
    found = sorted(set(routes()))
    before = rows()
    answers: dict[tuple[str, str, str], int] = {}
    for route in found:
        for what, value in BAD_VALUES.items():
            raw = "/" + PARAMETER.sub(value, route)
            path = raw.encode("utf-8", "surrogateescape")
            for method in METHODS:
                answers[(route, what, method)] = send(web_server, method, path, token)

    server_errors = {key: status for key, status in answers.items() if status >= 500}
    assert server_errors == {}
    # A read may answer (a list under a namespace that cannot exist is empty, as the v1
    # contract's list is); every write must be refused.
    odd = {
        key: status
        for key, status in answers.items()
        if status not in REFUSALS and not (key[2] == "GET" and status == 200)
    }
    assert odd == {}
    assert rows() == before
    # Every parameterised route of the API was tried.
    assert len(found) >= 12

"""A stand-in for the Go ``contextctl`` CLI that behaves as it does, call by call.

Written from its documented behaviour (../shared/reference/v1-api.md, "Authentication as
the real clients send it") so that the tests can drive this service exactly as every
existing ``contextctl`` user does, without a Go toolchain:

- the token goes in ``X-SH-Auth: <token>`` (no scheme) and nothing else; ``Content-Type:
  application/json`` only on requests with a body; Go's ``User-Agent`` and
  ``Accept-Encoding: gzip``;
- request bodies are what Go's ``json.Marshal`` makes of its structs: fields in struct
  order, ``size`` and ``accessMode`` always present, the others omitted when empty;
  ``--shared`` with ``-n 1`` asks for 2 replicas;
- responses are decoded into the Go structs (unknown fields dropped, a type mismatch is
  an error), and ``--json`` prints that struct again, two-space indented;
- on a non-2xx answer it prints the body's ``message``, or ``context service returned
  <status line>``, to stderr and exits 1; ``wait`` polls GET every 2 seconds until
  ``ready`` (default timeout 2 minutes).

Every HTTP exchange is recorded in ``calls`` so tests can assert what went over the wire.
"""

from __future__ import annotations

import gzip
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import responses
from typing import Any

GO_USER_AGENT = "Go-http-client/1.1"
WAIT_INTERVAL = 2.0
DEFAULT_WAIT_TIMEOUT = 120.0


class ContextctlError(Exception):
    """What contextctl prints after ``contextctl: `` before exiting 1."""


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int
    response: Any
    at: float


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


# Go struct fields (json name, Go type, omitempty) in declaration order.
_WORKSPACE_FIELDS: tuple[tuple[str, type, bool], ...] = (
    ("size", str, False),
    ("accessMode", str, False),
    ("storageClass", str, True),
    ("claimName", str, True),
    ("readOnly", bool, True),  # *bool: omitted when nil, printed when false
)
_POOL_FIELDS: tuple[tuple[str, type, bool], ...] = (
    ("name", str, False),
    ("status", str, False),
    ("replicas", int, False),
    ("readyReplicas", int, False),
    ("sandboxSelector", str, False),
    ("warmPoolRef", str, True),
)


def _go_decode(value: Any, fields: tuple[tuple[str, type, bool], ...], where: str) -> dict:
    """Decode into a Go struct: known fields only, zero values for missing ones, and the
    decoder's error for a type mismatch (null leaves the zero value, as in Go)."""
    if not isinstance(value, dict):
        raise ContextctlError(f"json: cannot unmarshal {type(value).__name__} into Go value")
    decoded: dict[str, Any] = {}
    for name, go_type, _ in fields:
        raw = value.get(name)
        if raw is None:
            decoded[name] = None if go_type is bool else go_type()
            continue
        if go_type is int and (type(raw) is not int):
            raise ContextctlError(f"json: cannot unmarshal into Go struct field {where}.{name}")
        if go_type is not int and type(raw) is not go_type:
            raise ContextctlError(f"json: cannot unmarshal into Go struct field {where}.{name}")
        decoded[name] = raw
    return decoded


def _go_encode(value: dict[str, Any], fields: tuple[tuple[str, type, bool], ...]) -> dict:
    encoded: dict[str, Any] = {}
    for name, go_type, omitempty in fields:
        item = value.get(name)
        if omitempty and (item is None or (go_type is not bool and not item)):
            continue
        encoded[name] = item if item is not None else go_type()
    return encoded


def decode_pool(body: Any) -> dict[str, Any]:
    pool = _go_decode(body, _POOL_FIELDS, "Pool")
    pool["workspace"] = _go_decode(body.get("workspace") or {}, _WORKSPACE_FIELDS, "Pool.workspace")
    return pool


def encode_pool(pool: dict[str, Any]) -> dict[str, Any]:
    encoded = _go_encode(pool, _POOL_FIELDS[:5])
    if pool.get("warmPoolRef"):
        encoded["warmPoolRef"] = pool["warmPoolRef"]
    encoded["workspace"] = _go_encode(pool["workspace"], _WORKSPACE_FIELDS)
    return encoded


def _short_mode(mode: str) -> str:
    return mode.replace("ReadWriteMany", "RWX").replace("ReadWriteOnce", "RWO")


def pool_line(pool: dict[str, Any]) -> str:
    summary = (
        f"warm pool {pool['warmPoolRef']}"
        if pool.get("warmPoolRef")
        else f"{pool['workspace']['size']} {_short_mode(pool['workspace']['accessMode'])}"
    )
    return (
        f"{pool['name']}: {pool['status']} ({pool['readyReplicas']}/{pool['replicas']} ready), "
        f"{summary}, selector {pool['sandboxSelector']}"
    )


@dataclass
class Contextctl:
    base_url: str
    token: str = ""
    storage_class: str = ""  # $CS_STORAGE_CLASS
    calls: list[Call] = field(default_factory=list)
    sleep: Any = time.sleep

    # --- HTTP, as internal/client does it -------------------------------------------------------

    def _do(self, method: str, path: str, body: Any = None) -> Any:
        data = None
        headers = {"User-Agent": GO_USER_AGENT, "Accept-Encoding": "gzip"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["X-SH-Auth"] = self.token
        request = urllib.request.Request(
            self.base_url.rstrip("/") + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw, encoding = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, raw, encoding = error.code, error.read(), error.headers
        if encoding.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = None
        self.calls.append(Call(method, path, headers, body, status, decoded, time.monotonic()))
        if not 200 <= status < 300:
            message = decoded.get("message") if isinstance(decoded, dict) else None
            if isinstance(message, str) and message:
                raise ContextctlError(message)
            raise ContextctlError(f"context service returned {status} {responses.get(status, '')}")
        return decoded

    # --- Commands ---------------------------------------------------------------------------------

    def run(self, *args: str) -> Result:
        out: list[str] = []
        try:
            self._command(list(args), out)
        except ContextctlError as error:
            return Result(1, "".join(out), f"contextctl: {error}\n")
        return Result(0, "".join(out), "")

    def _command(self, args: list[str], out: list[str]) -> None:
        command, rest = args[0], args[1:]
        if command == "health":
            self._do("GET", "/healthz")
            out.append("ok\n")
        elif command == "create":
            self._create(rest, out)
        elif command == "get":
            name, flags = _parse(rest, booleans={"json"})
            pool = decode_pool(self._do("GET", f"/v1/sandbox-pools/{name}"))
            out.append(_print_pool(pool, json_output="json" in flags))
        elif command == "wait":
            name, flags = _parse(rest, values={"t"})
            self._wait(name, _duration(flags.get("t", "2m")), out)
        elif command in ("rm", "delete"):
            name, _ = _parse(rest)
            self._do("DELETE", f"/v1/sandbox-pools/{name}")
            out.append(f"deleted {name}\n")
        else:
            raise ContextctlError(f"unknown command {command!r}; run 'contextctl help'")

    def _create(self, args: list[str], out: list[str]) -> None:
        flags = _parse(args, **_CREATE_FLAGS)[1]
        pool = decode_pool(self._do("POST", "/v1/sandbox-pools", self.create_body(args)))
        out.append(_print_pool(pool, json_output="json" in flags))

    def create_body(self, args: list[str]) -> dict[str, Any]:
        """The body ``contextctl create ARGS`` sends (no request is made)."""
        name, flags = _parse(args, **_CREATE_FLAGS)
        replicas = int(flags.get("n", "1"))
        workspace: dict[str, Any] = {
            "size": flags.get("s", "1Gi"),
            "accessMode": "ReadWriteOnce",
            "storageClass": flags.get("c", self.storage_class),
        }
        warm_pool = flags.get("warm-pool", "")
        if warm_pool:
            for option in ("shared", "claim", "read-only", "read-write", "s", "c"):
                if option in flags:
                    raise ContextctlError(f"--warm-pool cannot be combined with --{option}")
            workspace = {}
        elif flags.get("claim"):
            if ("read-only" in flags) == ("read-write" in flags):
                raise ContextctlError("--claim requires exactly one of --read-only or --read-write")
            workspace = {"claimName": flags["claim"], "readOnly": "read-only" in flags}
        elif "read-only" in flags or "read-write" in flags:
            raise ContextctlError("--read-only and --read-write require --claim")
        elif "shared" in flags:
            workspace["accessMode"] = "ReadWriteMany"
            if replicas == 1:
                replicas = 2
        body: dict[str, Any] = {"name": name, "replicas": replicas}
        if warm_pool:
            body["warmPoolRef"] = warm_pool
        body["workspace"] = _go_encode(workspace, _WORKSPACE_FIELDS)
        return body

    def _wait(self, name: str, timeout: float, out: list[str]) -> None:
        deadline = time.monotonic() + timeout
        while True:
            pool = decode_pool(self._do("GET", f"/v1/sandbox-pools/{name}"))
            out.append(
                f"{pool['name']}: {pool['status']} ({pool['readyReplicas']}/{pool['replicas']} ready)\n"
            )
            if pool["status"] == "ready":
                return
            if time.monotonic() + WAIT_INTERVAL > deadline:
                raise ContextctlError(f"timed out waiting for {name}")
            self.sleep(WAIT_INTERVAL)


_CREATE_FLAGS: dict[str, set[str]] = {
    "values": {"n", "s", "c", "claim", "warm-pool"},
    "booleans": {"shared", "read-only", "read-write", "json"},
}


def _print_pool(pool: dict[str, Any], *, json_output: bool) -> str:
    if json_output:
        return json.dumps(encode_pool(pool), indent=2) + "\n"
    return pool_line(pool) + "\n"


def _duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    raise ContextctlError(f'invalid value "{text}" for flag -t: parse error')


def _parse(
    args: list[str], *, values: set[str] | None = None, booleans: set[str] | None = None
) -> tuple[str, dict[str, str]]:
    """Go's flag package after contextctl's tweak: a leading name moves to the end, flags
    take one or two dashes, ``-x=v`` or ``-x v``, and parsing stops at the first operand."""
    values, booleans = values or set(), booleans or set()
    if len(args) > 1 and not args[0].startswith("-"):
        args = [*args[1:], args[0]]
    flags: dict[str, str] = {}
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] not in ("-", "--"):
        option = args[index].lstrip("-")
        option, has_value, value = option.partition("=")
        if option in booleans:
            flags[option] = "true"
        elif option in values:
            if not has_value:
                index += 1
                value = args[index]
            flags[option] = value
        else:
            raise ContextctlError(f"flag provided but not defined: -{option}")
        index += 1
    operands = args[index + (1 if index < len(args) and args[index] == "--" else 0) :]
    if len(operands) != 1:
        raise ContextctlError("exactly one pool name is required")
    return operands[0], flags

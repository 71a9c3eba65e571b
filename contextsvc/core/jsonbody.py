"""Strict JSON request bodies, as the v1 contract wants them.

The body is read whatever the Content-Type says (the Go service did the same, and its
callers rely on it), limited to 1 MiB, and refused when it is not one JSON object, has a
duplicate key (two values for one field is ambiguous, so neither is trusted), or carries
NaN/Infinity, which are not JSON. Strings holding NUL are refused too: PostgreSQL cannot
store them, and no name, path or command a caller means contains one.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from contextsvc.core.errors import InvalidRequest

MAX_BODY_BYTES = 1024 * 1024
TOO_BIG = "request body must not exceed 1 MiB"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidRequest(f"duplicate JSON field {key!r}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise InvalidRequest(f"malformed JSON: {name} is not a JSON value")


def read_json_object(request: HttpRequest) -> dict[str, Any]:
    try:
        raw = request.body
    except RequestDataTooBig:
        raise InvalidRequest(TOO_BIG) from None
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidRequest(TOO_BIG)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("malformed JSON: the body is not UTF-8") from None
    if not text.strip():
        raise InvalidRequest("malformed JSON: the body is empty")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InvalidRequest("malformed JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise InvalidRequest("the body must be a JSON object")
    _reject_nul(value, "")
    return value


def _reject_nul(value: Any, where: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidRequest(f'field "{where}" contains a NUL character')
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else key
            if "\x00" in key:
                raise InvalidRequest(f"a field name contains a NUL character: {path!r}")
            _reject_nul(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _reject_nul(item, f"{where}[{index}]")


def reject_unknown_fields(
    obj: dict[str, Any], known: set[str] | frozenset[str], where: str = ""
) -> None:
    """Name the first unknown field in the body's order, as the Go service's strict decoder
    did (it stopped at the first one it met)."""
    unknown = [key for key in obj if key not in known]
    if unknown:
        raise InvalidRequest(f'unknown field "{where}{unknown[0]}"')


# --- Fields ---------------------------------------------------------------------------------
# One reading of a field for every API: absent and null are the same (Go's zero value), and
# the JSON type must be exact (in Python ``True`` is an int; in JSON true is no integer).

_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    dict: "an object",
    list: "an array",
}


def field(
    body: dict[str, Any],
    key: str,
    expected: type,
    *,
    where: str = "",
    required: bool = False,
    described: str = "",
) -> Any:
    """The value of ``key`` (``None`` when absent or null) if it is of the JSON type
    ``expected``; ``where`` prefixes the name in messages (``workspace.``)."""
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidRequest(f"{where}{key} is required")
        return None
    if type(value) is not expected:
        raise InvalidRequest(f"{where}{key} must be {described or _TYPE_NAMES[expected]}")
    return value


def text(body: dict[str, Any], key: str, *, required: bool = False) -> str:
    """A string field, ``""`` when absent; ``required`` refuses the empty string too."""
    value: str = field(body, key, str) or ""
    if required and not value:
        raise InvalidRequest(f"{key} is required")
    return value


def integer(
    body: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    value: int | None = field(body, key, int, required=required)
    if value is not None and (
        (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
    ):
        raise InvalidRequest(f"{key} must be between {minimum} and {maximum}")
    return value

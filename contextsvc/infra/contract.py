"""Each endpoint's request contract, declared once: the parser and the OpenAPI document
both come from it.

A ``Body`` lists an object's ``Field``s (JSON type, whether the document requires it, its
JSON Schema constraints, the contract's message when it fails them). ``Body.decode`` reads a
request body as the Go service's strict decoder did (unknown fields first, then each field's
JSON type); ``Field.check`` applies the field's own constraints with its message, so what the
document promises is what the parser takes; ``Body.serializer()`` is the same object as a DRF
serializer for drf-spectacular (each field's schema verbatim). ``Query`` does the same for a
query parameter. An app's declarations live beside its views (allocations/v1.py,
approvals/contract.py, profiles/v1.py, workspaces/api.py), and the views call them in the
contract's order of checks.

Bodies themselves are read whatever the Content-Type says (the Go service did the same, and
its callers rely on it), limited to 1 MiB, and refused when they are not one JSON object,
have a duplicate key (two values for one field is ambiguous, so neither is trusted), or carry
NaN/Infinity, which are not JSON. Strings holding NUL are refused too: PostgreSQL cannot
store them, and no name, path or command a caller means contains one.
"""

from __future__ import annotations

import builtins
import copy
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from functools import cache
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from contextsvc.infra.errors import InvalidRequest

MAX_BODY_BYTES = 1024 * 1024
# The document's words for "no NUL character" in a string without a pattern of its own.
NO_NUL = r"^[^\x00]*$"
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
    float: "a number",
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


# --- Declared fields -------------------------------------------------------------------------

_JSON_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}


@dataclass(frozen=True)
class Field:
    """One field of a request object.

    ``schema`` holds its JSON Schema constraints (pattern, maxLength, minimum, maximum, enum,
    format); unless ``test`` is given, ``check`` refuses a value that breaks them with
    ``message``, so the document and the parser cannot disagree. ``test`` replaces them for a
    rule no schema keyword says (a Kubernetes quantity is positive); the schema then only
    describes it. ``required`` and ``nullable`` are the document's words: absent and null are
    one thing to the parser (Go's zero value), and each endpoint says in its order what a
    missing field means."""

    name: str
    type: type = str
    required: bool = False
    nullable: bool = False  # a required field that may be null (optional ones always may)
    help: str = ""
    schema: Mapping[str, Any] = dataclass_field(default_factory=dict)
    message: str = ""
    test: Callable[[Any], bool] | None = None
    body: Body | None = None  # a nested object
    described: str = ""  # the JSON type in a decoding message, when not the usual words
    # JSON Schema counts 2.0 as an integer, and so does the document: such a number is read
    # as one, except in the v1 contract's own fields, which Go's decoder refused it for.
    whole_floats: bool = True
    # The document's view when the parser's is not enough (a serializer instance: a choice
    # of objects another module parses).
    document: Any = None
    # In a response: the field's value for the object shown (``Body.render``), and when a
    # field the v1 contract omits unless it applies is shown (always, without it).
    source: Callable[[Any], Any] | None = None
    shown: Callable[[Any], bool] | None = None
    # In a request: the attribute of the typed request (and the column) its value goes to,
    # for a field kept as it was given; ``echo`` is then the field in the answer.
    column: str = ""

    @classmethod
    def out(
        cls,
        name: str,
        source: Callable[[Any], Any],
        kind: builtins.type = str,
        *,
        shown: Callable[[Any], bool] | None = None,
        **options: Any,
    ) -> Field:
        """A field of a response: ``source`` gives its value, present always or, with
        ``shown``, only when that says so (the document then calls it optional)."""
        return cls(name, kind, required=shown is None, source=source, shown=shown, **options)

    @classmethod
    def out_when_set(
        cls, name: str, source: Callable[[Any], Any], kind: builtins.type = str, **options: Any
    ) -> Field:
        """A response field the v1 contract leaves out while it is empty (Go's
        ``omitempty``): present when ``source`` gives a value."""
        return cls.out(name, source, kind, shown=lambda shown: bool(source(shown)), **options)

    def echo(self, row: Callable[[Any], Any]) -> Field:
        """This request field in a response: its column of ``row(shown)``, present when
        given (the v1 contract's additions are left out when they do not apply)."""
        column = self.column
        return Field.out_when_set(
            self.name, lambda shown: getattr(row(shown), column), self.type, help=self.help
        )

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": _JSON_TYPES[self.type], **self.schema}
        if self.type is int and "format" not in schema:
            schema["format"] = "int64"
        if (
            self.type is str
            and self.source is None
            and "pattern" not in schema
            and "enum" not in schema
        ):
            schema["pattern"] = NO_NUL  # refused in every request's string (read_json_object)
        return schema

    def ok(self, value: Any) -> bool:
        """Whether a present value keeps to the field's constraints."""
        if self.test is not None:
            return self.test(value)
        schema = self.schema
        if "enum" in schema and value not in schema["enum"]:
            return False
        if isinstance(value, str):
            if len(value) > schema.get("maxLength", len(value)):
                return False
            if len(value) < schema.get("minLength", 0):
                return False
            if "pattern" in schema and not _regex(schema["pattern"]).search(value):
                return False
        if isinstance(value, int) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                return False
            if "maximum" in schema and value > schema["maximum"]:
                return False
        return True

    def check(self, value: Any) -> Any:
        """``value`` when absent or within the constraints; else the field's message."""
        if value is not None and not self.ok(value):
            raise InvalidRequest(self.message or f"{self.name} is invalid")
        return value

    @classmethod
    def between(cls, name: str, minimum: int, maximum: int, **options: Any) -> Field:
        """An integer field with its bounds, refused as "NAME must be between MIN and MAX"."""
        return cls(
            name,
            int,
            schema={"minimum": minimum, "maximum": maximum},
            message=f"{name} must be between {minimum} and {maximum}",
            **options,
        )

    def need(self, value: Any, where: str = "") -> Any:
        """``value``, refused as missing when it is ``None`` (absent or null)."""
        if value is None:
            raise InvalidRequest(f"{where}{self.name} is required")
        return value

    def read(self, body: dict[str, Any], where: str = "") -> Any:
        """The field's value in ``body`` (``None`` when absent or null), of its JSON type."""
        value = body.get(self.name)
        if (
            self.type is int
            and self.whole_floats
            and isinstance(value, float)
            and value.is_integer()
        ):
            return int(value)
        return field(body, self.name, self.type, where=where, described=self.described)

    def text(self, body: dict[str, Any], *, checked: bool = False) -> str:
        """A string field, ``""`` when absent; a required one refuses the empty string too,
        and ``checked`` holds a given one to the field's constraints."""
        value: str = self.read(body) or ""
        if self.required and not value:
            raise InvalidRequest(f"{self.name} is required")
        if checked and value:
            self.check(value)
        return value

    def integer(self, body: dict[str, Any]) -> int | None:
        """An integer field within its bounds (``None`` when absent; missing when required)."""
        value = self.read(body)
        return self.check(self.need(value) if self.required else value)

    def count(self, body: dict[str, Any]) -> int:
        """A required integer field within its bounds."""
        value: int = self.check(self.need(self.read(body)))
        return value

    def but(self, **changes: Any) -> Field:
        """The same field with some words changed (another variant's view of it)."""
        return replace(self, **changes)


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    # JSON Schema's $ is the end of the string; Python's also matches before a final newline
    # (every $ of ours is an anchor: "^$|^[a-z]...$").
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


@dataclass(frozen=True)
class Body:
    """A JSON object of a request: its fields, in the order their types are checked."""

    component: str  # the document's name for it
    fields: tuple[Field, ...]
    description: str = ""
    # Pairs of fields that may not both be given, with the message when they are (checked
    # where the endpoint's order says; the document says it with "not").
    exclusive: tuple[tuple[str, str, str], ...] = ()
    # Fields of which exactly one must be given (not null), checked where the endpoint's
    # order says (the document says it with "oneOf").
    exactly_one: tuple[str, ...] = ()
    # (field, value, needs, only then): with ``field`` equal to ``value`` the fields of
    # ``needs`` must be given; with ``only then`` they may not be given otherwise. Checked
    # where the endpoint's order says (the document says it with "if"/"then"/"else").
    when: tuple[tuple[str, str, tuple[str, ...], bool], ...] = ()
    # Whether a null counts as given for ``exclusive`` (a PATCH, where null clears a value).
    exclusive_counts_null: bool = False
    # The message for an empty object, when one is refused (a PATCH that changes nothing).
    empty_message: str = ""
    # Keys starting with this are comments, taken and ignored (settings.json's "_").
    comment_prefix: str = ""
    # Whether null means absent for an optional field (decode's reading); a body another
    # module parses may refuse it.
    null_is_absent: bool = True
    # Whether the document refuses keys it does not name: a request's body and an answer
    # are closed; a document the service stores and answers as stored is open (a row
    # written by an earlier version may carry a key since retired).
    closed: bool = True

    def __getitem__(self, name: str) -> Field:
        for item in self.fields:
            if item.name == name:
                return item
        raise KeyError(name)

    @property
    def known(self) -> frozenset[str]:
        return frozenset(item.name for item in self.fields)

    def open(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` once its unknown fields are refused; its fields are then read one by one
        (``Field.read``), in the order an endpoint checks them."""
        reject_unknown_fields(body, self.known)
        return body

    def decode(
        self, body: dict[str, Any], where: str = "", *, only: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Unknown fields (the first in the body's order), then each field's JSON type in
        declaration order (a nested object's unknown fields with its type, its own fields'
        types after this object's): every declared field (of ``only``, if given) is a key of
        the result, ``None`` when absent or null, a nested object a dict of its own."""
        reject_unknown_fields(body, self.known, where)
        values: dict[str, Any] = {}
        nested: list[Field] = []
        for item in self.fields:
            if only and item.name not in only:
                continue
            value = item.read(body, where)
            if item.body is not None:
                value = value or {}
                reject_unknown_fields(value, item.body.known, f"{where}{item.name}.")
                nested.append(item)
            values[item.name] = value
        for item in nested:
            assert item.body is not None
            values[item.name] = item.body.decode(values[item.name], f"{where}{item.name}.")
        return values

    @property
    def renders(self) -> bool:
        """Whether this body makes its JSON; one with no ``source`` describes a document the
        service stores and answers as stored (a nested one is then passed on whole)."""
        return any(item.source is not None for item in self.fields)

    def render(self, obj: Any) -> dict[str, Any]:
        """A response of this shape: each field's ``source`` applied to ``obj`` (a nested
        object, or an array of them, rendered by its own body when that renders), so that
        the body and its document are one declaration. A field whose ``shown`` says no is
        left out."""
        rendered: dict[str, Any] = {}
        for item in self.fields:
            if item.source is None or (item.shown is not None and not item.shown(obj)):
                continue
            value = item.source(obj)
            if item.body is not None and item.body.renders and value is not None:
                if item.type is list:
                    value = [item.body.render(each) for each in value]
                else:
                    value = item.body.render(value)
            rendered[item.name] = value
        return rendered

    def document_keywords(self) -> dict[str, Any]:
        """What a serializer cannot say: the object is closed, and its exclusive pairs."""
        keywords: dict[str, Any] = {"additionalProperties": False} if self.closed else {}
        if self.empty_message:
            keywords["minProperties"] = 1
        if self.comment_prefix:
            keywords["patternProperties"] = {f"^{re.escape(self.comment_prefix)}": {}}
        if self.exclusive:
            keywords["not"] = {"anyOf": [self._given(a, b) for a, b, _ in self.exclusive]}
        if self.exactly_one:
            keywords["oneOf"] = [self._given(name) for name in self.exactly_one]
        conditions = []
        for name, value, needs, only_then in self.when:
            condition: dict[str, Any] = {
                "if": {"properties": {name: {"const": value}}, "required": [name]},
                "then": self._given(*needs),
            }
            if only_then:
                condition["else"] = {"properties": {n: {"type": "null"} for n in needs}}
            conditions.append(condition)
        if conditions:
            keywords["allOf"] = conditions
        return keywords

    def _given(self, *names: str) -> dict[str, Any]:
        """The schema of an object in which every one of ``names`` is given."""
        given: dict[str, Any] = {"required": list(names)}
        if not self.exclusive_counts_null:
            given["properties"] = {name: {"not": {"type": "null"}} for name in names}
        return given

    def serializer(self) -> type[serializers.Serializer]:
        """The object for the document, one component per name."""
        made = _SERIALIZERS.get(self.component)
        if made is None:
            made = _SERIALIZERS[self.component] = _serializer(self)
            _BODIES[self.component] = self
        return made


# --- The document's view ---------------------------------------------------------------------


class SchemaField(serializers.Field):
    """A serializer field that only carries its JSON Schema (requests are parsed by the
    contract, never by DRF): drf-spectacular copies the schema as it is."""

    def __init__(self, schema: dict[str, Any], **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(**kwargs)


class SchemaFieldExtension(OpenApiSerializerFieldExtension):
    target_class = SchemaField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return dict(self.target.schema)


_SERIALIZERS: dict[str, type[serializers.Serializer]] = {}
_BODIES: dict[str, Body] = {}


def document_keywords(component: str) -> dict[str, Any]:
    """The keywords the document adds to a component made from a ``Body`` (none for others);
    the OpenAPI postprocessing hook applies them."""
    # A PATCH body is drf-spectacular's "Patched" copy of the component.
    body = _BODIES.get(component) or _BODIES.get(component.removeprefix("Patched"))
    return body.document_keywords() if body is not None else {}


def _serializer(body: Body) -> type[serializers.Serializer]:
    attrs: dict[str, Any] = {"__doc__": body.description or None}
    for order, item in enumerate(body.fields):
        # Absent and null are one thing to the parser: an optional request field may be
        # null. A response's field left out is absent, never null.
        allow_null = item.nullable or (
            body.null_is_absent and not item.required and item.source is None
        )
        options: dict[str, Any] = {"required": item.required, "allow_null": allow_null}
        if item.help:
            options["help_text"] = item.help
        made: serializers.Field
        if item.document is not None:
            made = copy.deepcopy(item.document)
        elif item.body is not None:
            made = item.body.serializer()(many=item.type is list, **options)
        else:
            schema = item.json_schema()
            if allow_null and "enum" in schema:
                schema["enum"] = [*schema["enum"], None]
            made = SchemaField(schema, **options)
        # DRF orders declared fields by when they were made: the declaration's order.
        setattr(made, "_creation_counter", order)  # noqa: B010 - DRF's private counter
        attrs[item.name] = made
    return type(body.component, (serializers.Serializer,), attrs)


# --- Query parameters ------------------------------------------------------------------------


_YES = ("true", "1", "yes")
_NO = ("false", "0", "no")


@dataclass(frozen=True)
class Query:
    """A query parameter: its document entry and its reading, from one declaration."""

    name: str
    type: type = str
    help: str = ""
    schema: Mapping[str, Any] = dataclass_field(default_factory=dict)
    message: str = ""

    def parameter(self) -> OpenApiParameter:
        schema: dict[str, Any] = {"type": _JSON_TYPES[self.type], **self.schema}
        if self.type is bool:
            # The words taken for yes and no (a query string has no booleans).
            schema = {"type": "string", "enum": [*_YES, *_NO]}
        return OpenApiParameter(self.name, schema, description=self.help)

    def read(self, params: Mapping[str, str], default: Any = None) -> Any:
        """The parameter's value (``default`` when absent), refused with ``message`` when
        it is not of its type or breaks its constraints."""
        raw = params.get(self.name)
        if raw is None:
            return default
        value: Any = raw
        if self.type is int:
            value = _query_integer(raw, self.field)
        elif self.type is bool:
            if raw not in (*_YES, *_NO):
                raise InvalidRequest(self.message or f"{self.name} must be true or false")
            value = raw in _YES
        return self.check(value)

    @property
    def field(self) -> Field:
        return Field(self.name, self.type, schema=self.schema, message=self.message)

    def check(self, value: Any) -> Any:
        """A value read otherwise, held to the parameter's constraints."""
        return self.field.check(value)


def _query_integer(raw: str, spec: Field) -> int:
    if not re.fullmatch(r"-?[0-9]+", raw):
        raise InvalidRequest(spec.message or f"{spec.name} must be an integer")
    return int(raw)

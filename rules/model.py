"""The vocabulary of the rule engine: decisions, operations, rules and evaluations."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from rules.patterns import normalise_host


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Kind(StrEnum):
    SHELL = "shell"
    FILE = "file"
    NETWORK = "network"


class FileAction(StrEnum):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"


class Direction(StrEnum):
    OUTBOUND = "outbound"
    INBOUND = "inbound"


class RuleSyntaxError(ValueError):
    """A settings.json entry that is not a valid rule; the message names the entry."""


class SourcesError(ValueError):
    """A sources.json entry that is not valid; the message names the entry."""


class OperationError(ValueError):
    """An operation payload that cannot be evaluated; ``field`` names the bad field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# --- operations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ShellOperation:
    command: str
    kind: Kind = field(default=Kind.SHELL, init=False)

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "command": self.command}


@dataclass(frozen=True)
class FileOperation:
    action: FileAction
    path: str
    kind: Kind = field(default=Kind.FILE, init=False)

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "action": self.action.value, "path": self.path}


@dataclass(frozen=True)
class NetworkOperation:
    host: str
    url: str | None = None
    direction: Direction = Direction.OUTBOUND
    kind: Kind = field(default=Kind.NETWORK, init=False)

    def to_dict(self) -> dict[str, str]:
        data = {"kind": self.kind.value, "host": self.host, "direction": self.direction.value}
        if self.url is not None:
            data["url"] = self.url
        return data


Operation = ShellOperation | FileOperation | NetworkOperation

_OPERATION_FIELDS = {
    "shell": {"kind", "command"},
    "file": {"kind", "action", "path"},
    "network": {"kind", "host", "url", "direction"},
}
MAX_OPERATION_TEXT = 65_536


def _text_field(data: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise OperationError(name, "is required")
        return None
    if not isinstance(value, str):
        raise OperationError(name, f"must be a string, got {json_type(value)}")
    if len(value) > MAX_OPERATION_TEXT:
        raise OperationError(name, f"is longer than {MAX_OPERATION_TEXT} characters")
    return value


def operation_from_dict(data: Mapping[str, Any]) -> Operation:
    """Build an operation from the HTTP payload, e.g. ``{"kind": "shell", "command": "ls"}``,
    ``{"kind": "file", "action": "read", "path": "/workspace/ctx-1/a.csv"}`` or
    ``{"kind": "network", "host": "pypi.org"}`` / ``{"kind": "network", "url": "https://…"}``.
    """
    if not isinstance(data, Mapping):
        raise OperationError("operation", f"must be an object, got {json_type(data)}")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in _OPERATION_FIELDS:
        raise OperationError("kind", f"must be one of shell, file, network; got {kind!r}")
    unknown = sorted(set(data) - _OPERATION_FIELDS[kind])
    if unknown:
        raise OperationError(unknown[0], f"is not a field of a {kind} operation")
    if kind == "shell":
        command = _text_field(data, "command")
        assert command is not None
        if not command.strip():
            # Nothing to run: approving it would report a success the agent never had.
            raise OperationError("command", "must not be empty or only whitespace")
        return ShellOperation(command=command)
    if kind == "file":
        action = _text_field(data, "action")
        if action not in {a.value for a in FileAction}:
            raise OperationError("action", f"must be read, write or delete; got {action!r}")
        path = _text_field(data, "path")
        assert path is not None
        if not path.strip():
            raise OperationError("path", "must not be empty or only whitespace")
        return FileOperation(action=FileAction(action), path=path)
    direction = _text_field(data, "direction", required=False) or Direction.OUTBOUND.value
    if direction not in {d.value for d in Direction}:
        raise OperationError("direction", f"must be outbound or inbound; got {direction!r}")
    url = _text_field(data, "url", required=False)
    host = _text_field(data, "host", required=False)
    if url is not None:
        url_host = host_of_url(url)
        if url_host is None:
            raise OperationError("url", f"is not an absolute URL with a host: {url!r}")
        if host is not None and normalise_host(host) != url_host:
            raise OperationError("host", f"{host!r} does not match the url's host {url_host!r}")
        host = url_host
    if host is None:
        raise OperationError("host", "is required (or give a url)")
    if not host.strip():
        raise OperationError("host", "must not be empty")
    return NetworkOperation(host=normalise_host(host), url=url, direction=Direction(direction))


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def host_of_url(url: str) -> str | None:
    """The lower-cased host of an absolute URL, or None. ``user@host`` keeps only the host."""
    if not _SCHEME.match(url):
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return normalise_host(host) if host else None


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# --- rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One settings.json entry. ``text`` is the entry as written (what reviewers see);
    ``pattern`` is the specifier with a file rule's trailing ``:*`` removed, or None for a
    rule that matches every operation of its kind (``shell``, ``shell(*)``)."""

    text: str
    kind: Kind
    pattern: str | None
    action: FileAction | None = None
    direction: Direction | None = None

    def __str__(self) -> str:
        return self.text


DEFAULT_WORKSPACE = "/workspace/${CONTEXT_ID}"


@dataclass(frozen=True)
class RuleSet:
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    context_workspace: str | None = None  # None: the default, /workspace/${CONTEXT_ID}
    comments: tuple[tuple[str, str], ...] = ()  # "_comment"-style keys, kept for round trips
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        # Rule sets key the compiled-rules cache on every evaluation: hash them once.
        fields = (self.allow, self.ask, self.deny, self.context_workspace, self.comments)
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash

    def workspace(self, context_id: str) -> str:
        template = self.context_workspace or DEFAULT_WORKSPACE
        return posixpath.normpath(template.replace("${CONTEXT_ID}", context_id))

    def to_json(self) -> dict[str, Any]:
        """The settings.json form this rule set was parsed from."""
        data: dict[str, Any] = dict(self.comments)
        if self.context_workspace is not None:
            data["context_workspace"] = self.context_workspace
        permissions: dict[str, list[str]] = {"allow": [rule.text for rule in self.allow]}
        if self.ask:
            permissions["ask"] = [rule.text for rule in self.ask]
        permissions["deny"] = [rule.text for rule in self.deny]
        data["permissions"] = permissions
        return data


_CONTEXT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,252}\Z")


def check_context_id(context_id: str) -> None:
    """Context ids become directory names; refuse anything that could leave the workspace."""
    if not isinstance(context_id, str) or not _CONTEXT_ID.match(context_id):
        raise OperationError(
            "context_id", f"must be 1-253 of A-Z a-z 0-9 . _ : @ + - ; got {context_id!r}"
        )


# --- evaluation results ---------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """The verdict on one piece of an operation: one simple command of a shell line, one
    file access (a redirection, a path argument) or one network destination.

    ``rule`` is the settings.json entry (as written) that decided, ``sources_entry`` the
    sources.json entry (``package_managers.pip.blocked_packages[1]``) — at most one is set;
    both are None when nothing matched or the part could not be judged (see ``reason``)."""

    kind: Kind
    text: str
    decision: Decision
    reason: str
    rule: str | None = None
    sources_entry: str | None = None
    # Allowed because an enforcing executor contains it (an explicitly allowed interpreter
    # runs code the engine cannot read), not because the engine understood what it does.
    contained: bool = False

    def to_dict(self) -> dict[str, str | bool | None]:
        return {
            "kind": self.kind.value,
            "text": self.text,
            "decision": self.decision.value,
            "rule": self.rule,
            "sources_entry": self.sources_entry,
            "reason": self.reason,
            "contained": self.contained,
        }


@dataclass(frozen=True)
class Evaluation:
    """Any part denied → deny; every part allowed → allow; otherwise ask."""

    decision: Decision
    parts: tuple[Part, ...]
    normalised: str  # the operation as a reviewer should see it, hidden characters escaped
    # A shell command's judged effects (rules.effects), which the executor enforces; not
    # part of the explanation (to_dict), which is what reviewers read.
    effects: dict[str, list[str]] | None = field(default=None, compare=False)
    # A program of it contacts a host of its own (rules.effects.reaches_network).
    reaches_network: bool = field(default=False, compare=False)

    @property
    def deciding_part(self) -> Part | None:
        """The first part with the overall decision (the first deny, the first ask …)."""
        return next((part for part in self.parts if part.decision == self.decision), None)

    @property
    def contained(self) -> bool:
        """Allowed only because the executor contains it: some allowed part is."""
        return self.decision == Decision.ALLOW and any(part.contained for part in self.parts)

    @property
    def rule(self) -> str | None:
        part = self.deciding_part
        return part.rule if part else None

    @property
    def sources_entry(self) -> str | None:
        part = self.deciding_part
        return part.sources_entry if part else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision.value,
            "normalised": self.normalised,
            "rule": self.rule,
            "sources_entry": self.sources_entry,
            "contained": self.contained,
            "parts": [part.to_dict() for part in self.parts],
        }


def combine(parts: list[Part]) -> Decision:
    if any(part.decision == Decision.DENY for part in parts):
        return Decision.DENY
    if parts and all(part.decision == Decision.ALLOW for part in parts):
        return Decision.ALLOW
    return Decision.ASK

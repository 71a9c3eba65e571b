"""settings.json: parse and validate the ``permissions`` rules.

Every error names the offending entry exactly, e.g.
``permissions.allow[3]: "shell(grep" is missing its closing parenthesis``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rules.model import (
    Direction,
    FileAction,
    Kind,
    Rule,
    RuleSet,
    RuleSyntaxError,
    json_type,
)
from rules.patterns import host_pattern_problem
from rules.text import describe, hidden_characters

_KIND_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_KNOWN_VARIABLES = {"WORKSPACE", "CONTEXT_ID"}
LISTS = ("allow", "ask", "deny")
# The keys of settings.json (besides "_" comments); the OpenAPI document lists them too.
SETTINGS_KEYS = ("context_workspace", "permissions")
MAX_RULE_LENGTH = 4096


def _variables_problem(spec: str) -> str | None:
    for name in _VARIABLE.findall(spec):
        if name not in _KNOWN_VARIABLES:
            return f"uses unknown variable ${{{name}}} (known: ${{WORKSPACE}}, ${{CONTEXT_ID}})"
    if "${" in _VARIABLE.sub("", spec):
        return "has an unterminated ${"
    return None


def _balanced(spec: str) -> bool:
    depth = 0
    for char in spec:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _problem(text: str) -> tuple[str, Rule | None]:
    """(problem, None) for an invalid rule, ("", rule) for a valid one."""
    if not text:
        return "is empty", None
    if len(text) > MAX_RULE_LENGTH:
        return f"is longer than {MAX_RULE_LENGTH} characters", None
    hidden = [char for char in text if char in "\n\t"] + hidden_characters(text)
    if hidden:
        return f"contains a control or invisible character ({describe(hidden[0])})", None
    if text != text.strip():
        return "has leading or trailing spaces", None
    open_at = text.find("(")
    if open_at == -1:
        if ")" in text:
            return "has a closing parenthesis without an opening one", None
        kind_name, spec = text, None
    else:
        kind_name = text[:open_at]
        if not text.endswith(")"):
            return "is missing its closing parenthesis", None
        spec = text[open_at + 1 : -1]
    if not _KIND_NAME.match(kind_name):
        return "does not start with a rule kind (shell, file or network)", None
    if kind_name not in {kind.value for kind in Kind}:
        return f'has unknown kind "{kind_name}" (expected shell, file or network)', None
    kind = Kind(kind_name)
    if spec is None or spec == "*":
        return "", Rule(text=text, kind=kind, pattern=None)
    if not spec.strip():
        return "has an empty specifier", None
    if not _balanced(spec):
        return "has unbalanced parentheses", None
    variables = _variables_problem(spec)
    if variables:
        return variables, None
    if kind == Kind.SHELL:
        return "", Rule(text=text, kind=kind, pattern=spec)
    qualifier, colon, rest = spec.partition(":")
    if kind == Kind.FILE:
        if not colon:
            return "needs ACTION:PATH-GLOB, e.g. file(read:${WORKSPACE}/**)", None
        if qualifier not in {action.value for action in FileAction}:
            return f'has unknown file action "{qualifier}" (expected read, write or delete)', None
        # The seed writes deny entries as file(read:/etc/shadow:*): a trailing ":*" is the
        # shell rules' legacy suffix and means nothing more for a path.
        glob = rest[:-2] if rest.endswith(":*") and len(rest) > 2 else rest
        if not glob:
            return "has an empty path glob", None
        return "", Rule(text=text, kind=kind, pattern=glob, action=FileAction(qualifier))
    if not colon:
        return "needs DIRECTION:HOST-PATTERN, e.g. network(outbound:pypi.org)", None
    if qualifier not in {direction.value for direction in Direction}:
        return f'has unknown direction "{qualifier}" (expected outbound or inbound)', None
    host_problem = host_pattern_problem(rest)
    if host_problem:
        return f"has a host pattern that {host_problem}", None
    return "", Rule(text=text, kind=kind, pattern=rest, direction=Direction(qualifier))


def parse_rule(text: str, where: str = "rule") -> Rule:
    """One rule string; ``where`` prefixes the error (``permissions.allow[3]``)."""
    if not isinstance(text, str):
        raise RuleSyntaxError(f"{where}: expected a rule string, got {json_type(text)}")
    problem, rule = _problem(text)
    if rule is None:
        raise RuleSyntaxError(f"{where}: {json.dumps(text)} {problem}")
    return rule


def _comments(data: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    comments = []
    for key, value in data.items():
        if key.startswith("_"):
            if not isinstance(value, str):
                raise RuleSyntaxError(f"{where}.{key}: expected a string, got {json_type(value)}")
            comments.append((key, value))
    return tuple(comments)


def parse_settings(data: object) -> RuleSet:
    """The decoded settings.json. Keys starting with "_" are comments; any other unknown key
    is an error (a misspelt "permision" must not silently drop the deny list)."""
    if not isinstance(data, Mapping):
        raise RuleSyntaxError(f"settings.json: expected an object, got {json_type(data)}")
    for key in data:
        if not isinstance(key, str) or (not key.startswith("_") and key not in SETTINGS_KEYS):
            raise RuleSyntaxError(
                f'settings.json: unknown key "{key}" (expected {", ".join(SETTINGS_KEYS)})'
            )
    workspace = data.get("context_workspace")
    if workspace is not None:
        if not isinstance(workspace, str):
            raise RuleSyntaxError(
                f"context_workspace: expected a string, got {json_type(workspace)}"
            )
        problem = _workspace_problem(workspace)
        if problem:
            raise RuleSyntaxError(f"context_workspace: {json.dumps(workspace)} {problem}")
    permissions = data.get("permissions", {})
    if not isinstance(permissions, Mapping):
        raise RuleSyntaxError(f"permissions: expected an object, got {json_type(permissions)}")
    for key in permissions:
        if key not in LISTS:
            raise RuleSyntaxError(f'permissions: unknown key "{key}" (expected allow, ask, deny)')
    lists: dict[str, tuple[Rule, ...]] = {}
    for name in LISTS:
        entries = permissions.get(name, [])
        if not isinstance(entries, list):
            raise RuleSyntaxError(
                f"permissions.{name}: expected a list of rule strings, got {json_type(entries)}"
            )
        lists[name] = tuple(
            parse_rule(entry, f"permissions.{name}[{index}]") for index, entry in enumerate(entries)
        )
    return RuleSet(
        allow=lists["allow"],
        ask=lists["ask"],
        deny=lists["deny"],
        context_workspace=workspace,
        comments=_comments(data, "settings.json"),
    )


def _workspace_problem(template: str) -> str | None:
    if not template.startswith("/"):
        return "must be an absolute path"
    if "${CONTEXT_ID}" not in template:
        return "must contain ${CONTEXT_ID} so every context gets its own workspace"
    if any(segment in {".", ".."} for segment in template.split("/")):
        return 'must not contain "." or ".." segments'
    if any(char in template for char in "*?[]\\") or hidden_characters(template):
        return "must not contain glob, escape or control characters"
    for name in _VARIABLE.findall(template):
        if name != "CONTEXT_ID":
            return f"may only use ${{CONTEXT_ID}}, not ${{{name}}}"
    return None

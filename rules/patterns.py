"""Pattern languages of the rules: shell command patterns, path globs, host patterns and
git remote globs, compiled to regular expressions.

Two questions are asked of a pattern:

* **certain** — does it match this text? Text whose value is only known at run time (a
  ``$VAR``, a ``$(…)``) is represented by :data:`SENTINEL`, a character no literal in a
  pattern can contain, so only a wildcard can absorb it; a match then holds for every value.
* **possible** — could it match for *some* run-time value? :func:`could_match` answers this
  by intersecting two wildcard sequences. It over-approximates (never says no wrongly), which
  is the safe direction: a possible deny turns ``allow`` into ``ask``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

# Stands for "unknown until run time" in text handed to a certain-match. NUL cannot occur in
# a command (control characters are refused before matching) nor in a rule.
SENTINEL = "\x00"

# One element of a wildcard sequence: a literal character, or STAR ("any string").
STAR = None
Token = str | None

VARIABLES = ("${WORKSPACE}", "${CONTEXT_ID}")
_VARIABLE_SPLIT = re.compile(r"(\$\{WORKSPACE\}|\$\{CONTEXT_ID\})")


def split_variables(spec: str, workspace: str, context_id: str) -> list[tuple[bool, str]]:
    """``spec`` as (is_literal, text) pieces with ``${WORKSPACE}``/``${CONTEXT_ID}`` expanded
    into literal pieces, so a context id can never be read as a wildcard."""
    values = {"${WORKSPACE}": workspace, "${CONTEXT_ID}": context_id}
    pieces: list[tuple[bool, str]] = []
    for piece in _VARIABLE_SPLIT.split(spec):
        if piece in values:
            pieces.append((True, values[piece]))
        elif piece:
            pieces.append((False, piece))
    return pieces


def _merge_stars(tokens: list[Token]) -> tuple[Token, ...]:
    merged: list[Token] = []
    for token in tokens:
        if token is STAR and merged and merged[-1] is STAR:
            continue
        merged.append(token)
    return tuple(merged)


def could_match(pattern: Sequence[Token], text: Sequence[Token]) -> bool:
    """Is there a string matched by both wildcard sequences? (STAR = any string.)"""
    # Fast path for the common pattern shape "literal prefix, then STAR".
    if pattern and pattern[-1] is STAR and STAR not in pattern[:-1]:
        prefix = pattern[:-1]
        for index, char in enumerate(prefix):
            if index >= len(text):
                return False
            if text[index] is STAR:
                return True
            if text[index] != char:
                return False
        return True
    if len(pattern) * len(text) > 200_000:
        return True  # too big to decide cheaply; "possible" is the safe answer
    rows, cols = len(pattern) + 1, len(text) + 1
    reach = [[False] * cols for _ in range(rows)]
    reach[0][0] = True
    for i in range(rows):
        for j in range(cols):
            if not reach[i][j]:
                continue
            p = pattern[i] if i < len(pattern) else ""
            t = text[j] if j < len(text) else ""
            if i < len(pattern) and p is STAR:
                reach[i + 1][j] = True
                if j < len(text):
                    reach[i][j + 1] = True
            if j < len(text) and t is STAR:
                reach[i][j + 1] = True
                if i < len(pattern):
                    reach[i + 1][j] = True
            if i < len(pattern) and j < len(text) and p is not STAR and t is not STAR and p == t:
                reach[i + 1][j + 1] = True
    return reach[-1][-1]


# --- shell command patterns ---------------------------------------------------------------


@dataclass(frozen=True)
class ShellPattern:
    """A compiled ``shell(…)`` specifier. ``program`` is its first word when that word has
    no wildcard (used to index rules by program); ``None`` means "any program"."""

    regex: re.Pattern[str]
    tokens: tuple[Token, ...]
    program: str | None


def shell_spec(spec: str) -> str:
    """The legacy suffix ``:*`` means the same as a trailing `` *``."""
    return spec[:-2] + " *" if spec.endswith(":*") else spec


def compile_shell(spec: str, workspace: str, context_id: str) -> ShellPattern:
    """``*`` matches any string. A space before a ``*`` that ends the pattern (or is followed
    by a space) is a word boundary: ``ls *`` matches ``ls`` and ``ls -la`` but not ``lsof``."""
    pieces = split_variables(shell_spec(spec), workspace, context_id)
    regex: list[str] = []
    tokens: list[Token] = []
    # Flatten to (char, is_wildcard) so boundary detection can look at neighbours.
    chars: list[tuple[str, bool]] = []
    for literal, text in pieces:
        chars.extend((char, not literal and char == "*") for char in text)
    index = 0
    while index < len(chars):
        char, wildcard = chars[index]
        following = chars[index + 1] if index + 1 < len(chars) else None
        after = chars[index + 2] if index + 2 < len(chars) else None
        if char == " " and not wildcard and following is not None and following[1]:
            ends_word = after is None or (after[0] == " " and not after[1])
            if ends_word:
                regex.append("(?: .*)?")
                tokens.append(STAR)  # over-approximation: the space is optional too
                index += 2
                continue
        if wildcard:
            regex.append(".*")
            tokens.append(STAR)
        else:
            regex.append(re.escape(char))
            tokens.append(char)
        index += 1
    first_word: list[str] = []
    for char, wildcard in chars:
        if char == " " and not wildcard:
            break
        if wildcard:
            first_word = []
            break
        first_word.append(char)
    return ShellPattern(
        regex=re.compile("".join(regex), re.DOTALL),
        tokens=_merge_stars(tokens),
        program="".join(first_word) or None,
    )


# --- path globs (gitignore style) -----------------------------------------------------------


@dataclass(frozen=True)
class PathPattern:
    regex: re.Pattern[str]
    tokens: tuple[Token, ...]


# ``*`` and ``?`` stop at "/" and never absorb the sentinel: a sentinel in a path stands for
# "any sub-path", which only ``**`` may cover.
_SEGMENT_CHARS = "[^/\x00]"


def _glob_piece(text: str, regex: list[str], tokens: list[Token], at_start: bool) -> None:
    index = 0
    while index < len(text):
        char = text[index]
        previous_is_slash = (index == 0 and at_start) or (index > 0 and text[index - 1] == "/")
        if char == "\\" and index + 1 < len(text):
            regex.append(re.escape(text[index + 1]))
            tokens.append(text[index + 1])
            index += 2
            continue
        if text.startswith("**", index):
            before_ok = previous_is_slash
            after = text[index + 2 : index + 3]
            if before_ok and after == "/":
                regex.append("(?:.*/)?")  # zero or more directories
                tokens.append(STAR)
                index += 3
                continue
            if before_ok and after == "":
                regex.append(".*")
                tokens.append(STAR)
                index += 2
                continue
            regex.append(f"{_SEGMENT_CHARS}*")  # not a whole segment: same as "*"
            tokens.append(STAR)
            index += 2
            continue
        if char == "*":
            regex.append(f"{_SEGMENT_CHARS}*")
            tokens.append(STAR)
        elif char == "?":
            regex.append(_SEGMENT_CHARS)
            tokens.append(STAR)
        elif char == "[" and text.find("]", index + 2) != -1:
            close = text.find("]", index + 2)
            body = text[index + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            body = body.replace("\\", "\\\\")
            regex.append(f"(?![/\x00])[{body}]")
            tokens.append(STAR)
            index = close + 1
            continue
        else:
            regex.append(re.escape(char))
            tokens.append(char)
        index += 1


def compile_path(glob: str, workspace: str, context_id: str) -> PathPattern:
    """gitignore-style: ``*``/``?``/``[…]`` stay inside one path segment, ``**`` spans
    segments, ``\\`` escapes. An absolute glob is anchored at ``/``; a glob without a slash
    matches a basename at any depth; any other relative glob is relative to the workspace.
    ``dir/**`` and ``dir/`` also cover ``dir`` itself."""
    pieces = split_variables(glob, workspace, context_id)
    flat = "".join(text for _, text in pieces)
    regex: list[str] = []
    tokens: list[Token] = []
    if flat.startswith("/"):
        pass
    elif "/" not in flat.rstrip("/"):
        regex.append("(?:.*/)?")
        tokens.append(STAR)
    else:
        regex.append(re.escape(workspace.rstrip("/") + "/"))
        tokens.extend(workspace.rstrip("/") + "/")
    # A trailing "/**" or "/" covers the directory and everything below it.
    suffix_all = False
    if pieces and not pieces[-1][0]:
        last = pieces[-1][1]
        for ending in ("/**", "/"):
            if last.endswith(ending) and len(flat) > len(ending):
                pieces[-1] = (False, last[: -len(ending)])
                suffix_all = True
                break
    at_start = True
    for literal, text in pieces:
        if literal:
            regex.append(re.escape(text))
            tokens.extend(text)
        else:
            _glob_piece(text, regex, tokens, at_start)
        at_start = False
    if suffix_all:
        regex.append("(?:/.*)?")
        tokens.append(STAR)
    return PathPattern(regex=re.compile("".join(regex), re.DOTALL), tokens=_merge_stars(tokens))


@lru_cache(maxsize=2048)  # a path is matched against every rule of each list
def _bracket_end(path: str, start: int) -> int | None:
    """Where the bracket expression opened at ``start`` closes (bash(1), "Pattern
    Matching"): a "]" first (after "!" or "^") is a member, and "[:alpha:]", "[=a=]" and
    "[.a.]" inside are members whole. None: no closing "]", so "[" is literal."""
    index = start + 1
    if index < len(path) and path[index] in "!^":
        index += 1
    if index < len(path) and path[index] == "]":
        index += 1
    while index < len(path):
        char = path[index]
        if char == "]":
            return index
        if char == "[" and path[index + 1 : index + 2] in {":", "=", "."}:
            close = path.find(path[index + 1] + "]", index + 2)
            if close != -1:
                index = close + 2
                continue
        index += 1
    return None


def glob_tokens(path: str) -> tuple[Token, ...]:
    """A path that may contain shell glob characters as a wildcard sequence (over-approx)."""
    tokens: list[Token] = []
    index = 0
    while index < len(path):
        char = path[index]
        if char in "*?":
            tokens.append(STAR)
        elif char == "[" and (end := _bracket_end(path, index)) is not None:
            tokens.append(STAR)
            index = end
        elif char == SENTINEL:
            tokens.append(STAR)
        else:
            tokens.append(char)
        index += 1
    return _merge_stars(tokens)


# --- hosts and remotes ----------------------------------------------------------------------

_HOST = re.compile(
    r"^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\Z"
)
_IPV6 = re.compile(r"^\[[0-9a-f:.]+\]\Z")


def normalise_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def host_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not ``*``, ``host``, ``*.domain`` — or None when it is fine."""
    if pattern == "*":
        return None
    if pattern != pattern.strip() or pattern != pattern.lower():
        return "must be lower-case without surrounding spaces"
    body = pattern[2:] if pattern.startswith("*.") else pattern
    if "*" in body:
        return "may only use a leading '*.' wildcard"
    if not (_HOST.match(body) or _IPV6.match(body)):
        return "is not a host name"
    return None


def host_matches(pattern: str, host: str) -> bool:
    """``*`` matches every host; ``*.example.com`` matches its subdomains at any depth (not
    ``example.com`` itself); anything else matches the exact host."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern


def compile_url_glob(glob: str) -> re.Pattern[str]:
    """``*`` matches any string (including "/"); everything else is literal."""
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")), re.DOTALL)

"""Shell words as the rule engine sees them, and option scanning for known commands."""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum


class WordKind(Enum):
    LITERAL = "literal"
    GLOB = "glob"  # unquoted * ? [ or {a,b}: the shell expands it to file names/variants
    UNKNOWN = "unknown"  # contains $VAR, $(…), `…` or <(…): value only known at run time

    # Members are singletons compared by identity: hash them the same way, in C (Enum's
    # own __hash__ is Python code; a Word's hash goes through it).
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word with quotes removed (``c"u"rl``, ``'curl'``, ``\\curl`` and
    ``"cu"'rl'`` are all ``curl``, see :func:`scan_word`) and ``$WORKSPACE``/``$CONTEXT_ID``
    expanded. For an UNKNOWN word ``value`` is the source text (``$X``)."""

    value: str
    kind: WordKind = WordKind.LITERAL
    tilde: bool = False  # starts with ~ (home directory: unknown here)
    brace: bool = False  # unquoted {a,b} / {1..3}: ``value`` is expanded into several words

    @property
    def display(self) -> str:
        if self.kind is WordKind.UNKNOWN:
            return self.value
        value = self.value.replace("\x00", "…")  # the "any sub-path" marker of find -delete
        if value and re.fullmatch(r"[\w@%+=:,./*?\[\]{}~^…-]+", value):
            return value
        return shlex.quote(value)


def names(spec: str) -> frozenset[str]:
    """``names("-n --lines")`` — option tables written as one string."""
    return frozenset(spec.split())


def literal(value: str) -> Word:
    return Word(value)


def unknown(source: str) -> Word:
    return Word(source, WordKind.UNKNOWN)


def render(words: Sequence[Word]) -> str:
    return " ".join(word.display for word in words)


def program_name(word: Word) -> str:
    """``/usr/bin/curl`` and ``./curl`` are both program ``curl``."""
    value = word.value.rstrip("/") or word.value
    return value.rsplit("/", 1)[-1]


# --- option scanning ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """Which options of a command take a value. Short options may be clustered (``-pv``)
    and a valued short option may carry its value (``-n5``)."""

    valued: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    strict: bool = True  # unknown options are a problem (wrappers), or just flags


def options(valued: str = "", flags: str = "", *, strict: bool = True) -> Options:
    return Options(frozenset(valued.split()), frozenset(flags.split()), strict)


@dataclass(slots=True)
class Scan:
    end: int  # index of the first operand
    found: list[tuple[str, Word | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.found)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.found if name in names and value is not None]


def scan_options(words: Sequence[Word], start: int, spec: Options, what: str) -> Scan:
    scan = Scan(end=start)
    index = start
    while index < len(words):
        word = words[index]
        value = word.value
        if word.kind is WordKind.UNKNOWN:
            if value.startswith("-"):
                scan.problems.append(f"{what}: option {value} is not known before run time")
                index += 1
                continue
            break
        if value == "--":
            index += 1
            break
        if not value.startswith("-") or value == "-":
            break
        following = words[index + 1] if index + 1 < len(words) else None
        if value.startswith("--"):
            name, equals, attached = value.partition("=")
            if name in spec.valued:
                if equals:
                    scan.found.append((name, literal(attached)))
                else:
                    scan.found.append((name, following))
                    index += 1
            elif name in spec.flags or not spec.strict:
                scan.found.append((name, None))
            else:
                scan.problems.append(f"{what}: unknown option {name}")
            index += 1
            continue
        position = 1
        while position < len(value):
            name = "-" + value[position]
            if name in spec.valued:
                rest = value[position + 1 :]
                if rest:
                    scan.found.append((name, literal(rest)))
                else:
                    scan.found.append((name, following))
                    index += 1
                break
            if name in spec.flags or not spec.strict:
                scan.found.append((name, None))
            else:
                scan.problems.append(f"{what}: unknown option {name}")
            position += 1
        index += 1
    scan.end = index
    return scan


def split_arguments(
    words: Sequence[Word], valued: frozenset[str]
) -> tuple[list[tuple[str, Word | None]], list[Word]]:
    """GNU-style permuted arguments: options (with their values) anywhere, operands in
    order; ``--`` ends the options. Unknown options are taken as flags, except that a
    ``--name=value`` keeps its value (so a path in it is still seen)."""
    found: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    index = 0
    only_operands = False
    while index < len(words):
        word = words[index]
        value = word.value
        following = words[index + 1] if index + 1 < len(words) else None
        if only_operands or word.kind is WordKind.UNKNOWN or not value.startswith("-"):
            operands.append(word)
        elif value == "--":
            only_operands = True
        elif value == "-":
            operands.append(word)
        elif value.startswith("--"):
            name, equals, attached = value.partition("=")
            if equals:
                found.append((name, Word(attached, word.kind)))
            elif name in valued:
                found.append((name, following))
                index += 1
            else:
                found.append((name, None))
        else:
            for position in range(1, len(value)):
                name = "-" + value[position]
                if name in valued:
                    rest = value[position + 1 :]
                    if rest:
                        found.append((name, Word(rest, word.kind)))
                    else:
                        found.append((name, following))
                        index += 1
                    break
                found.append((name, None))
        index += 1
    return found, operands


@dataclass(frozen=True, slots=True)
class ScannedWord:
    value: str | None  # None: depends on run time ($VAR, $(…), `…`, $'…')
    substitutions: int  # $(…), `…`, <(…), >(…) outside single quotes, outermost only
    tilde: bool
    problem: str | None = None


_NAME_AT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# pip and python program names (pip, pip3, pip3.11, python3.12, pypy3); shared by the walker
# (python -m pip, global-option hoisting) and sources.json narrowing.
PIP_NAME = re.compile(r"^pip(?:\d+(?:\.\d+)*)?\Z")
PYTHON_NAME = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?\Z")

# Inside ${…}: an optional "#", the parameter, an optional [subscript], and the rest
# (operator and word). Used to find the parts bash evaluates as arithmetic or as code.
_BRACED = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(?:\[([^\]]*)\])?(.*)", re.DOTALL)
_CONSTANT_ARITHMETIC = re.compile(r"[0-9\s+*/%()<>=!&|^~?:,-]*")
_INTEGER = re.compile(r"\s*(?:-?\d+|\(\s*-?\d+\s*\))\s*")


def integer_literal(text: str) -> bool:
    """A plain integer, the only arithmetic expression whose evaluation cannot recurse into
    a variable's value (bash evaluates a name in arithmetic as an expression itself, so
    ``y='a[$(cmd)]'; echo ${a[y]}`` runs cmd)."""
    return _INTEGER.fullmatch(text) is not None


def braced_problem(inner: str) -> str | None:
    """Why the text inside ``${…}`` can run code although it has no ``$(…)``: indirection
    (``${!x}``), transformations (``${x@P}`` expands prompt escapes, ``$(…)`` included),
    and arithmetic on run-time text (``${a[y]}``, ``${x:y}``). Nested ``${`` are checked too."""
    if inner.startswith("!") and inner != "!":
        return f"indirect expansion ${{{inner}}} is not judged"
    match = _BRACED.fullmatch(inner)
    if match is None:
        return None
    _, _, subscript, rest = match.groups()
    if subscript is not None and subscript not in {"@", "*"} and not integer_literal(subscript):
        return f"array subscript in ${{{inner}}} is evaluated as arithmetic; not judged"
    if rest.startswith("@"):
        return f"parameter transformation ${{{inner}}} is not judged"
    substring = rest.startswith(":") and rest[1:2] not in {"-", "=", "?", "+"}
    # ${x:offset:length}: both are arithmetic expressions.
    if substring and not all(integer_literal(piece) for piece in rest[1:].split(":", 1)):
        return f"substring offset in ${{{inner}}} is evaluated as arithmetic; not judged"
    nested = rest.find("${")
    if nested != -1:
        return braced_problem(rest[nested + 2 :].split("}", 1)[0])
    if "$[" in rest:
        return "arithmetic expansion $[…] is not judged"
    return None


def _skip_parens(raw: str, index: int) -> int:
    """Index after the ``)`` closing the ``(`` at ``index`` (quotes respected roughly)."""
    depth = 0
    quote = ""
    while index < len(raw):
        char = raw[index]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                index += 1
        elif char == "\\":
            index += 1
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(raw)


_PLAIN_WORD = re.compile(r"[A-Za-z0-9_\-./:=,+@%^*?\[\]{}]+")


def scan_word(raw: str, known: dict[str, str]) -> ScannedWord:
    """Quote removal done here rather than trusted to bashlex, whose values are wrong for
    words mixing quote styles (``"cu"'rl'`` comes back as ``cu'rl'``; bash runs ``curl``).
    Variables in ``known`` are replaced by their values; any other expansion makes the value
    unknown."""
    if _PLAIN_WORD.fullmatch(raw):
        return ScannedWord(raw, 0, False)  # nothing to remove or expand
    value: list[str] = []
    unknown_value = False
    substitutions = 0
    problem = None
    index = 0
    length = len(raw)
    in_double = False

    def expansion(at: int) -> int:
        nonlocal unknown_value, substitutions, problem
        following = raw[at + 1 : at + 2]
        if raw.startswith("$((", at):
            unknown_value = True
            end = _skip_parens(raw, at + 1)
            if not _CONSTANT_ARITHMETIC.fullmatch(raw[at + 3 : end - 2]):
                # A name in arithmetic is evaluated as an expression: its value may hold
                # "a[$(cmd)]". Only constant arithmetic is harmless.
                problem = "arithmetic expansion $((…)) is not judged"
            return end
        if following == "[":
            unknown_value = True
            problem = "arithmetic expansion $[…] is not judged"
            close = raw.find("]", at)
            return close + 1 if close != -1 else length
        if following == "(":
            substitutions += 1
            unknown_value = True
            return _skip_parens(raw, at + 1)
        if following in {"'", '"'} and not in_double:
            problem = "ANSI-C or locale quoting ($'…', $\"…\") is not judged"
            unknown_value = True
            return at + 1
        if following == "{":
            close = raw.find("}", at)
            name = raw[at + 2 : close] if close != -1 else ""
            if name in known:
                value.append(known[name])
            else:
                unknown_value = True
                if "$(" in name or "`" in name:
                    problem = f"command substitution inside ${{{name}}} is not judged"
                else:
                    problem = braced_problem(name) or problem
            return close + 1 if close != -1 else length
        match = _NAME_AT.match(raw, at + 1)
        if match:
            if match.group() in known:
                value.append(known[match.group()])
            else:
                unknown_value = True
            return match.end()
        if following and (following.isdigit() or following in "@*#?$!-"):
            unknown_value = True
            return at + 2
        value.append("$")  # a lone "$" is literal
        return at + 1

    while index < length:
        char = raw[index]
        if char == "\\":
            if raw.startswith("\\\n", index):
                index += 2
                continue
            if in_double and raw[index + 1 : index + 2] not in {"$", "`", '"', "\\"}:
                value.append("\\")
                index += 1
                continue
            value.append(raw[index + 1 : index + 2])
            index += 2
        elif char == "'" and not in_double:
            close = raw.find("'", index + 1)
            if close == -1:
                return ScannedWord(None, substitutions, False, "unbalanced quote")
            value.append(raw[index + 1 : close])
            index = close + 1
        elif char == '"':
            in_double = not in_double
            index += 1
        elif char == "$":
            index = expansion(index)
        elif char == "`":
            close = raw.find("`", index + 1)
            substitutions += 1
            unknown_value = True
            index = length if close == -1 else close + 1
        elif char in "<>" and raw[index + 1 : index + 2] == "(" and not in_double:
            substitutions += 1
            unknown_value = True
            index = _skip_parens(raw, index + 1)
        else:
            value.append(char)
            index += 1
    return ScannedWord(
        None if unknown_value else "".join(value),
        substitutions,
        raw.startswith("~"),
        problem,
    )


_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")
MAX_BRACE_WORDS = 64


def brace_expand(text: str) -> list[str] | None:
    """bash brace expansion of an unquoted word: ``{/etc/passwd,}`` → ``/etc/passwd``
    (empty results are dropped), ``a{1..3}`` → a1 a2 a3. None when the result would be
    larger than :data:`MAX_BRACE_WORDS` (the caller then treats the path as unknown)."""
    results = _expand(text)
    if results is None:
        return None
    return [result for result in results if result]


def _expand(text: str) -> list[str] | None:
    start = 0
    while (start := text.find("{", start)) != -1:
        if start and text[start - 1] == "$":
            start += 1
            continue
        depth, index, commas = 0, start, []
        while index < len(text):
            char = text[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    break
            elif char == "," and depth == 1:
                commas.append(index)
            index += 1
        if index >= len(text):
            # No closing brace for this one: bash leaves it literal and goes on to the next
            # ("{a/../{x,y}" is "{a/../x" and "{a/../y"; bash(1), "Brace Expansion").
            start += 1
            continue
        body = text[start + 1 : index]
        prefix, suffix = text[:start], text[index + 1 :]
        if commas:
            bounds = [start, *commas, index]
            alternatives = [text[a + 1 : b] for a, b in itertools.pairwise(bounds)]
        else:
            sequence = _SEQUENCE.fullmatch(body)
            if sequence is None:
                start += 1
                continue
            numbers = _sequence(*sequence.groups())
            if numbers is None:
                return None
            alternatives = numbers
        results: list[str] = []
        for alternative in alternatives:
            expanded = _expand(prefix + alternative + suffix)
            if expanded is None or len(results) + len(expanded) > MAX_BRACE_WORDS:
                return None
            results.extend(expanded)
        return results
    return [text]


def _sequence(first: str, last: str, step: str | None) -> list[str] | None:
    increment = abs(int(step)) if step and int(step) else 1
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return [f"{{{first}..{last}{'..' + step if step else ''}}}"]  # not a sequence
    if first.lstrip("-").isdigit():
        low, high = int(first), int(last)
        if abs(high - low) // increment >= MAX_BRACE_WORDS:
            return None
        values = (
            range(low, high + 1, increment) if low <= high else range(low, high - 1, -increment)
        )
        return [str(value) for value in values]
    low, high = ord(first), ord(last)
    values = range(low, high + 1, increment) if low <= high else range(low, high - 1, -increment)
    return [chr(value) for value in values]

"""The words and redirections of a parsed command, as bash expands them: our own quote
removal and expansion of each word (``scan_word``), brace expansion, here-documents, the
substitutions inside words (walked as commands), and what assigning a variable does."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rules.budget import spend
from rules.environment import KNOWN_REFERENCE, dangerous_variable, environment_problem
from rules.invocations import normalise_path
from rules.text import sanitise
from rules.words import (
    MAX_BRACE_WORDS,
    Word,
    WordKind,
    brace_expand,
    literal,
    scan_word,
    unknown,
)


def _unquoted_glob(raw: str) -> bool:
    """Does the source text of a word contain an unquoted glob or brace expansion?"""
    if not any(char in raw for char in "*?[{"):
        return False
    quote = ""
    index = 0
    brace_open = False
    while index < len(raw):
        char = raw[index]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\":
            index += 1
        elif quote == '"':
            if char == '"':
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "$" and raw[index + 1 : index + 2] == "{":
            close = raw.find("}", index)
            index = close if close != -1 else len(raw)
        elif char in "*?":
            return True
        elif char == "[" and "]" in raw[index + 2 :]:
            # A bracket expression needs its closing "]" (bash, "Pattern Matching"): "[" on
            # its own, the test builtin, is literal. Any later "]", quoted or not, counts.
            return True
        elif char == "{":
            brace_open = True
        elif brace_open and (char == "," or raw.startswith("..", index)):
            return True
        index += 1
    return False


# An unquoted here-document body undergoes parameter expansion, arithmetic expansion and
# command substitution (bash(1), "Here Documents"); the delimiter's quotes are gone by the
# time the walker sees it (bashparse), so every body is read as expanded. Safe in it: $NAME,
# ${NAME} and ${NAME} with a default, an alternative, a pattern removal or replacement, or a
# case change (their words are expanded the same way, and a substitution in them is found).
# Anything else can run what a variable's value holds — ${x@P} (prompt expansion), ${!x}
# (indirection to "a[$(cmd)]"), subscripts, offsets and $((…)) (arithmetic evaluates a
# name's value as an expression) — or assign (${X:=…}).
_BODY_EXPANSION = re.compile(r"\$(?:\(\(|\[|\{)")
_SAFE_BRACED = re.compile(
    r"\$\{(?:#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[#@*?$!-])"
    r"(?:(?::?[-+]|##?|%%?|\^\^?|,,?|//?)[^}]*)?)\}"
)


def _unsafe_body_expansion(body: str) -> str | None:
    """The first expansion in a here-document body that could run or assign something."""
    for match in _BODY_EXPANSION.finditer(body):
        if match.group() == "${" and _SAFE_BRACED.match(body, match.start()):
            continue
        end = body.find("}", match.start()) if match.group() == "${" else match.end() + 8
        return sanitise(body[match.start() : min(end + 1, match.start() + 24)])
    return None


@dataclass(frozen=True, slots=True)
class Context:
    text: str  # the source the current bashlex positions refer to
    origin: str
    depth: int
    stdin: str | None = None  # "pipe" when fed by a pipeline
    # Where the simple commands of this text start, as the walk finds them (compared with
    # the second parser's); shared by the substitutions walked inside the same text.
    starts: set[int] = field(default_factory=set, compare=False)

    def derive(self, origin: str, stdin: str | None) -> Context:
        """The same text seen from a substitution or a pipeline element (built directly:
        dataclasses.replace costs several times more, once per pipeline element)."""
        return Context(self.text, origin, self.depth, stdin, self.starts)


# A word with no quote, expansion, glob, brace, tilde or escape: its value is its text.
_SIMPLE_WORD = re.compile(r"[A-Za-z0-9_\-./:=,+@%^]+")
_QUOTED_WORD = re.compile(r"'[^'$`\\]*'|\"[^\"$`\\]*\"")
_ASSIGNING_EXPANSION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")


class Expansions:
    """The walker's reading of words (rules.walker.Walker): a substitution in a word is
    walked as commands of their own (``in_subshell``, the walker's)."""

    expand: dict[str, str]  # $WORKSPACE and $CONTEXT_ID, when the line cannot assign them
    trusted_dirs: frozenset[str]

    def in_subshell(self, node: Any, context: Context) -> None:
        raise NotImplementedError  # rules.walker.Walker's

    def word(self, node: Any, context: Context, problems: list[str]) -> Word:
        """The word's value comes from our own quote removal (``scan_word``); bashlex only
        supplies the structure and the substitutions, which are judged as commands."""
        raw = context.text[node.pos[0] : node.pos[1]]
        if not node.parts:
            if _SIMPLE_WORD.fullmatch(raw):
                # Most words: nothing to remove, expand or glob (what the steps below give).
                return Word(raw)
            if _QUOTED_WORD.fullmatch(raw):
                # One quoted string without "$", "`" or "\\" in it ('revenue', "a b"):
                # its text is its value, quoted globs and braces stay literal.
                return Word(raw[1:-1])
        reported = 0
        whole_process_substitution = False
        for part in node.parts:
            if part.kind in {"commandsubstitution", "processsubstitution"}:
                reported += 1
                origin = part.kind.replace("substitution", " substitution")
                self.in_subshell(part.command, context.derive(origin, None))
                whole_process_substitution = (
                    part.kind == "processsubstitution" and part.pos == node.pos
                )
        scanned = scan_word(raw, self.expand)
        if scanned.problem:
            problems.append(scanned.problem)
        for assigned in _ASSIGNING_EXPANSION.findall(raw):
            # ${CDPATH:=/} assigns CDPATH as a side effect of expanding the word
            problems.extend(self.assignment_problems(assigned, unknown(raw), exported=False))
        if scanned.substitutions > reported:
            problems.append(f"a command substitution in {sanitise(raw)} could not be judged")
        if whole_process_substitution and reported == 1:
            return literal("/dev/fd/63")  # what the command really receives: a pipe
        if scanned.value is None:
            return unknown(sanitise(raw))
        kind = WordKind.GLOB if _unquoted_glob(raw) else WordKind.LITERAL
        expanded = brace_expand(raw) if kind is WordKind.GLOB and "{" in raw else [raw]
        brace = expanded != [raw]
        if expanded is None:
            problems.append(f"{sanitise(raw[:40])} expands to more than {MAX_BRACE_WORDS} words")
        if brace and re.search(r"['\"\\]", raw):
            # Quoted parts mixed with brace expansion: the expansion of the quote-removed
            # value would differ from bash's. Only known at run time, as far as paths go.
            return unknown(sanitise(raw))
        return Word(scanned.value, kind, scanned.tilde, brace)

    def brace_words(self, node: Any, context: Context, word: Word) -> list[Word]:
        """The words bash makes of a brace word, each read like any word: ``grep {-r,x}
        /etc`` is ``grep -r x /etc`` (bash(1), "Brace Expansion": before every other
        expansion, so ``$WORKSPACE/{a,b}`` is two words, each then expanded)."""
        raw = context.text[node.pos[0] : node.pos[1]]
        expanded = brace_expand(raw)
        if expanded is None:
            return [word]  # too many words: the problem is already recorded, paths unknown
        spend(len(expanded))
        result = []
        for text in expanded:
            scanned = scan_word(text, self.expand)
            if scanned.value is None:
                result.append(unknown(sanitise(text)))
                continue
            kind = WordKind.GLOB if _unquoted_glob(text) else WordKind.LITERAL
            result.append(Word(scanned.value, kind, scanned.tilde))
        return result

    def redirect(self, node: Any, context: Context, problems: list[str]) -> tuple[str, Any]:
        """(operator, target) where target is a Word, a here-document body (str), or None
        for descriptor duplication/closing."""
        operator = node.type
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            body = heredoc.value.rsplit("\n", 1)[0] if "\n" in heredoc.value else ""
            if "$(" in body or "`" in body:
                problems.append("here-document with command substitution is not judged")
            elif "$" in body and (expansion := _unsafe_body_expansion(body)):
                problems.append(f"here-document body expands {expansion}, which is not judged")
            return operator, body
        target = node.output
        if isinstance(target, int | str):
            return operator, None
        word = self.word(target, context, problems)
        if operator in {">&", "<&"} and re.fullmatch(r"\d+-?|-", word.value):
            return operator, None
        return operator, word

    def assignment_problems(self, name: str, value: Word, *, exported: bool) -> list[str]:
        """``exported``: the command's environment gets it (a prefix, env's, export's),
        so only harmless variables pass; a plain shell assignment reaches a child only
        when the variable is already exported, so there the known-bad list decides."""
        if name == "PATH":
            return self.path_problems(value)
        if exported:
            problem = environment_problem(name, value)
            return [problem] if problem else []
        if dangerous_variable(name):
            return [f"assigning {name} changes what runs or what it contacts"]
        return []

    def path_problems(self, value: Word) -> list[str]:
        """PATH may only be extended with trusted directories (the seed's per-context
        virtualenv: PATH=/workspace/<ctx>/.venv/bin:$PATH)."""
        raw = value.value
        if len(raw) > 1 and raw[0] == raw[-1] == '"':
            raw = raw[1:-1]
        for entry in raw.split(":"):
            if entry in {"$PATH", "${PATH}"}:
                continue
            expanded = KNOWN_REFERENCE.sub(
                lambda m: self.expand.get(m.group(1) or m.group(2), "$"), entry
            )
            if "$" in expanded or normalise_path(expanded or ".") not in self.trusted_dirs:
                return [f"PATH entry {entry!r} is not a trusted bin directory"]
        return []

"""The parser adapter: bashlex (with the fixes bash needs: here-document delimiters, ``time``,
parameter expansions it cannot parse) and the second parser it is checked against."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import bashlex
import bashlex.ast
import bashlex.errors
import bashlex.subst
import tree_sitter
import tree_sitter_bash

from rules import fastparse
from rules.text import sanitise

_TIME_KEYWORD = re.compile(r"(^|[;&|(\n]\s*|[{]\s+|\b(?:then|do|else)\s+)time(?=\s)")


_HEREDOC_START = re.compile(r"(?<!<)<<(-?)[ \t]*(?!<)")


_HEREDOC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def error_message(error: Exception) -> str:
    message = str(error).strip() or type(error).__name__
    if isinstance(error, NotImplementedError) and "arithmetic" in message:
        return "arithmetic expansion $((…)) is not supported"
    return sanitise(message.splitlines()[0][:200])


def parse(text: str) -> tuple[list[Any], str]:
    """Trees for ``text`` and the text their positions refer to. Plain leading list items are
    read by ``fastparse``; bashlex reads the rest (its positions shifted to match)."""
    trees, offset = fastparse.parse_prefix(text)
    if offset == len(text):
        return trees, text
    rest_trees, rest_text = _parse_with_bashlex(text[offset:])
    for tree in rest_trees:
        bashlex.ast.posshifter(offset).visit(tree)
    return trees + rest_trees, text[:offset] + rest_text


_bashlex_paramexpand = bashlex.subst._paramexpand


def _paramexpand_or_fail(parserobj: Any, string: str, sindex: int) -> Any:
    # bashlex 0.18 loops forever on "${" without a closing "}" inside a word (find() returns
    # -1 and the scan restarts at 0), which a single command could use to hang a worker.
    if string.startswith("${", sindex) and string.find("}", sindex + 2) == -1:
        raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, sindex)
    return _bashlex_paramexpand(parserobj, string, sindex)


bashlex.subst._paramexpand = _paramexpand_or_fail


def _heredoc_delimiter(text: str, index: int) -> tuple[str, int, bool]:
    """The delimiter word starting at ``index`` after quote removal, where it ends, and
    whether any of it was quoted. bash removes every quote and backslash from the word
    (``E\\OF``, ``E''OF``, ``"EO"F`` all mean ``EOF``) and expands nothing in it."""
    value: list[str] = []
    quoted = False
    length = len(text)
    while index < length and text[index] not in " \t\n;&|<>()":
        char = text[index]
        if char == "'":
            close = text.find("'", index + 1)
            if close == -1:
                raise bashlex.errors.ParsingError("unterminated quote in a delimiter", text, index)
            value.append(text[index + 1 : close])
            index, quoted = close + 1, True
        elif char == '"':
            index += 1
            while index < length and text[index] != '"':
                if text[index] == "\\" and text[index + 1 : index + 2] in {"$", "`", '"', "\\"}:
                    index += 1
                value.append(text[index : index + 1])
                index += 1
            if index >= length:
                raise bashlex.errors.ParsingError("unterminated quote in a delimiter", text, index)
            index, quoted = index + 1, True
        elif char == "\\":
            value.append(text[index + 1 : index + 2])
            index, quoted = index + 2, True
        else:
            value.append(char)
            index += 1
    return "".join(value), index, quoted


def unquote_heredoc_delimiters(text: str) -> str:
    """Rewrite every quoted here-document delimiter to the word bash compares body lines
    with, so that bashlex and ``fastparse`` (which only read unquoted names) end the body
    where bash does. Left quoted, ``<<E\\OF`` ended at a line ``E\\OF`` for bashlex while
    bash ended it at ``EOF`` and ran the lines after as commands. A delimiter that is quoted
    and does not come out as a plain name (spaces, ``$``, empty …) is refused: the line is
    then unparseable, which is asked about."""
    pieces: list[str] = []
    position = 0
    for match in _HEREDOC_START.finditer(text):
        if match.start() < position:
            continue  # inside a delimiter already rewritten
        name, end, quoted = _heredoc_delimiter(text, match.end())
        if not quoted:
            continue
        if not _HEREDOC_NAME.fullmatch(name):
            raise bashlex.errors.ParsingError(
                "a quoted here-document delimiter that is not a plain name is not judged",
                text,
                match.start(),
            )
        pieces.append(text[position : match.start()])
        pieces.append(f"<<{match.group(1)}{name}")
        position = end
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _parse_with_bashlex(text: str) -> tuple[list[Any], str]:
    """bashlex.parse, working around two of its gaps: the ``time`` keyword and quoted
    here-document delimiters (``<<'EOF'``). Removing the quotes around a delimiter never
    changes which characters are quoted elsewhere (each rewrite drops a matched pair), and the
    body of every here-document is treated as if it were expanded anyway. A text with a
    here-document goes to ``fastparse`` first, which builds the same trees (or raises the same
    error for a missing delimiter) when it can."""
    if "<<" in text:
        text = unquote_heredoc_delimiters(text)
        fast = fastparse.parse_or_raise(text)  # bashlex's trees or error, when it can tell
        if fast is not None:
            return fast, text
    try:
        return bashlex.parse(text), text
    except NotImplementedError as error:
        if "time" not in str(error):
            raise
        rewritten = _TIME_KEYWORD.sub(lambda m: f"{m.group(1)}\\time", text)
        return bashlex.parse(rewritten), rewritten


# --- the second parser ------------------------------------------------------------------------
# bashlex was written from bash's grammar but differs from it in places (a "#" or a
# here-document inside "$(…)"): where bashlex and tree-sitter-bash, an independent grammar,
# find commands at different places in a line, one of them reads it unlike bash, and no rule
# can allow it. Only where simple commands start is compared — the structure the rules judge.

_BASH = tree_sitter.Language(tree_sitter_bash.language())
_TREE_SITTER = tree_sitter.Parser(_BASH)
# Where tree-sitter sees a simple command: a command's name, and the nodes it gives their
# own type where bashlex sees a simple command (export …, unset …, [[ … ]]). Here-document
# bodies are text to both.
_STARTS = tree_sitter.Query(
    _BASH,
    """
    (command name: (command_name) @start)
    (declaration_command) @start
    (unset_command) @start
    (test_command) @start
    (heredoc_body) @body
    """,
)


def second_opinion(text: str) -> tuple[set[int], bool]:
    """Where tree-sitter-bash finds simple commands in ``text`` (character offsets), and
    whether it reports a syntax error anywhere."""
    root = _TREE_SITTER.parse(text.encode()).root_node
    captures = tree_sitter.QueryCursor(_STARTS).captures(root)
    bodies = [(node.start_byte, node.end_byte) for node in captures.get("body", [])]
    offsets = {
        node.start_byte
        for node in captures.get("start", [])
        if not any(start <= node.start_byte < end for start, end in bodies)
    }
    if not text.isascii():
        encoded = text.encode()
        offsets = {len(encoded[:offset].decode(errors="replace")) for offset in offsets}
    return offsets, root.has_error


# A line of only plain words, single-quoted strings, double-quoted strings without
# expansions or escapes, "\;" and the list, pipe and redirection operators has nothing two
# bash parsers can read differently: no substitution, comment, here-document, grouping or
# expansion, and a quote can only start a quoted string. The second parser is not asked.
# (Each alternative starts with its own characters: one way to match, linear time.)
_UNAMBIGUOUS = re.compile(r"""(?:[A-Za-z0-9 \t_./=:,@%+*?~^!;&|<>{}-]|'[^']*'|"[^"$`\\]*"|\\;)*""")


def disagreement(ours: set[int], text: str) -> tuple[str, list[str]] | None:
    """None when tree-sitter finds simple commands where the walk of bashlex's trees did
    (``ours``); else the reason and the text of each command only tree-sitter found (judged
    crudely, so a deny still wins)."""
    if _UNAMBIGUOUS.fullmatch(text) and "<<" not in text:
        return None
    theirs, error = second_opinion(text)
    if error:
        return "the second parser (tree-sitter-bash) finds a syntax error in this line", []
    if ours == theirs:
        return None
    extra = [_line_from(text, start) for start in sorted(theirs - ours)]
    return "the two parsers read this line's commands differently (see docs/rules.md)", extra


def _line_from(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start : end if end != -1 else len(text)]


# --- bounded cost ---------------------------------------------------------------------------
# Judging costs about 0.2 ms per simple command and a few µs per word; a line may hold 4096
# characters. Before either parser runs, a linear count of the line (here-document bodies
# left out: they are text) bounds what judging it will cost; past a bound the line is asked
# about, and only the words at command positions are checked against deny rules.


@dataclass(frozen=True)
class Size:
    # over() checks every field by name on its fast path: a new field goes there too.
    commands: int  # separators + 1: ";", "&", "|", newline, "(", "$(", "`", "{" …
    words: int
    expansions: int  # "$" and "`"
    globs: int  # "*", "?" and "[": each is matched against every path rule
    depth: int  # how deeply "(", "$(", "{" nest

    def __add__(self, other: Size) -> Size:
        return Size(
            self.commands + other.commands,
            self.words + other.words,
            self.expansions + other.expansions,
            self.globs + other.globs,
            max(self.depth, other.depth),
        )


LIMITS = Size(commands=16, words=64, expansions=32, globs=24, depth=6)
_SEPARATORS = re.compile(r"[;&|\n]+|[$<>]?\(|`|\{\s")
_NESTING = re.compile(r"[({]|[)}]")
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z0-9_][A-Za-z0-9_.-]*)\1[^\n]*\n")


def without_heredoc_bodies(text: str) -> str:
    """The line with every here-document body removed (a body is text, not commands)."""
    pieces = []
    position = 0
    for match in _HEREDOC.finditer(text):
        if match.start() < position:
            continue
        pieces.append(text[position : match.end()])
        end = re.compile(rf"^\t*{re.escape(match.group(2))}$", re.MULTILINE).search(
            text, match.end()
        )
        position = end.end() if end else len(text)
    pieces.append(text[position:])
    return "".join(pieces)


def size_of(text: str) -> Size:
    code = without_heredoc_bodies(text) if "<<" in text else text
    depth = deepest = 0
    if "(" in code or "{" in code:  # nothing opens: nothing nests
        for match in _NESTING.finditer(code):
            depth = depth + 1 if match.group() in "({" else max(depth - 1, 0)
            deepest = max(deepest, depth)
    return Size(
        commands=len(_SEPARATORS.findall(code)) + 1,
        words=len(code.split()),
        expansions=code.count("$") + code.count("`"),
        globs=code.count("*") + code.count("?") + code.count("["),
        depth=deepest,
    )


def over(size: Size) -> str | None:
    """Why a line of this size is not judged command by command (None: it is)."""
    if (
        size.commands <= LIMITS.commands
        and size.words <= LIMITS.words
        and size.expansions <= LIMITS.expansions
        and size.globs <= LIMITS.globs
        and size.depth <= LIMITS.depth
    ):
        return None  # the common case, checked field by field without a loop
    for name, limit in vars(LIMITS).items():
        if getattr(size, name) > limit:
            return (
                f"too complex to judge within the engine's bounds ({getattr(size, name)} "
                f"{name}, at most {limit}; see docs/rules.md)"
            )
    return None


_COMMAND_POSITION = re.compile(
    r"(?:^|[;&|\n(){}`]|\$\(|[<>]\(|\b(?:then|do|else|elif|if|while|until|!)\s)\s*"
    r"((?:[A-Za-z_][A-Za-z0-9_]*=[^\s;&|()<>`]*\s+)*)([^\s;&|()<>`'\"]+)"
)
WRAPPER_NAMES = frozenset(
    {"nice", "nohup", "timeout", "env", "command", "builtin", "exec", "stdbuf", "time"}
    | {"xargs", "sudo", "doas", "eval", "busybox", "uv"}
)


def command_names(text: str) -> list[str]:
    """The words of a line that may be programs: each word at a command position, and every
    word after a wrapper (``nice nice … curl``). Distinct, in order; for deny rules only."""
    names: dict[str, None] = {}
    for match in _COMMAND_POSITION.finditer(text):
        word = match.group(2)
        names[word] = None
        if word.rsplit("/", 1)[-1] in WRAPPER_NAMES:
            end = _SEPARATORS.search(text, match.end())
            for following in text[match.end() : end.start() if end else len(text)].split():
                names[following.strip("'\"")] = None
    return list(names)

"""A fast path in front of bashlex for plain command lines.

bashlex is a faithful port of bash's parser but costs about a millisecond per 100
characters. Most agent commands use only words, quotes, ``$NAME``, pipes, ``&&``/``||``/``;``/
``&`` and simple redirections; for exactly that subset this module builds the **same tree
bashlex would** — the same nodes, kinds and positions (tests compare the two on a fixed
corpus and on tens of thousands of random lines). Anything else — ``$(``, backticks,
parentheses, here-documents, ``#``, ``!``, ``~``, newlines, reserved words, a lone brace,
non-ASCII — returns None and bashlex parses it.

Word values are not computed here (nor trusted from bashlex): ``shell.scan_word`` removes
quotes from each word's source text, and parameter nodes are not produced because the walker
never reads them.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from bashlex import ast

from approvals.rules.words import names

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_WORD = re.compile(
    r"(?:"
    r"[A-Za-z0-9_\-./:=,+@%^*?\[\]{}~]+"  # plain characters
    r"|\\[ -~]"  # a backslash-escaped printable character
    r"|'(?:[^'`$]|\$(?!\())*'"  # single quotes (bashlex sees "$(" and "`" in them)
    rf"|\"(?:[^\"\\`!$'\n]|\${_NAME}|\$\{{{_NAME}\}})*\""  # double quotes, $NAME only
    rf"|\${_NAME}|\$\{{[^{{}}$`'\"\\]+\}}"  # $NAME, ${NAME}, ${NAME:-word} …
    r")+"
)
_OPERATOR = re.compile(r"&&|\|\||;|\||&(?!>)")
_REDIRECT = re.compile(r"(\d*)(&>>|&>|>>|>&|>|<)")
_DIGITS = re.compile(r"\d+")
_BLANKS = re.compile(r"[ \t]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_BOUNDARY = frozenset(" \t|&;<>")
RESERVED = names(
    "if then else elif fi case esac for select while until do done in function time coproc "
    "{ } ! [[ ]]"
)


class _Unsupported(Exception):
    """The line is outside the plain subset; bashlex must parse it."""


@dataclass
class _Token:
    kind: str  # "word", "op" or "redirect"
    start: int
    end: int
    value: str = ""  # the source text of a word, the operator, or the redirect type
    fd: int | None = None
    dup: int | None = None
    target: _Token | None = None


def _word(text: str, index: int) -> _Token:
    match = _WORD.match(text, index)
    if not match:
        raise _Unsupported
    end = match.end()
    if end < len(text) and text[end] not in _BOUNDARY:
        raise _Unsupported  # "(", "#", "~", "!", "$(", an open quote …
    if match.group() in {"{", "}"}:
        raise _Unsupported  # bashlex treats the word after a lone brace as a command start
    return _Token("word", index, end, match.group())


def _redirect(text: str, index: int) -> _Token:
    match = _REDIRECT.match(text, index)
    if not match:
        raise _Unsupported
    fd = int(match.group(1)) if match.group(1) else None
    kind = match.group(2)
    end = match.end()
    if kind.startswith("&") and fd is not None:
        raise _Unsupported
    if text[end : end + 1] in {"|", "&", ">", "<", "("}:
        raise _Unsupported  # >|, <<, <>, <&, >&- , <(, >( …
    if kind == ">&":
        digits = _DIGITS.match(text, end)
        if not digits or (digits.end() < len(text) and text[digits.end()] not in " \t;&|"):
            raise _Unsupported
        return _Token("redirect", index, digits.end(), kind, fd=fd, dup=int(digits.group()))
    end = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
    if end >= len(text) or text[end] in _BOUNDARY:
        raise _Unsupported
    target = _word(text, end)
    if target.value.isdigit() and text[target.end : target.end + 1] in {"<", ">"}:
        raise _Unsupported  # "> 2>x": bash reads "2>" as the next redirection
    return _Token("redirect", index, target.end, kind, fd=fd, target=target)


def _tokens(text: str, tokens: list[_Token]) -> list[_Token]:
    """Append the tokens of ``text`` to ``tokens`` (so a caller keeps those read before an
    unsupported construct)."""
    index = _BLANKS.match(text).end()  # type: ignore[union-attr]
    while index < len(text):
        char = text[index]
        if char == "#":
            # A comment runs to the end of the (single) line. bashlex only agrees when a blank
            # precedes it ("ls;#x" is a comment to bash, a word to bashlex): leave that to it.
            if index and text[index - 1] in " \t":
                break
            raise _Unsupported
        operator = _OPERATOR.match(text, index) if char in "&|;" else None
        if operator:
            if text.startswith((";;", ";&", "|&"), index):
                raise _Unsupported
            tokens.append(_Token("op", index, operator.end(), operator.group()))
            index = operator.end()
        elif char in "<>&" or (char.isdigit() and _REDIRECT.match(text, index)):
            token = _redirect(text, index)
            tokens.append(token)
            index = token.end
        else:
            token = _word(text, index)
            tokens.append(token)
            index = token.end
        index = _BLANKS.match(text, index).end()  # type: ignore[union-attr]
    return tokens


def _word_node(token: _Token, kind: str = "word") -> Any:
    return ast.node(kind=kind, word=token.value, pos=(token.start, token.end), parts=[])


def _command(tokens: list[_Token], text: str) -> Any:
    if not tokens:
        raise _Unsupported
    parts = []
    seen_other = False  # bashlex takes NAME=value as an assignment only before anything else
    for token in tokens:
        if token.kind == "redirect":
            seen_other = True
            output = token.dup if token.target is None else _word_node(token.target)
            parts.append(
                ast.node(
                    kind="redirect",
                    type=token.value,
                    input=token.fd,
                    output=output,
                    heredoc=None,
                    pos=(token.start, token.end),
                )
            )
            continue
        at_command_position = not any(part.kind == "word" for part in parts)
        if at_command_position and (token.value in RESERVED or token.value[0] in "{}"):
            raise _Unsupported  # a reserved word or a brace group: leave it to bashlex
        if not seen_other and _ASSIGNMENT.match(token.value):
            parts.append(_word_node(token, "assignment"))
        else:
            seen_other = True
            parts.append(_word_node(token))
    return ast.node(kind="command", parts=parts, pos=(tokens[0].start, tokens[-1].end))


def _pipeline(tokens: list[_Token], text: str) -> Any:
    commands: list[list[_Token]] = [[]]
    pipes: list[_Token] = []
    for token in tokens:
        if token.kind == "op" and token.value == "|":
            commands.append([])
            pipes.append(token)
        else:
            commands[-1].append(token)
    nodes = [_command(command, text) for command in commands]
    if len(nodes) == 1:
        return nodes[0]
    parts: list[Any] = [nodes[0]]
    for pipe, node in zip(pipes, nodes[1:], strict=True):
        parts.append(ast.node(kind="pipe", pipe="|", pos=(pipe.start, pipe.end)))
        parts.append(node)
    return ast.node(kind="pipeline", parts=parts, pos=(nodes[0].pos[0], nodes[-1].pos[1]))


def _items(tokens: list[_Token]) -> tuple[list[list[_Token]], list[_Token]]:
    """Split tokens into pipelines at the list operators ;, &, && and ||."""
    items: list[list[_Token]] = [[]]
    operators: list[_Token] = []
    for token in tokens:
        if token.kind == "op" and token.value != "|":
            if not items[-1]:
                raise _Unsupported  # "; ls", "ls ;; ls"
            operators.append(token)
            items.append([])
        else:
            items[-1].append(token)
    return items, operators


def _list(nodes: list[Any], operators: list[_Token]) -> list[Any]:
    if len(nodes) == 1 and not operators:
        return [nodes[0]]
    parts: list[Any] = []
    for index, node in enumerate(nodes):
        parts.append(node)
        if index < len(operators):
            operator = operators[index]
            parts.append(
                ast.node(kind="operator", op=operator.value, pos=(operator.start, operator.end))
            )
    return [ast.node(kind="list", parts=parts, pos=(nodes[0].pos[0], parts[-1].pos[1]))]


def parse(text: str) -> list[Any] | None:
    """The bashlex tree of ``text`` if it is a plain command line, else None."""
    if not text.isascii() or not text.strip():
        return None
    try:
        items, operators = _items(_tokens(text, []))
        if not items[-1]:
            items.pop()
            if not operators or operators[-1].value not in {";", "&"}:
                raise _Unsupported  # "ls &&" is incomplete; "# comment" alone is empty
        nodes = [_pipeline(item, text) for item in items]
    except _Unsupported:
        return None
    return _list(nodes, operators)


def parse_prefix(text: str) -> tuple[list[Any], int]:
    """Trees for the leading plain list items of ``text``, and where the rest starts
    (``len(text)`` when the whole line is plain). The rest starts a new list item — after a
    top-level ``;``, ``&``, ``&&`` or ``||`` read in plain context — so bashlex can parse it
    on its own; nothing is skipped."""
    whole = parse(text)
    if whole is not None:
        return whole, len(text)
    if not text.isascii():
        return [], 0
    tokens: list[_Token] = []
    with contextlib.suppress(_Unsupported):  # keep the tokens read before the failure
        _tokens(text, tokens)
    try:
        items, operators = _items(tokens)
    except _Unsupported:
        return [], 0
    nodes: list[Any] = []
    for item in items[: len(operators)]:  # the items a list operator completed
        try:
            nodes.append(_pipeline(item, text))
        except _Unsupported:
            break
    if not nodes:
        return [], 0
    rest = _BLANKS.match(text, operators[len(nodes) - 1].end).end()  # type: ignore[union-attr]
    if rest >= len(text):
        return [], 0
    return _list(nodes, operators[: len(nodes)]), rest

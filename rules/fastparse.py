"""A fast path in front of bashlex for common command lines.

bashlex is a faithful port of bash's parser but costs about a millisecond per 100
characters. For a subset of the shell language this module builds the **same tree bashlex
would** — the same nodes, kinds, positions and nesting (tests compare the two on a fixed
corpus and on tens of thousands of random lines). The subset:

* words with quotes, ``\\x``, ``$NAME``/``${…}``, ``~``; assignments; pipes, ``&&``/``||``/
  ``;``/``&``; simple redirections; a trailing comment on the last line;
* ``$(…)`` command substitution, nested and inside double quotes (no ``#``, ``<<``,
  ``case``, subshells or newlines inside);
* here-documents ``<<NAME``/``<<-NAME`` on simple commands of the top level (quoted
  delimiters are unquoted by ``shell`` first, as it does for bashlex);
* ``for NAME [in WORDS]; do LIST; done``, ``while LIST; do LIST; done``, brace groups
  ``{ LIST; }`` and subshells ``( LIST )``, with redirections, on one line;
* several lines when each starts right after the previous command or here-document.

Anything else — backticks, ``<(``, ``$((``, ``if``, ``case``, ``!``, ``time``, ``[[``,
functions, newlines inside a compound command, non-ASCII … — returns None and bashlex
parses it; so do lines bashlex rejects (``$(a;)``, ``$(a && b)``, ``while { a; } do``),
except that :func:`parse_or_raise` raises bashlex's own error for a here-document whose
delimiter never comes. Where bashlex itself deviates from bash (``$(`` inside a word that is
single-quoted as a whole is not reported, ``~$(…)`` neither), the fast path reproduces
bashlex: the walker checks those cases itself.

Word values are not computed here (nor trusted from bashlex): ``words.scan_word`` removes
quotes from each word's source text, and parameter and tilde nodes are not produced because
the walker never reads them.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from bashlex import ast, errors

from rules.words import names

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
_DQUOTED = re.compile(r"[^\"\\`!$\n]+")  # plain characters inside double quotes
_DQ_PARAMETER = re.compile(rf"\${_NAME}|\$\{{{_NAME}\}}")  # $NAME or ${NAME} in double quotes
_PARAMETER = re.compile(rf"\${_NAME}|\$\{{[^{{}}$`'\"\\]+\}}")
_OPERATOR = re.compile(r"&&|\|\||;|\||&(?!>)|\(|\)")
_REDIRECT = re.compile(r"(\d*)(&>>|&>|>>|>&|>|<)")
_HEREDOC = re.compile(rf"<<(-?)[ \t]*({_NAME})")
_DIGITS = re.compile(r"\d+")
_BLANKS = re.compile(r"[ \t]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SUBSTITUTION_UNSUPPORTED = re.compile(r"[#\n`]|<<|\$\$|\$\[|\$['\"]|case|esac")
_BOUNDARY = frozenset(" \t|&;<>()\n")
_LIST_OPERATORS = frozenset({";", "&", "&&", "||"})
RESERVED = names(
    "if then else elif fi case esac for select while until do done in function time coproc "
    "{ } ! [[ ]]"
)


def _node(**fields: Any) -> Any:
    """``ast.node(**fields)`` without its per-call checks: the same class and attributes
    (bashlex compares nodes by their attributes), built about twice as fast; the fast
    parser builds a dozen nodes per command."""
    node = _NEW_NODE(ast.node)
    node.__dict__ = fields
    return node


_NEW_NODE = object.__new__


class _Unsupported(Exception):
    """The line is outside the supported subset; bashlex must parse it."""


@dataclass(slots=True)
class _Token:
    kind: str  # "word", "op" or "redirect"
    start: int
    end: int
    value: str = ""  # the source text of a word, the operator, or the redirect type
    fd: int | None = None
    dup: int | None = None
    target: _Token | None = None
    reserved: bool = False  # a word the parser read as a reserved word bashlex lists
    heredoc: bool = False


# --- tokens ---------------------------------------------------------------------------------


def _skip_substitution(text: str, index: int, closes: dict[int, int]) -> int:
    """``index`` is just after ``$(``: the index after its closing parenthesis, recorded in
    ``closes`` (position of ``$`` → position of ``)``). Mirrors bashlex's ``_parse_comsub`` for
    contents without comments, here-documents, ``case``, newlines or bare parentheses."""
    opening = index - 2
    if text.startswith("(", index):
        raise _Unsupported  # $(( arithmetic, or a subshell
    length = len(text)
    while index < length:
        char = text[index]
        if char == ")":
            if _SUBSTITUTION_UNSUPPORTED.search(text, opening + 2, index):
                raise _Unsupported
            closes[opening] = index
            return index + 1
        if char == "(":
            raise _Unsupported
        if char == "\\":
            if text[index + 1 : index + 2] in {"", "\n"}:
                raise _Unsupported
            index += 2
        elif char == "'":
            close = text.find("'", index + 1)
            if close < 0:
                raise _Unsupported
            index = close + 1
        elif char == '"':
            index = _skip_double_quotes(text, index, closes)
        elif char == "$" and text.startswith("(", index + 1):
            index = _skip_substitution(text, index + 2, closes)
        elif char == "$" and text.startswith("{", index + 1):
            match = _PARAMETER.match(text, index)
            if not match:
                raise _Unsupported
            index = match.end()
        else:
            index += 1
    raise _Unsupported


def _skip_double_quotes(text: str, index: int, closes: dict[int, int]) -> int:
    """``index`` is at an opening double quote: the index after the closing one."""
    index += 1
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            return index + 1
        if char == "\\":
            if text[index + 1 : index + 2] in {"", "\n"}:
                raise _Unsupported
            index += 2
        elif char == "$":
            if text.startswith("(", index + 1):
                index = _skip_substitution(text, index + 2, closes)
            else:
                match = _DQ_PARAMETER.match(text, index)
                if not match:
                    raise _Unsupported  # $$, $', $", ${…} with operators, a lone $ …
                index = match.end()
        else:
            match = _DQUOTED.match(text, index)
            if not match:
                raise _Unsupported  # a backtick, "!" or a newline
            index = match.end()
    raise _Unsupported


def _word(text: str, index: int, closes: dict[int, int]) -> _Token:
    start = index
    length = len(text)
    while True:
        match = _WORD.match(text, index)
        if match:
            index = match.end()
        if index >= length:
            break
        char = text[index]
        if char == "$" and text.startswith("$(", index):
            index = _skip_substitution(text, index + 2, closes)
        elif char == '"':
            index = _skip_double_quotes(text, index, closes)
        else:
            break
    if index == start or (index < length and text[index] not in _BOUNDARY):
        raise _Unsupported  # "#", "!", "`", "$'", an open quote …
    value = text[start:index]
    if "(" in value and ("<(" in value or ">(" in value):
        raise _Unsupported  # bashlex reads process substitutions even inside quotes
    return _Token("word", start, index, value)


def _redirect(text: str, index: int, closes: dict[int, int]) -> _Token:
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
        if not digits or (digits.end() < len(text) and text[digits.end()] not in " \t;&|)\n"):
            raise _Unsupported
        return _Token("redirect", index, digits.end(), kind, fd=fd, dup=int(digits.group()))
    end = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
    if end >= len(text) or text[end] in _BOUNDARY:
        raise _Unsupported
    target = _word(text, end, closes)
    if target.value in {"{", "}"}:
        raise _Unsupported  # bashlex reads the word after a lone brace as a command start
    if target.value.isdigit() and text[target.end : target.end + 1] in {"<", ">"}:
        raise _Unsupported  # "> 2>x": bash reads "2>" as the next redirection
    return _Token("redirect", index, target.end, kind, fd=fd, target=target)


def _heredoc(text: str, index: int) -> _Token:
    match = _HEREDOC.match(text, index)
    if not match or (match.end() < len(text) and text[match.end()] not in _BOUNDARY):
        raise _Unsupported  # <<<, a quoted or unusual delimiter
    target = _Token("word", match.start(2), match.end(), match.group(2))
    kind = "<<-" if match.group(1) else "<<"
    return _Token("redirect", index, match.end(), kind, target=target, heredoc=True)


def _tokens(
    text: str, index: int, end: int, tokens: list[_Token], closes: dict[int, int], top: bool
) -> int:
    """Append the tokens of ``text[index:end]`` to ``tokens`` (so a caller keeps those read
    before an unsupported construct) and return where they stop: ``end``, or at the top level
    the first newline outside quotes (its here-documents follow it)."""
    length = len(text)
    while index < length and text[index] in " \t":
        index += 1
    while index < end:
        char = text[index]
        if char == "\n":
            if not top:
                raise _Unsupported
            return index
        if char == "#":
            # A comment runs to the end of the line. bashlex only agrees when a blank precedes
            # it ("ls;#x" is a comment to bash, a word to bashlex): leave that to it, and a
            # comment followed by more lines too.
            if top and index and text[index - 1] in " \t" and "\n" not in text[index:end]:
                return end
            raise _Unsupported
        operator = _OPERATOR.match(text, index) if char in "&|;()" else None
        if operator:
            if text.startswith((";;", ";&", "|&", "(("), index):
                raise _Unsupported
            tokens.append(_Token("op", index, operator.end(), operator.group()))
            index = operator.end()
        elif char == "<" and text.startswith("<<", index):
            if not top:
                raise _Unsupported
            token = _heredoc(text, index)
            tokens.append(token)
            index = token.end
        elif char in "<>&" or (char.isdigit() and _REDIRECT.match(text, index)):
            token = _redirect(text, index, closes)
            tokens.append(token)
            index = token.end
        else:
            token = _word(text, index, closes)
            tokens.append(token)
            index = token.end
        while index < length and text[index] in " \t":
            index += 1  # the blanks between tokens (most often one)
    return end


# --- trees ----------------------------------------------------------------------------------


def _reserved_node(token: _Token) -> Any:
    return _node(kind="reservedword", word=token.value, pos=(token.start, token.end))


def _operator_node(token: _Token) -> Any:
    return _node(kind="operator", op=token.value, pos=(token.start, token.end))


def _list(parts: list[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    return _node(kind="list", parts=parts, pos=(parts[0].pos[0], parts[-1].pos[1]))


class _Parser:
    """Recursive descent over the tokens of one line (or one ``$(…)``), following the
    grammar bashlex implements and the places where its tokenizer accepts reserved words."""

    def __init__(self, text: str, tokens: list[_Token], closes: dict[int, int]) -> None:
        self.text = text
        self.tokens = tokens
        self.closes = closes
        self.index = 0
        self.heredocs: list[tuple[Any, bool]] = []  # (redirect node, strip tabs), in order
        self.depth = 0  # compound commands around the current token

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def at_command_start(self) -> bool:
        """Would bashlex read a reserved word here (after an operator or reserved word)?"""
        if self.index == 0:
            return True
        previous = self.tokens[self.index - 1]
        return previous.kind == "op" or previous.reserved

    def reserved(self, word: str) -> Any:
        token = self.peek()
        if token is None or token.kind != "word" or token.value != word:
            raise _Unsupported
        if not self.at_command_start():
            raise _Unsupported
        token.reserved = word in {"do", "done", "while", "{", "}"}
        self.index += 1
        return _reserved_node(token)

    # -- lists --

    def unit(self) -> Any:
        """A whole line (or substitution): bashlex's ``simple_list``."""
        parts = self.items(frozenset())
        if self.peek() is not None:
            raise _Unsupported
        return _list(parts)

    def items(self, stops: frozenset[str]) -> list[Any]:
        """Pipelines and the list operators between them, up to the end, a ``)`` or a
        reserved word in ``stops`` read where bashlex reads reserved words."""
        parts: list[Any] = []
        while True:
            parts.append(self.pipeline())
            token = self.peek()
            if token is None or token.kind != "op" or token.value not in _LIST_OPERATORS:
                return parts
            parts.append(_operator_node(token))
            self.index += 1
            if token.value in {"&&", "||"}:
                continue
            following = self.peek()
            if (
                following is None
                or (following.kind == "op" and following.value == ")")
                or (following.kind == "word" and following.value in stops)
            ):
                return parts

    def compound_list(self, stops: frozenset[str]) -> Any:
        self.depth += 1
        parts = self.items(stops)
        self.depth -= 1
        return _list(parts)

    def pipeline(self) -> Any:
        nodes = [self.command()]
        pipes: list[Any] = []
        while (token := self.peek()) is not None and token.kind == "op" and token.value == "|":
            pipes.append(_node(kind="pipe", pipe="|", pos=(token.start, token.end)))
            self.index += 1
            nodes.append(self.command())
        if len(nodes) == 1:
            return nodes[0]
        parts: list[Any] = [nodes[0]]
        for pipe, node in zip(pipes, nodes[1:], strict=True):
            parts.extend((pipe, node))
        return _node(kind="pipeline", parts=parts, pos=(nodes[0].pos[0], nodes[-1].pos[1]))

    # -- commands --

    def command(self) -> Any:
        token = self.peek()
        if token is None:
            raise _Unsupported
        if token.kind == "op":
            if token.value != "(":
                raise _Unsupported
            return self.subshell()
        if token.kind == "word":
            if token.value == "for":
                return self.for_loop()
            if token.value == "while":
                return self.while_loop()
            if token.value == "{":
                return self.group()
        return self.simple()

    def simple(self) -> Any:
        parts: list[Any] = []
        seen_other = False  # bashlex takes NAME=value as an assignment only before anything else
        seen_word = False
        tokens, count = self.tokens, len(self.tokens)
        while self.index < count:
            token = tokens[self.index]
            if token.kind == "op":
                break
            if token.kind == "redirect":
                seen_other = True
                parts.append(self.redirect(token))
                self.index += 1
                continue
            value = token.value
            if value in {"{", "}"}:
                raise _Unsupported  # bashlex reads the word after a lone brace as a command start
            if not seen_other and _ASSIGNMENT.match(value):
                kind = "assignment"
            else:
                if not seen_word and (value in RESERVED or value[0] in "{}"):
                    raise _Unsupported  # a reserved word or a brace as the program
                seen_other = seen_word = True
                kind = "word"
            parts.append(self.word(token, kind))
            self.index += 1
        if not parts:
            raise _Unsupported
        return _node(kind="command", parts=parts, pos=(parts[0].pos[0], parts[-1].pos[1]))

    def redirect(self, token: _Token) -> Any:
        if token.heredoc:
            assert token.target is not None
            output = _node(
                kind="word",
                word=token.target.value,
                parts=[],
                pos=(token.target.start, token.target.end),
            )
        elif token.target is None:
            output = token.dup
        else:
            output = self.word(token.target)
        node = _node(
            kind="redirect",
            type=token.value,
            input=token.fd,
            output=output,
            heredoc=None,
            pos=(token.start, token.end),
        )
        if token.heredoc:
            if self.depth:
                raise _Unsupported  # here-documents are only read on simple commands at the top
            self.heredocs.append((node, token.value == "<<-"))
        return node

    def compound_redirects(self, node: Any) -> Any:
        redirects = []
        while (token := self.peek()) is not None and token.kind == "redirect":
            if token.heredoc:
                raise _Unsupported
            redirects.append(self.redirect(token))
            self.index += 1
        node.redirects = redirects
        if redirects:
            node.pos = (node.pos[0], redirects[-1].pos[1])
        return node

    def group(self) -> Any:
        opening = self.reserved("{")
        body = self.compound_list(frozenset({"}"}))
        closing = self.reserved("}")
        parts = [opening, body, closing]
        node = _node(
            kind="compound", list=parts, redirects=[], pos=(opening.pos[0], closing.pos[1])
        )
        return self.compound_redirects(node)

    def subshell(self) -> Any:
        token = self.peek()
        assert token is not None
        self.index += 1
        opening = _reserved_node(token)
        body = self.compound_list(frozenset())
        token = self.peek()
        if token is None or token.kind != "op" or token.value != ")":
            raise _Unsupported
        self.index += 1
        closing = _reserved_node(token)
        parts = [opening, body, closing]
        node = _node(
            kind="compound", list=parts, redirects=[], pos=(opening.pos[0], closing.pos[1])
        )
        return self.compound_redirects(node)

    def for_loop(self) -> Any:
        parts = [self.reserved("for")]
        name = self.peek()
        if name is None or name.kind != "word" or not re.fullmatch(_NAME, name.value):
            raise _Unsupported
        parts.append(self.word(name))
        self.index += 1
        token = self.peek()
        if token is not None and token.kind == "word" and token.value == "in":
            parts.append(_reserved_node(token))
            self.index += 1
            while (token := self.peek()) is not None and token.kind == "word":
                if token.value in {"{", "}"}:
                    raise _Unsupported
                parts.append(self.word(token))
                self.index += 1
            if token is None or token.kind != "op" or token.value != ";":
                raise _Unsupported
        if token is not None and token.kind == "op" and token.value == ";":
            parts.append(_reserved_node(token))  # bashlex makes the ";" a reserved word here
            self.index += 1
            parts.append(self.reserved("do"))
        elif token is not None and token.kind == "word" and token.value == "do":
            token.reserved = True  # "for x do": bashlex reads "do" after "for NAME"
            parts.append(_reserved_node(token))
            self.index += 1
        else:
            raise _Unsupported
        parts.append(self.compound_list(frozenset({"done"})))
        parts.append(self.reserved("done"))
        return self.loop("for", parts)

    def while_loop(self) -> Any:
        parts = [self.reserved("while")]
        condition = self.compound_list(frozenset({"do"}))
        if condition.kind != "list":
            raise _Unsupported  # "while { a; } do": bashlex fails an assertion
        parts.append(condition)
        parts.append(self.reserved("do"))
        parts.append(self.compound_list(frozenset({"done"})))
        parts.append(self.reserved("done"))
        return self.loop("while", parts)

    def loop(self, kind: str, parts: list[Any]) -> Any:
        pos = (parts[0].pos[0], parts[-1].pos[1])
        inner = _node(kind=kind, parts=parts, pos=pos)
        return self.compound_redirects(_node(kind="compound", list=[inner], redirects=[], pos=pos))

    # -- words --

    def word(self, token: _Token, kind: str = "word") -> Any:
        return _node(
            kind=kind, word=token.value, pos=(token.start, token.end), parts=self.expand(token)
        )

    def expand(self, token: _Token) -> list[Any]:
        """The command substitutions bashlex reports for a word: a port of the scan in
        ``bashlex.subst._expandwordinternal`` (parameter and tilde nodes left out)."""
        value = token.value
        if "$" not in value:
            return []
        text, start, end = self.text, token.start, token.end
        double_quoted = value[0] == '"'
        parts = []
        index = start
        while index < end:
            char = text[index]
            if char == "~" and index == start and not double_quoted:
                while index < end and text[index] not in "/\\'\"":
                    index += 1  # bashlex skips a leading ~user, $(…) included
            elif char == "$" and end - start > 1:
                following = text[index + 1] if index + 1 < end else ""
                if following and following in "0123456789$#?-!*@":
                    index += 2
                elif following == "{":
                    close = text.find("}", index + 2, end)
                    if close < 0:
                        raise _Unsupported
                    index = close + 1
                elif following == "(":
                    command = self.substitution(index)
                    close = command.pos[1] + 1  # bashlex ends it one past the inner tree
                    parts.append(
                        _node(kind="commandsubstitution", command=command, pos=(index, close))
                    )
                    index = close
                elif following == "[":
                    raise _Unsupported
                else:
                    index += 1
                    while index < end and (text[index].isalnum() or text[index] == "_"):
                        index += 1
            elif char == "\\":
                index += 2
            elif char == "'" and index == start and text[end - 1] == "'":
                return []  # bashlex: a word single-quoted as a whole has no substitutions
            else:
                index += 1
        return parts

    def substitution(self, dollar: int) -> Any:
        close = self.closes.get(dollar)
        if close is None:
            raise _Unsupported  # bashlex would see a $( the tokenizer did not
        tokens: list[_Token] = []
        _tokens(self.text, dollar + 2, close, tokens, self.closes, top=False)
        tree = _Parser(self.text, tokens, self.closes).unit()
        if tree.kind == "list" and (tree.parts[-1].kind == "operator" or tree.parts[-2].op != ";"):
            # bashlex only accepts ")" after a pipeline that follows ";" (or stands alone):
            # "$(a;)", "$(a &)", "$(a && b)" are errors to it.
            raise _Unsupported
        return tree


# --- lines ----------------------------------------------------------------------------------


def _here_documents(text: str, unit: int, newline: int, pending: list[tuple[Any, bool]]) -> int:
    """Attach the bodies that follow the newline at ``newline`` to the pending here-document
    redirections as bashlex does, and return the end of the last one. A missing delimiter
    raises the error bashlex raises (its parser for the line started at ``unit``)."""
    source = text if text.endswith("\n") else text + "\n"  # bashlex appends a newline
    index = newline + 1
    end = index
    for redirect, strip in pending:
        delimiter = redirect.output.word
        start = index
        document = []
        while True:
            if index >= len(source):
                message = f"here-document at line 0 delimited by end-of-file (wanted {delimiter!r})"
                raise errors.ParsingError(message, source[unit:], len(source) - unit)
            line_end = source.index("\n", index) + 1
            line = source[index:line_end]
            index = line_end
            if line.endswith("\\\n"):
                raise _Unsupported  # bashlex joins continued lines in here-documents
            if strip:
                line = line.lstrip("\t")
            if line[:-1] == delimiter:
                document.append(line[:-1])
                break
            document.append(line)
        end = index - 1
        redirect.heredoc = _node(kind="heredoc", value="".join(document), pos=(start, end))
        if redirect.pos[1] + 1 == start:
            redirect.pos = (redirect.pos[0], end)
    return end


def _parse(text: str) -> list[Any]:
    trees = []
    closes: dict[int, int] = {}
    index = 0
    while True:
        tokens: list[_Token] = []
        stop = _tokens(text, index, len(text), tokens, closes, top=True)
        parser = _Parser(text, tokens, closes)
        tree = parser.unit()
        trees.append(tree)
        if parser.heredocs:
            index = _here_documents(text, index, stop, parser.heredocs) + 1
        elif stop == len(text):
            return trees
        elif stop != tree.pos[1]:
            raise _Unsupported  # blanks or a comment before the newline
        else:
            index = stop + 1
        if index >= len(text):
            return trees
        if text[index] in " \t\n#":
            raise _Unsupported  # bashlex's reading of the next line is not reproduced for these


def parse(text: str) -> list[Any] | None:
    """The bashlex trees of ``text`` if it is in the supported subset, else None."""
    try:
        return parse_or_raise(text)
    except errors.ParsingError:
        return None


def parse_or_raise(text: str) -> list[Any] | None:
    """Like :func:`parse`, but where bashlex would fail because a here-document's delimiter
    never comes (a line in the subset otherwise), raise the very ``ParsingError`` it raises."""
    if not text.isascii() or not text.strip():
        return None
    try:
        return _parse(text)
    except _Unsupported:
        return None


def parse_prefix(text: str) -> tuple[list[Any], int]:
    """Trees for the leading list items of ``text`` that the fast parser reads, and where the
    rest starts (``len(text)`` when the whole line is read). The rest starts a new list item
    on the first line — after a top-level ``;``, ``&``, ``&&`` or ``||`` — so bashlex can parse
    it on its own; nothing is skipped. Items with here-documents are left to bashlex."""
    whole = parse(text)
    if whole is not None:
        return whole, len(text)
    if not text.isascii():
        return [], 0
    tokens: list[_Token] = []
    closes: dict[int, int] = {}
    with contextlib.suppress(_Unsupported):  # keep the tokens read before the failure
        _tokens(text, 0, len(text), tokens, closes, top=True)
    parser = _Parser(text, tokens, closes)
    parts: list[Any] = []
    with contextlib.suppress(_Unsupported):
        while True:
            node = parser.pipeline()
            token = parser.peek()
            if parser.heredocs or token is None or token.kind != "op":
                break
            if token.value not in _LIST_OPERATORS:
                break
            parts.extend((node, _operator_node(token)))
            parser.index += 1
    if not parts:
        return [], 0
    rest = _BLANKS.match(text, parts[-1].pos[1]).end()  # type: ignore[union-attr]
    if rest >= len(text):
        return [], 0
    return [_list(parts)], rest

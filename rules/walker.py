"""The walker: every simple command of a parsed line, what runs it and what it runs, with the
problems that keep a rule from allowing it. Program knowledge is programs/'; structure
is here."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rules.bashparse import (
    LIMITS,
    Size,
    command_names,
    disagreement,
    error_message,
    over,
    parse,
    size_of,
)
from rules.environment import (
    ASSIGNMENT_WORD,
    KNOWN_REFERENCE,
    dangerous_variable,
    environment_problem,
)
from rules.fileargs import unmodelled_paths
from rules.invocations import (
    HARMLESS_DEVICES,
    MAX_CWDS,
    TRUSTED_BIN_DIRS,
    Contained,
    Cwd,
    FileAccess,
    Invocation,
    NetworkAccess,
    View,
    as_written,
    normalise_path,
    resolve_paths,
)
from rules.model import FileAction, host_of_url
from rules.patterns import SENTINEL
from rules.programs import Role, interprets, runs, understand
from rules.programs.base import ShellDirectory
from rules.programs.configuration import configures
from rules.programs.walking import Command, Outcome
from rules.programs.wrappers import unwrapper
from rules.text import hidden_characters, sanitise
from rules.words import (
    MAX_BRACE_WORDS,
    Word,
    WordKind,
    brace_expand,
    literal,
    program_name,
    render,
    scan_word,
    unknown,
)

MAX_NESTING = 4  # bash -c inside eval inside sh -c …: deeper than this is not judged
MAX_SCANNED_NAMES = 64  # distinct words a too-large line's deny scan checks
MAX_WRAPPERS = 8  # timeout nice env …: a longer chain is not unwrapped
MAX_PATHS = 40  # path words judged per line (each costs a match against every file rule)


_CHANGES_DIRECTORY = re.compile(r"\b(?:cd|pushd|popd)\b")


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
class _Context:
    text: str  # the source the current bashlex positions refer to
    origin: str
    depth: int
    stdin: str | None = None  # "pipe" when fed by a pipeline
    # Where the simple commands of this text start, as the walk finds them (compared with
    # the second parser's); shared by the substitutions walked inside the same text.
    starts: set[int] = field(default_factory=set, compare=False)

    def derive(self, origin: str, stdin: str | None) -> _Context:
        """The same text seen from a substitution or a pipeline element (built directly:
        dataclasses.replace costs several times more, once per pipeline element)."""
        return _Context(self.text, origin, self.depth, stdin, self.starts)


def visible(text: str) -> str:
    """Invisible characters dropped (``cu\u200brl`` reads as ``curl``); control characters
    and odd spaces become word breaks."""
    hidden = set(hidden_characters(text))
    if not hidden:
        return text
    return "".join(
        (" " if unicodedata.category(char) in {"Cc", "Zs", "Zl", "Zp"} else "")
        if char in hidden
        else char
        for char in text
    )


def _crude_fragments(text: str) -> list[list[Word]]:
    """Best-effort split of text bashlex rejected, used only to let a deny rule still win.
    Invisible characters are dropped (``cu\u200brl`` is judged as ``curl``), control
    characters and odd spaces become word breaks."""
    fragments = re.split(r"\$\(|<\(|>\(|[;&|\n(){}`]", visible(text))
    result = []
    for fragment in fragments:
        words = [literal(word) for word in re.sub(r"['\"\\]", "", fragment).split()]
        if words:
            result.append(words)
    return result


def destination_host(word: Word) -> str | None:
    """The host of a URL a program contacts (``git@host:repo`` and a bare ``host/path``
    too); None when only known at run time or not readable."""
    if word.kind is not WordKind.LITERAL:
        return None
    value = word.value
    if "://" not in value:
        scp = re.match(r"^[^/\s@]+@([^/\s:]+):", value)
        if scp:
            return scp.group(1).lower()
        value = "http://" + value
    return host_of_url(value)


# A word with no quote, expansion, glob, brace, tilde or escape: its value is its text.
_SIMPLE_WORD = re.compile(r"[A-Za-z0-9_\-./:=,+@%^]+")
_QUOTED_WORD = re.compile(r"'[^'$`\\]*'|\"[^\"$`\\]*\"")
_ASSIGNING_EXPANSION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")


class Walker:
    def __init__(self, workspace: str, expand: dict[str, str]) -> None:
        self.workspace = workspace
        self.expand = expand
        self.cwd: Cwd = frozenset({workspace})
        self.out: list[Invocation] = []
        # The workspace (its .venv/bin included) is the agent's to write: never trusted.
        self.trusted_dirs = TRUSTED_BIN_DIRS
        # What judging has cost so far, over every text this line runs (bash -c, eval …).
        self.size = Size(0, 0, 0, 0, 0)
        self.paths = 0
        self.paths_left_out = 0

    def finish(self) -> None:
        if self.paths_left_out:
            reason = (
                f"names more than {MAX_PATHS} paths ({self.paths_left_out} more not judged one "
                "by one; see docs/rules.md)"
            )
            self.out.append(
                Invocation(text=f"{self.paths_left_out} more paths", problems=(reason,))
            )

    # -- entry points --

    def run_text(self, text: str, origin: str, depth: int) -> None:
        self.size = self.size + size_of(text)
        too_complex = over(self.size)
        if too_complex is not None:
            self.out.append(
                Invocation(text=sanitise(text[:200]), problems=(too_complex,), origin=origin)
            )
            self.deny_scan(text, too_complex, origin)
            return
        if depth > MAX_NESTING:
            self.out.append(
                Invocation(text=sanitise(text), problems=("nested too deeply to judge",))
            )
            self.fallback(text, "nested too deeply to judge", origin)
            return
        try:
            trees, parsed = parse(text)
        except Exception as error:  # noqa: BLE001 - bashlex raises many types; all mean "cannot parse"
            reason = f"unparseable: {error_message(error)}"
            self.out.append(Invocation(text=sanitise(text), problems=(reason,), origin=origin))
            self.fallback(text, reason, origin)
            return
        context = _Context(text=parsed, origin=origin, depth=depth)
        for tree in trees:
            self.node(tree, context)
        second = disagreement(context.starts, parsed)
        if second is not None:
            # Never allowed; what tree-sitter alone sees is judged crudely so a deny wins.
            reason, only_theirs = second
            self.out.append(Invocation(text=sanitise(text), problems=(reason,), origin=origin))
            if only_theirs:
                self.fallback("\n".join(only_theirs), reason, origin)

    def deny_scan(self, text: str, reason: str, origin: str) -> None:
        """A line too large to judge command by command: each word that may be a program is
        checked against deny rules alone (in constant time per distinct word), so a denied
        program still makes it deny; nothing from here is ever allowed."""
        views = tuple(
            View((literal(name),), program_name(literal(name)), True)
            for name in command_names(text)[:MAX_SCANNED_NAMES]
        )
        self.out.append(
            Invocation(
                text=sanitise(text[:200]),
                views=views,
                problems=(reason,),
                origin=origin or "deny scan",
                fallback=True,
            )
        )

    def crude(self, text: str, reason: str, origin: str) -> None:
        """A text that is not parsed: split crudely when that is cheap, else deny-scanned."""
        self.fallback(text, reason, origin)

    def fallback(self, text: str, reason: str, origin: str) -> None:
        """Judge crude fragments of text that could not be parsed, so that an obvious deny
        still wins; nothing from a fallback can ever be allowed. The split covers the whole
        text, here-document bodies included, so it has its own bound: past the engine's
        limits on commands and words, only the deny scan runs (constant time per word)."""
        fragments = _crude_fragments(text)
        if len(fragments) > LIMITS.commands or sum(map(len, fragments)) > LIMITS.words:
            self.deny_scan(visible(text), reason, origin)
            return
        start = len(self.out)
        saved_cwd = self.cwd
        for words in fragments:
            context = _Context(text=text, origin="best-effort split", depth=MAX_NESTING)
            self.simple(words, [], [], context, render(words), [])
        self.cwd = saved_cwd
        self.out[start:] = [
            replace(
                item,
                effective=None,
                transparent=False,
                problems=(*item.problems, reason),
                fallback=True,
            )
            for item in self.out[start:]
        ]

    # -- tree walking --

    def in_subshell(self, node: Any, context: _Context) -> None:
        """Walk ``node`` as bash runs it in a child process: a ``cd`` inside stays inside."""
        saved = self.cwd
        self.node(node, context)
        self.cwd = saved

    def node(self, node: Any, context: _Context) -> None:
        kind = node.kind
        if kind in {"while", "until", "for"} and _CHANGES_DIRECTORY.search(
            context.text[node.pos[0] : node.pos[1]]
        ):
            # Each iteration starts where the previous one left off: give up on the cwd.
            self.cwd = None
        if kind in {"list", "if", "while", "until"}:
            parts = node.parts
            for index, part in enumerate(parts):
                following = parts[index + 1] if index + 1 < len(parts) else None
                if part.kind in {"operator", "reservedword"}:
                    continue
                if following is not None and getattr(following, "op", None) == "&":
                    self.in_subshell(part, context)  # a background job is a child process
                else:
                    self.node(part, context)
        elif kind == "pipeline":
            piped = False
            commands = [part for part in node.parts if part.kind not in {"pipe", "reservedword"}]
            for part in node.parts:
                if part.kind == "pipe":
                    piped = True
                elif part.kind != "reservedword":
                    part_context = context.derive(
                        context.origin, "pipe" if piped else context.stdin
                    )
                    if len(commands) > 1:
                        self.in_subshell(part, part_context)  # each element is a child process
                    else:
                        self.node(part, part_context)
        elif kind == "compound":
            self.compound(node, context)
        elif kind == "for":
            self.for_loop(node, context)
        elif kind == "function":
            source = sanitise(context.text[node.pos[0] : node.pos[1]])
            self.out.append(
                Invocation(
                    text=source,
                    problems=("defines a shell function; calls to it cannot be judged",),
                    origin=context.origin,
                )
            )
            for part in node.parts:
                if part.kind == "compound":
                    self.compound(part, context)
        elif kind == "command":
            self.command(node, context)
        elif kind in {"operator", "reservedword", "pipe"}:
            return
        else:
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=(f"unsupported shell construct ({kind})",),
                    origin=context.origin,
                )
            )

    def compound(self, node: Any, context: _Context) -> None:
        items = node.list
        redirects = getattr(node, "redirects", None) or []
        if redirects:
            # Opened before the group runs, so relative to the directory it starts in.
            problems: list[str] = []
            parsed = [self.redirect(item, context, problems) for item in redirects]
            text = sanitise(context.text[node.pos[0] : node.pos[1]])
            self.out.append(self.invocation_without_command(text, [], parsed, context, problems))
        subshell = bool(items) and items[0].kind == "reservedword" and items[0].word == "("
        saved = self.cwd
        if (
            len(items) > 1
            and items[0].kind == "reservedword"
            and items[0].word == "("
            and items[1].kind == "compound"
            and items[1].list
            and items[1].list[0].kind == "reservedword"
            and items[1].list[0].word == "("
        ):
            # bashlex reads the arithmetic command ((…)) as two nested subshells.
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=("arithmetic command ((…)) is not judged",),
                    origin=context.origin,
                )
            )
        for item in items:
            if item.kind != "reservedword":
                self.node(item, context)
        if subshell:
            self.cwd = saved

    def for_loop(self, node: Any, context: _Context) -> None:
        problems: list[str] = []
        seen_in = False
        for part in node.parts:
            if part.kind == "reservedword":
                seen_in = seen_in or part.word == "in"
            elif part.kind == "word":
                word = self.word(part, context, problems)
                if not seen_in and dangerous_variable(word.value):
                    problems.append(f"the loop assigns {word.value}, which changes what runs")
            else:
                self.node(part, context)
        if problems:
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=tuple(problems),
                    origin=context.origin,
                )
            )

    # -- words --

    def word(self, node: Any, context: _Context, problems: list[str]) -> Word:
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

    def brace_words(self, node: Any, context: _Context, word: Word) -> list[Word]:
        """The words bash makes of a brace word, each read like any word: ``grep {-r,x}
        /etc`` is ``grep -r x /etc`` (bash(1), "Brace Expansion": before every other
        expansion, so ``$WORKSPACE/{a,b}`` is two words, each then expanded)."""
        raw = context.text[node.pos[0] : node.pos[1]]
        expanded = brace_expand(raw)
        if expanded is None:
            return [word]  # too many words: the problem is already recorded, paths unknown
        result = []
        for text in expanded:
            scanned = scan_word(text, self.expand)
            if scanned.value is None:
                result.append(unknown(sanitise(text)))
                continue
            kind = WordKind.GLOB if _unquoted_glob(text) else WordKind.LITERAL
            result.append(Word(scanned.value, kind, scanned.tilde))
        return result

    def redirect(self, node: Any, context: _Context, problems: list[str]) -> tuple[str, Any]:
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

    # -- commands --

    def command(self, node: Any, context: _Context) -> None:
        slot = len(self.out)
        problems: list[str] = []
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[tuple[str, Any]] = []
        started = False
        for part in node.parts:
            kind = part.kind
            if kind == "word" and not started:
                context.starts.add(part.pos[0])  # where bashlex sees this command start
                started = True
            if kind == "word" or kind == "assignment":
                word = self.word(part, context, problems)
                # bash reads NAME=value before the program as an assignment wherever it is
                # (bashlex does not after a redirection): "> f X=1 curl" runs curl.
                name = (
                    None if words else ASSIGNMENT_WORD.match(context.text, part.pos[0], part.pos[1])
                )
                if name:
                    assignments.append(
                        (name.group(1), replace(word, value=word.value[name.end() - part.pos[0] :]))
                    )
                elif word.brace:
                    words.extend(self.brace_words(part, context, word))
                else:
                    words.append(word)
            elif kind == "redirect":
                redirects.append(self.redirect(part, context, problems))
            else:
                problems.append(f"unsupported part of a command ({kind})")
        text = sanitise(context.text[node.pos[0] : node.pos[1]])
        self.simple(words, assignments, redirects, context, text, problems, slot)

    def invocation_without_command(
        self,
        text: str,
        assignments: list[tuple[str, Word]],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
    ) -> Invocation:
        files, network = self.redirect_accesses(redirects)
        for name, value in assignments:
            problems.extend(self.assignment_problems(name, value, exported=False))
        return Invocation(
            text=text,
            transparent=True,
            problems=tuple(problems),
            files=tuple(files),
            network=tuple(network),
            origin=context.origin,
        )

    def simple(
        self,
        words: list[Word],
        assignments: list[tuple[str, Word]],
        redirects: list[tuple[str, Any]],
        context: _Context,
        text: str,
        problems: list[str],
        slot: int | None = None,
    ) -> None:
        slot = len(self.out) if slot is None else slot
        # An empty quoted word ('' or "") is a real argument (grep -r '' /etc: the pattern
        # is '', /etc a path); only leading ones are dropped, as before, to find the program.
        start = 0
        while (
            start < len(words) and not words[start].value and words[start].kind is WordKind.LITERAL
        ):
            start += 1
        words = words[start:]
        if not words:
            item = self.invocation_without_command(text, assignments, redirects, context, problems)
            self.out.insert(slot, item)
            return
        files, network = self.redirect_accesses(redirects) if redirects else ([], [])
        for name, value in assignments:
            problems.extend(self.assignment_problems(name, value, exported=True))
        views: list[View] = []
        current = words
        chdir: Word | None = None
        # The view of ``current``, the innermost command found so far; None while the words
        # after a wrapper have no view (their program is only known at run time).
        effective: View | None = None
        while True:
            head = current[0]
            if head.kind is WordKind.UNKNOWN:
                problems.append(f"the program name {head.display} is not known before run time")
                break
            if head.kind is WordKind.GLOB or head.tilde:
                problems.append(f"the program name {head.display} is expanded by the shell")
                break
            effective = self.view(current)
            views.append(effective)
            if len(views) > MAX_WRAPPERS:
                problems.append(f"more than {MAX_WRAPPERS} wrappers around one command")
                break
            name = effective.program
            if not effective.trusted:
                break  # ./nice is the agent's file, not nice: judged as the program it is
            unwrap = unwrapper(name)
            if unwrap is None:
                break
            result = unwrap(current)
            problems.extend(result.problems)
            for wrapper_name, value in result.assignments:
                problems.extend(self.assignment_problems(wrapper_name, value, exported=True))
            files.extend(self.accesses_of(result.files, "wrapper option", self.cwd))
            for code in result.code:
                # python -m pip without -I: a pip module in the working directory runs.
                problems.extend(self.code_problems(name, code, self.cwd, contained=True))
            chdir = result.chdir or chdir
            if result.rest is None:
                break
            current = result.rest
            effective = None
            if result.final:
                effective = self.view(current)
                views.append(effective)
                break
        cwd = self.cwd
        if chdir is not None:
            chdir_paths = resolve_paths(chdir, self.cwd)
            cwd = frozenset(chdir_paths) if chdir_paths else None
        inner: list[tuple[list[Word], str, Cwd]] = []
        transparent = False
        if effective is not None:
            transparent = self.inspect(
                effective, views, redirects, context, problems, files, inner, network, cwd
            )
        item = Invocation(
            text=text,
            views=tuple(views),
            effective=effective,
            transparent=transparent,
            problems=tuple(dict.fromkeys(problems)),
            files=tuple(files),
            network=tuple(network),
            origin=context.origin,
        )
        self.out.insert(slot, item)
        for inner_words, origin, inner_cwd in inner:
            saved = self.cwd
            self.cwd = inner_cwd
            self.simple(
                inner_words, [], [], context.derive(origin, context.stdin), render(inner_words), []
            )
            self.cwd = saved  # a command run by another one cannot move this shell

    def view(self, words: list[Word]) -> View:
        head = words[0]
        name = program_name(head)
        if "/" not in head.value:
            trusted = True
        else:
            directory = normalise_path(posixpath.dirname(head.value) or ".")
            trusted = directory in self.trusted_dirs
        return View(words=tuple(words), program=name, trusted=trusted)

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

    def redirect_accesses(
        self, redirects: list[tuple[str, Any]]
    ) -> tuple[list[FileAccess], list[NetworkAccess]]:
        files: list[FileAccess] = []
        network: list[NetworkAccess] = []
        for operator, target in redirects:
            if not isinstance(target, Word) or operator == "<<<":
                continue  # descriptors, here-documents and here-strings are not paths
            source = f"{operator} {target.display}"
            paths = resolve_paths(target, self.cwd)
            if paths is not None and len(paths) == 1:
                path = paths[0]
                if path in HARMLESS_DEVICES or re.fullmatch(r"/dev/fd/\d+", path):
                    continue
                if re.match(r"^/dev/(tcp|udp)/", path):
                    host = path.split("/")[3] if len(path.split("/")) > 3 else ""
                    network.append(NetworkAccess(host=host.lower(), source=source))
                    continue
            actions = {
                "<": [FileAction.READ],
                "<>": [FileAction.READ, FileAction.WRITE],
            }.get(operator, [FileAction.WRITE])
            for action in actions:
                files.extend(
                    self.accesses_of(
                        [(action, target)], "", self.cwd, require_allow=True, source=source
                    )
                )
        return files, network

    def accesses_of(
        self,
        items: Sequence[tuple[FileAction | None, Word]],
        what: str,
        cwd: Cwd,
        *,
        require_allow: bool | None = None,
        source: str | None = None,
    ) -> list[FileAccess]:
        """Path words as accesses. Writes and deletes need an allow rule, reads do not
        (unless ``require_allow`` says otherwise, as for redirections)."""
        result = []
        for action, word in items:
            if self.paths >= MAX_PATHS:
                self.paths_left_out += 1  # reported once by finish(): the line is asked about
                continue
            self.paths += 1
            needs_allow = (
                action in {FileAction.WRITE, FileAction.DELETE}
                if require_allow is None
                else require_allow
            )
            resolved = resolve_paths(word, cwd)
            paths: list[str | None] = [None] if resolved is None else list(resolved)
            for path in paths:
                result.append(
                    FileAccess(
                        action=action,
                        path=path,
                        source=source or f"{what} {word.display}",
                        glob=word.kind is WordKind.GLOB,
                        require_allow=needs_allow,
                        uncertain=len(paths) > 1,
                    )
                )
        return result

    def inspect(
        self,
        view: View,
        views: Sequence[View],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
        files: list[FileAccess],
        inner: list[tuple[list[Word], str, Cwd]],
        network: list[NetworkAccess],
        cwd: Cwd,
    ) -> bool:
        """What the effective command runs (its program's hook, programs.runs) and what it
        does with its words (its table). Returns True when the command has nothing of its
        own to allow (eval: its inner commands decide)."""
        hook = runs(view.program)
        if hook is not None:
            command = Command(
                list(view.words), view.program, redirects, problems, inner, cwd, context.depth
            )
            outcome = hook(command, self)
            if outcome is Outcome.TRANSPARENT:
                return True
            if outcome is Outcome.RUNNER:
                return False  # its command is judged as a part of its own
        self.understood(view, views, redirects, problems, files, network, cwd)
        return False

    def understood(
        self,
        view: View,
        views: Sequence[View],
        redirects: list[tuple[str, Any]],
        problems: list[str],
        files: list[FileAccess],
        network: list[NetworkAccess],
        cwd: Cwd,
    ) -> None:
        """Read the command against its program's table (programs.understand): what it
        cannot understand is a problem; the paths it uses become file accesses; the code it
        runs must not be code the agent can write."""
        words = list(view.words)
        name = view.program
        found = understand(as_written(view, views))
        first = len(problems)  # code the agent can write is the first reason given
        problems.extend(found.problems)
        if "/" in words[0].value:
            # A program run by its path: from the workspace (its .venv/bin too) it is a
            # file the agent can write.
            problems.extend(self.code_problems(name, words[0], cwd))
        if found.chdir is not None and found.chdir.kind is WordKind.GLOB:
            # cd /et? goes wherever the pattern matches first: not a place known here.
            found.chdir = unknown(found.chdir.value)
        moves = found.shell_directory
        if found.chdir is not None and moves is ShellDirectory.MOVED:
            targets = resolve_paths(found.chdir, self.cwd) if found.chdir.value != "-" else None
            union = None if targets is None or self.cwd is None else self.cwd | set(targets)
            self.cwd = union if union is not None and len(union) <= MAX_CWDS else None
            return
        if moves is ShellDirectory.FORGOTTEN:
            self.cwd = None  # the directory stack is not tracked
            return
        if found.chdir is not None:
            chdir_paths = resolve_paths(found.chdir, cwd)
            cwd = frozenset(chdir_paths) if chdir_paths else None
        if not found.modelled:
            # What an unknown program does with a path is unknown: any path-looking word a
            # deny or ask rule covers makes it ask (relative ones too, from the cwd).
            for word in unmodelled_paths(words[1:]):
                files.extend(self.accesses_of([(None, word)], f"argument of {name}:", cwd))
            return
        for use in found.uses:
            action = ROLE_ACTIONS[use.role]
            files.extend(self.accesses_of([(action, use.word)], use.source, cwd))
            if use.recursive and use.word.kind is not WordKind.UNKNOWN and action is not None:
                # grep -r D, cp -r D …: every file below D. Judged as "D/…" so a deny rule
                # for any path below D applies, and an allow must cover it all.
                below = replace(use.word, value=use.word.value.rstrip("/") + "/" + SENTINEL)
                files.extend(
                    replace(access, recursive=True)
                    for access in self.accesses_of(
                        [(action, below)], use.source, cwd, require_allow=True
                    )
                )
        for created in found.creates:
            for path in resolve_paths(created, cwd) or []:
                reason = configures(path)
                if reason:
                    problems.append(f"{name} may write {sanitise(path)}, which {reason}")
        for destination in found.destinations:
            network.append(
                NetworkAccess(destination_host(destination), f"{name} {destination.display}", True)
            )
        interpreter = interprets(name)
        for word in found.code:
            # Before "what the script does is not modelled": the sharper reason.
            written = self.code_problems(name, word, cwd, contained=interpreter)
            problems[first:first] = written
            first += len(written)
        if interpreter:
            for operator, target in redirects:
                if operator == "<" and isinstance(target, Word):
                    problems.extend(self.code_problems(name, target, cwd, contained=True))

    def code_problems(
        self, name: str, word: Word, cwd: Cwd, *, contained: bool = False
    ) -> list[str]:
        """The agent's writable places are never a source of trusted code: a script, module
        or program file there (or only known at run time) may be the agent's own.
        ``contained``: an interpreter runs it, which an enforcing executor can contain
        (programs.base.Contained); a program file run by its path is never contained."""
        mark = Contained if contained else str
        paths = resolve_paths(word, cwd)
        if paths is None:
            return [mark(f"{name} runs {word.display}, which is only known at run time")]
        for path in paths:
            if path.startswith(("/dev/", "/proc/")) or path in {"/dev", "/proc"}:
                return [mark(f"{name} runs code from {path}, which the engine cannot see")]
            if self.agent_writable(path):
                return [
                    mark(
                        f"{name} runs code from {sanitise(path)}, which the agent can write "
                        "(agent-written code is never allowed by a rule)"
                    )
                ]
        return []

    def agent_writable(self, path: str) -> bool:
        return any(
            path == root or path.startswith(root.rstrip("/") + "/")
            for root in (self.workspace, *WRITABLE_ROOTS)
        )

    def command_string(self, word: Word, origin: str, depth: int, problems: list[str]) -> None:
        """Judge a word that another shell runs as a command line (``bash -c``, ``trap``)."""
        if word.kind is not WordKind.LITERAL:
            problems.append(f"{origin}: the command string is not known before run time")
        else:
            saved = self.cwd
            self.run_text(word.value, origin, depth + 1)
            self.cwd = saved

    def report(self, invocation: Invocation) -> None:
        self.out.append(invocation)


ROLE_ACTIONS: dict[Role, FileAction | None] = {
    Role.READ: FileAction.READ,
    Role.WRITE: FileAction.WRITE,
    Role.DELETE: FileAction.DELETE,
    Role.UNKNOWN: None,
}


# Besides the workspace, where the agent can write in a hardened sandbox (the root file
# system is read-only): code found there may be the agent's own.
WRITABLE_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")  # noqa: S108 — paths judged

"""The walker: every simple command of a parsed line, what runs it and what it runs, with the
problems that keep a rule from allowing it. It walks the syntax tree — lists, pipelines,
subshells, groups, loops, functions, the commands run by other commands — and knows no
program: the wrappers it strips, the commands a program runs (its hook) and what a
command does with its words are programs/'. How words and redirections expand is
expansions.py's; what a command touches, accesses.py's."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rules.accesses import MAX_PATHS, Accesses
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
from rules.budget import spend
from rules.environment import ASSIGNMENT_WORD, dangerous_variable
from rules.expansions import Context, Expansions
from rules.invocations import (
    TRUSTED_BIN_DIRS,
    Cwd,
    FileAccess,
    Invocation,
    NetworkAccess,
    View,
    normalise_path,
    resolve_paths,
)
from rules.programs import CHANGES_DIRECTORY, runs
from rules.programs.walking import Command, Outcome
from rules.programs.wrappers import unwrapper
from rules.text import hidden_characters, sanitise
from rules.words import Word, WordKind, literal, program_name, render

MAX_NESTING = 4  # bash -c inside eval inside sh -c …: deeper than this is not judged
MAX_SCANNED_NAMES = 64  # distinct words a too-large line's deny scan checks
MAX_WRAPPERS = 8  # timeout nice env …: a longer chain is not unwrapped
_DESCRIPTOR_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


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


class Walker(Expansions, Accesses):
    def __init__(
        self, workspace: str, expand: dict[str, str], line_values: frozenset[str] = frozenset()
    ) -> None:
        self.workspace = workspace
        self.expand = expand
        # Names in ``expand`` whose values the line's own statements assign: expanded in
        # the line's own text only (the second reading, rules.shell.decompose).
        self.line_values = line_values
        self.cwd: Cwd = frozenset({workspace})
        self.out: list[Invocation] = []
        # The workspace (its .venv/bin included) is the agent's to write: never trusted.
        self.trusted_dirs = TRUSTED_BIN_DIRS
        # What judging has cost so far, over every text this line runs (bash -c, eval …).
        self.size = Size(0, 0, 0, 0, 0)
        self.paths = 0
        self.paths_left_out = 0
        # Whether the statement being walked certainly runs, in the line's own shell, after
        # every one before it (a top-level statement after ";" or a newline, or the first).
        self.certain = True
        # Variables a certain statement assigns a literal (None: assigned otherwise too),
        # for the second reading that lets a deny rule win (rules.shell.decompose).
        self.literals: dict[str, str | None] = {}

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
        if depth and self.line_values:
            # Another shell's text (bash -c, eval's is the same shell but judged alike):
            # the line's own values are not certain there.
            expand, self.expand = (
                self.expand,
                {
                    name: value
                    for name, value in self.expand.items()
                    if name not in self.line_values
                },
            )
            try:
                self.walk_text(text, origin, depth)
            finally:
                self.expand = expand
            return
        self.walk_text(text, origin, depth)

    def walk_text(self, text: str, origin: str, depth: int) -> None:
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
        context = Context(text=parsed, origin=origin, depth=depth)
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
            context = Context(text=text, origin="best-effort split", depth=MAX_NESTING)
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

    def in_subshell(self, node: Any, context: Context) -> None:
        """Walk ``node`` as bash runs it in a child process: a ``cd`` inside stays inside."""
        saved = self.cwd
        self.uncertain(node, context)
        self.cwd = saved

    def uncertain(self, node: Any, context: Context) -> None:
        """Walk ``node``, which may not run, or not in the line's own shell."""
        saved, self.certain = self.certain, False
        self.node(node, context)
        self.certain = saved

    def node(self, node: Any, context: Context) -> None:
        kind = node.kind
        if kind in {"while", "until", "for"} and CHANGES_DIRECTORY.search(
            context.text[node.pos[0] : node.pos[1]]
        ):
            # Each iteration starts where the previous one left off: give up on the cwd.
            self.cwd = None
        if kind in {"list", "if", "while", "until"}:
            parts = node.parts
            previous: str | None = None
            for index, part in enumerate(parts):
                following = parts[index + 1] if index + 1 < len(parts) else None
                if part.kind in {"operator", "reservedword"}:
                    previous = getattr(part, "op", None) or getattr(part, "word", None)
                    continue
                if following is not None and getattr(following, "op", None) == "&":
                    self.in_subshell(part, context)  # a background job is a child process
                elif kind == "list" and previous in {None, ";", "\n"}:
                    self.node(part, context)
                else:
                    self.uncertain(part, context)  # after && or ||, or in a condition or loop
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
            saved, self.certain = self.certain, False
            self.for_loop(node, context)
            self.certain = saved
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
                    saved, self.certain = self.certain, False
                    self.compound(part, context)
                    self.certain = saved
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

    def compound(self, node: Any, context: Context) -> None:
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
        certain = self.certain
        self.certain = certain and not subshell
        for item in items:
            if item.kind != "reservedword":
                self.node(item, context)
        self.certain = certain
        if subshell:
            self.cwd = saved

    def for_loop(self, node: Any, context: Context) -> None:
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

    # -- commands --

    def command(self, node: Any, context: Context) -> None:
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
        context: Context,
        problems: list[str],
    ) -> Invocation:
        files, network = self.redirect_accesses(redirects)
        for name, value in assignments:
            problems.extend(self.assignment_problems(name, value, exported=False))
            certain = (
                self.certain
                and not context.depth
                and value.kind is WordKind.LITERAL
                and not redirects
            )
            self.literals[name] = value.value if certain and name not in self.literals else None
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
        context: Context,
        text: str,
        problems: list[str],
        slot: int | None = None,
    ) -> None:
        spend()
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
        for word in words:
            # {NAME}>file (bash 4.1+, "Redirections"): bash opens the file on a descriptor
            # of 10 or more and assigns its number to NAME, in the shell itself.
            descriptor = _DESCRIPTOR_VARIABLE.fullmatch(word.value)
            if descriptor and word.kind is WordKind.LITERAL and redirects:
                problems.extend(self.assignment_problems(descriptor.group(1), word, exported=False))
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

    def inspect(
        self,
        view: View,
        views: Sequence[View],
        redirects: list[tuple[str, Any]],
        context: Context,
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

"""Settings.json rules compiled for one context, and matched against what a command line
does: shell views (certainly, or for some run-time value), paths and hosts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any

from rules.budget import spend
from rules.invocations import FileAccess, View
from rules.model import Direction, FileAction, Kind, Rule, RuleSet
from rules.patterns import (
    SENTINEL,
    STAR,
    PathPattern,
    ShellPattern,
    Token,
    compile_path,
    compile_shell,
    could_match,
    glob_tokens,
    host_matches,
)
from rules.words import Word, WordKind

LISTS = ("deny", "ask", "allow")


_MAX_CANDIDATE_KEYS = 1024  # program names per rule list whose candidates are remembered


class Match(Enum):
    NONE = 0
    POSSIBLE = 1  # for some run-time value
    CERTAIN = 2


# --- compiled rules ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compiled:
    rule: Rule
    position: int
    shell: ShellPattern | None = None
    path: PathPattern | None = None


@dataclass
class RuleList:
    shell_by_program: dict[str, list[Compiled]] = field(default_factory=dict)
    shell_any: list[Compiled] = field(default_factory=list)
    files: dict[FileAction, list[Compiled]] = field(default_factory=dict)
    network: list[Compiled] = field(default_factory=list)
    _combined: dict[FileAction, tuple[re.Pattern[str], list[Compiled]]] = field(
        default_factory=dict, repr=False
    )
    _candidates: dict[tuple[str, ...], list[Compiled]] = field(default_factory=dict, repr=False)

    def first_path_rule(self, action: FileAction, path: str) -> Compiled | None:
        """The first rule for ``action`` that matches the plain path ``path`` (no glob, no
        sentinel): one pass of one regex over the path for the whole list."""
        combined = self._combined.get(action)
        if combined is None:
            items = self.files.get(action, [])
            alternatives = "|".join(
                f"(?P<r{index}>{item.path.regex.pattern if item.path else '.*'})"
                for index, item in enumerate(items)
            )
            combined = (re.compile(alternatives or "(?!)", re.DOTALL), items)
            self._combined[action] = combined
        match = combined[0].fullmatch(path)
        if match is None or match.lastgroup is None:
            return None
        return combined[1][int(match.lastgroup[1:])]

    def shell_candidates(self, programs: tuple[str, ...]) -> list[Compiled]:
        """The rules that may match a command of these programs, in list order. The same
        few programs come up again and again: remembered (a bounded number of them)."""
        cached = self._candidates.get(programs)
        if cached is not None:
            return cached
        found = {id(c): c for p in programs for c in self.shell_by_program.get(p, ())}
        if not found:
            result = self.shell_any
        else:
            candidates = list(found.values()) + self.shell_any
            result = sorted(candidates, key=lambda c: c.position)  # first rule in the list wins
        if len(self._candidates) >= _MAX_CANDIDATE_KEYS:
            self._candidates.clear()
        self._candidates[programs] = result
        return result


@dataclass
class CompiledRules:
    workspace: str
    lists: dict[str, RuleList]


def _compile_rule(
    rule: Rule, position: int, workspace: str, context_id: str, list_name: str
) -> Compiled:
    if rule.pattern is None:
        return Compiled(rule, position)
    if rule.kind == Kind.SHELL:
        return Compiled(rule, position, shell=compile_shell(rule.pattern, workspace, context_id))
    if rule.kind == Kind.FILE:
        pattern = rule.pattern
        if list_name != "allow" and pattern.startswith("**/"):
            # A deny (or ask) for "**/.ssh/**" means any .ssh, not only the workspace's: it
            # fails closed. An allow starting with "**/" stays inside the workspace.
            pattern = "/" + pattern
        return Compiled(rule, position, path=compile_path(pattern, workspace, context_id))
    return Compiled(rule, position)


@lru_cache(maxsize=256)
def compile_rules(rules: RuleSet, context_id: str) -> CompiledRules:
    """Rules with ${WORKSPACE}/${CONTEXT_ID} expanded for one context, indexed by kind,
    file action and (for shell rules) program name."""
    workspace = rules.workspace(context_id)
    lists: dict[str, RuleList] = {}
    for name in LISTS:
        compiled = RuleList()
        for position, rule in enumerate(getattr(rules, name)):
            item = _compile_rule(rule, position, workspace, context_id, name)
            if rule.kind == Kind.SHELL:
                program = item.shell.program if item.shell else None
                if program is None:
                    compiled.shell_any.append(item)
                else:
                    compiled.shell_by_program.setdefault(program, []).append(item)
            elif rule.kind == Kind.FILE:
                actions = [rule.action] if rule.action else list(FileAction)
                for action in actions:
                    compiled.files.setdefault(action, []).append(item)
            else:
                compiled.network.append(item)
        lists[name] = compiled
    return CompiledRules(workspace=workspace, lists=lists)


# --- matching shell views ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ViewTexts:
    """A view rendered for matching. Certain matches must hold both with the sentinel in
    place of each unknown word and with unknown words gone (``$X`` may expand to nothing)."""

    deny: tuple[tuple[str, str | None], ...]  # per program spelling: (sentinel, removed)
    allow: tuple[str, str | None]
    tokens: tuple[str | None, ...] | None  # wildcard sequence, only when something is unknown
    programs: tuple[str, ...]


def _join(program: str, words: Sequence[Word], glob_unknown: bool) -> tuple[str, str | None]:
    sentinel: list[str] = [program]
    removed: list[str] = [program]
    has_unknown = False
    for word in words:
        if word.kind is WordKind.UNKNOWN:
            sentinel.append(SENTINEL)
            has_unknown = True
        elif word.kind is WordKind.GLOB and glob_unknown:
            sentinel.append(SENTINEL)
            removed.append(SENTINEL)
        else:
            sentinel.append(word.value)
            removed.append(word.value)
    return " ".join(sentinel), " ".join(removed) if has_unknown else None


def view_texts(view: View) -> ViewTexts:
    written = view.words[0].value
    programs = (view.program,) if view.program == written else (view.program, written)
    rest = view.words[1:]
    allow_program = view.program if view.trusted else written
    if all(word.kind is WordKind.LITERAL and SENTINEL not in word.value for word in rest):
        # The common case: every word is known, all renderings are the same text.
        tail = "".join(" " + word.value for word in rest)
        plain: tuple[tuple[str, str | None], ...] = tuple(
            (program + tail, None) for program in programs
        )
        return ViewTexts(plain, (allow_program + tail, None), None, programs)
    deny = tuple(_join(program, rest, glob_unknown=False) for program in programs)
    allow = _join(allow_program, rest, glob_unknown=True)
    sequence: list[str | None] = list(view.program)
    for word in rest:
        sequence.append(" ")
        if word.kind is WordKind.UNKNOWN:
            sequence.append(STAR)
        elif word.kind is WordKind.GLOB or SENTINEL in word.value:
            sequence.extend(glob_tokens(word.value))
        else:
            sequence.extend(word.value)
    return ViewTexts(deny=deny, allow=allow, tokens=tuple(sequence), programs=programs)


def _certain(pattern: re.Pattern[str], texts: tuple[str, str | None]) -> bool:
    sentinel, removed = texts
    if not pattern.fullmatch(sentinel):
        return False
    return removed is None or bool(pattern.fullmatch(removed))


def shell_match(item: Compiled, texts: ViewTexts, *, for_allow: bool) -> Match:
    if item.shell is None:
        return Match.CERTAIN  # shell / shell(*)
    if for_allow:
        return Match.CERTAIN if _certain(item.shell.regex, texts.allow) else Match.NONE
    if any(_certain(item.shell.regex, variant) for variant in texts.deny):
        return Match.CERTAIN
    if texts.tokens is not None and could_match(item.shell.tokens, texts.tokens):
        return Match.POSSIBLE
    return Match.NONE


# --- matching paths and hosts -----------------------------------------------------------------

_GLOB_RUN = re.compile(r"(?:\*|\?|\[[^\]/]*\])+")


def path_match(
    item: Compiled, path: str | None, glob: bool, tokens: tuple[Token, ...] | None = None
) -> Match:
    """``tokens``: ``glob_tokens(path)`` when the caller has it (it is the same for every
    rule a path is matched against)."""
    if item.path is None:
        return Match.CERTAIN  # file / file(*)
    if path is None:
        return Match.POSSIBLE if could_match(item.path.tokens, (STAR,)) else Match.NONE
    if glob:
        # Certain only if the rule covers every expansion: each glob run becomes the
        # sentinel, which only "**" can absorb.
        if item.path.regex.fullmatch(_GLOB_RUN.sub(SENTINEL, path)):
            return Match.CERTAIN
        tokens = tokens if tokens is not None else glob_tokens(path)
        return Match.POSSIBLE if could_match(item.path.tokens, tokens) else Match.NONE
    if item.path.regex.fullmatch(path):
        return Match.CERTAIN
    if SENTINEL in path:
        tokens = tokens if tokens is not None else glob_tokens(path)
        if could_match(item.path.tokens, tokens):
            return Match.POSSIBLE
    return Match.NONE


def network_match(item: Compiled, host: str, direction: Direction) -> bool:
    if item.rule.direction is not None and item.rule.direction != direction:
        return False
    return item.rule.pattern is None or host_matches(item.rule.pattern, host)


def allowing_rule(view: View, texts: Any, compiled: CompiledRules) -> Rule | None:
    """The first allow rule that certainly matches ``view`` (its program as an allow rule
    sees it)."""
    for item in compiled.lists["allow"].shell_candidates((view.program,)):
        if shell_match(item, texts, for_allow=True) is Match.CERTAIN:
            return item.rule
    return None


def first_path_match(
    rules: RuleList, actions: Sequence[FileAction], access: FileAccess
) -> tuple[Compiled, FileAction, Match] | None:
    """The first rule (in list order) that certainly matches, else the first that may."""
    spend()
    if access.path is not None and not access.glob and SENTINEL not in access.path:
        # A plain path matches certainly or not at all: one combined regex per action.
        for action in actions:
            if action not in rules.files:
                continue  # no rule for this action in this list
            found = rules.first_path_rule(action, access.path)
            if found is not None:
                return found, action, Match.CERTAIN
        return None
    tokens = glob_tokens(access.path) if access.path is not None else None
    possible = None
    for action in actions:
        for item in rules.files.get(action, ()):
            spend()
            match = path_match(item, access.path, access.glob, tokens)
            if match is Match.CERTAIN:
                return item, action, match
            if match is Match.POSSIBLE and possible is None:
                possible = (item, action, match)
    return possible


def every_possible_match(
    rules: RuleList, actions: Sequence[FileAction], access: FileAccess
) -> list[Compiled]:
    """Every rule (in list order) that certainly or possibly matches ``access``."""
    tokens = glob_tokens(access.path) if access.path is not None else None
    found = []
    for action in actions:
        for item in rules.files.get(action, ()):
            spend()
            if path_match(item, access.path, access.glob, tokens) is not Match.NONE:
                found.append(item)
    return found

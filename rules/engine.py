"""Evaluate an operation against settings.json rules and sources.json.

For every part of the operation: a deny rule that certainly matches → deny; a deny rule that
matches for some run-time value, or an ask rule → ask; a reason it cannot be judged → ask;
an allow rule → allow; nothing → ask. sources.json may then turn the part into deny (or an
allow into ask when the resource is only known at run time). The operation is denied if any
part is, allowed if every part is, and asked about otherwise.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any

from rules.effects import (
    contained_hosts,
    effects_of,
    hidden_paths,
    opaque_effects,
    refuses,
    target_of,
)
from rules.invocations import (
    FileAccess,
    Invocation,
    NetworkAccess,
    View,
    as_written,
    normalise_path,
)
from rules.model import (
    Decision,
    Direction,
    Evaluation,
    FileAction,
    FileOperation,
    Kind,
    NetworkOperation,
    Operation,
    Part,
    Rule,
    RuleSet,
    ShellOperation,
    check_context_id,
    combine,
)
from rules.narrowing import Verdict, check_command, check_host
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
from rules.programs import interprets
from rules.programs.builtins import HARMLESS as HARMLESS_BUILTINS
from rules.programs.configuration import configures
from rules.settings import parse_rule
from rules.shell import decompose
from rules.sources import Sources
from rules.text import hidden_characters, sanitise
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


# --- judging ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judged:
    part: Part
    proposal: str | None = None  # the narrow allow rule "approve and allow similar" offers


def _where(origin: str) -> str:
    return f" (in {origin})" if origin else ""


def _part(kind: Kind, text: str, decision: Decision, reason: str, rule: Rule | None) -> Part:
    return Part(kind, text, decision, reason, rule.text if rule else None)


def _allowing_rule(view: View, texts: Any, compiled: CompiledRules) -> Rule | None:
    """The first allow rule that certainly matches ``view`` (its program as an allow rule
    sees it)."""
    for item in compiled.lists["allow"].shell_candidates((view.program,)):
        if shell_match(item, texts, for_allow=True) is Match.CERTAIN:
            return item.rule
    return None


def _contained_by(
    invocation: Invocation, all_texts: list[Any], compiled: CompiledRules
) -> Rule | None:
    """The allow rule under which the invocation runs contained: every problem is one the
    executor holds (rules.invocations.Contained: code an interpreter runs that the engine
    cannot read, or HeldFiles: a word only known at run time given to a program that only
    reads and writes files), every interpreter in it (``timeout 9 python3 x.py``,
    ``python3 -m pip``) is explicitly allowed, and so is the command itself. None: it is
    asked about."""
    effective = invocation.effective
    if effective is None or not invocation.contained_only:
        return None
    for view, texts in zip(invocation.views, all_texts, strict=True):
        if not view.trusted:
            return None
        interpreter = interprets(view.program)
        if view is not effective and interpreter and _allowing_rule(view, texts, compiled) is None:
            return None
    texts = all_texts[-1] if invocation.views[-1] is effective else view_texts(effective)
    return _allowing_rule(effective, texts, compiled)


def judge_shell(
    invocation: Invocation,
    compiled: CompiledRules,
    sources: Sources | None,
    contained: bool = False,
) -> list[Judged]:
    where = _where(invocation.origin)
    text = invocation.text
    all_texts = [view_texts(view) for view in invocation.views]
    decision: Decision | None = None
    reason = ""
    rule: Rule | None = None
    for list_name in ("deny", "ask"):
        rule_list = compiled.lists[list_name]
        if not rule_list.shell_by_program and not rule_list.shell_any:
            continue  # no shell rule in this list (the seed has no ask rules)
        possible: Compiled | None = None
        for texts in all_texts:
            for item in rule_list.shell_candidates(texts.programs):
                match = shell_match(item, texts, for_allow=False)
                if match is Match.CERTAIN:
                    decision = Decision.DENY if list_name == "deny" else Decision.ASK
                    verb = "denied" if list_name == "deny" else "ask rule"
                    reason, rule = f"{verb}: {item.rule.text}{where}", item.rule
                    break
                if match is Match.POSSIBLE and possible is None:
                    possible = item
            if decision:
                break
        if decision:
            break
        if possible is not None:
            decision, rule = Decision.ASK, possible.rule
            reason = f"may match {list_name} rule {possible.rule.text} at run time{where}"
            break
    held = False
    if decision is None and invocation.problems:
        container = _contained_by(invocation, all_texts, compiled) if contained else None
        if container is not None:
            # The trade (docs/rules.md, "Contained allow"): what the code (or the word)
            # does is not judged here; the executor holds it to the context, the image
            # read-only and, for code, sources.json's hosts instead.
            decision, rule, held = Decision.ALLOW, container, True
            reason = (
                f"contained: {invocation.problems[0]}, so the executor holds it to the "
                f"context; allowed: {container.text}{where}"
            )
        else:
            decision, reason = Decision.ASK, f"{invocation.problems[0]}{where}"
    effective = invocation.effective
    if decision is None and invocation.transparent:
        decision, reason = Decision.ALLOW, f"nothing to run of its own{where}"
    if decision is None and effective is not None:
        texts = all_texts[-1] if invocation.views[-1] is effective else view_texts(effective)
        rule = _allowing_rule(effective, texts, compiled)
        if rule is not None:
            decision, reason = Decision.ALLOW, f"allowed: {rule.text}{where}"
        if decision is None and effective.program in HARMLESS_BUILTINS and effective.trusted:
            decision, reason = Decision.ALLOW, f"harmless shell builtin{where}"
    if decision is None:
        decision, reason = Decision.ASK, f"no rule matched{where}"
    part = _part(Kind.SHELL, text, decision, reason, rule)
    if held:
        part = dataclasses.replace(part, contained=True)
    if sources is not None and effective is not None and decision != Decision.DENY:
        verdict = check_command(as_written(effective, invocation.views), sources)
        part = _narrow(part, verdict)
    proposal = None
    if part.decision == Decision.ASK and not invocation.problems and effective is not None:
        proposal = propose_shell_rule(effective)
    result = [Judged(part, proposal)]
    for access in invocation.files:
        judged = judge_file(access, compiled, contained)
        if judged:
            result.append(judged)
    for network in invocation.network:
        if network.by_program:
            judged_destination = judge_destination(network, compiled, sources)
            if judged_destination is not None:
                result.append(judged_destination)
        elif network.host is None:
            text = "outbound (a host only known at run time)"
            part = _part(Kind.NETWORK, text, Decision.ASK, f"via {network.source}", None)
            result.append(Judged(part))
        else:
            result.append(
                judge_host(network.host, network.source, compiled, sources, Direction.OUTBOUND)
            )
    if invocation.fallback:
        # A best-effort split of unparseable text: its only job is to let a deny win.
        return [item for item in result if item.part.decision == Decision.DENY]
    return result


def _narrow(part: Part, verdict: Verdict | None) -> Part:
    if verdict is None:
        return part
    if verdict.decision == Decision.DENY:
        return Part(part.kind, part.text, Decision.DENY, verdict.reason, None, verdict.entry)
    if part.decision == Decision.ALLOW:
        return Part(part.kind, part.text, Decision.ASK, verdict.reason, None, verdict.entry)
    return part


def _first_path_match(
    rules: RuleList, actions: Sequence[FileAction], access: FileAccess
) -> tuple[Compiled, FileAction, Match] | None:
    """The first rule (in list order) that certainly matches, else the first that may."""
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
            match = path_match(item, access.path, access.glob, tokens)
            if match is Match.CERTAIN:
                return item, action, match
            if match is Match.POSSIBLE and possible is None:
                possible = (item, action, match)
    return possible


def _file_texts(access: FileAccess) -> tuple[str, str, str]:
    """(target, the part's text, " (via …)") for an access that becomes a part."""
    action_text = access.action.value if access.action else "access"
    target = access.path.replace(SENTINEL, "…") if access.path else access.source
    via = f" (via {access.source})" if access.source and access.path else ""
    return target, f"{action_text} {sanitise(target)}", via


_ALL_ACTIONS = tuple(FileAction)


def _covers_target(access: FileAccess, compiled: CompiledRules) -> bool:
    """Does an allow rule cover everything the executor would let ``access`` do (the
    tree its unknown path lies in), which lies in the context?"""
    if access.action is None:
        return False
    workspace = compiled.workspace
    target = target_of(access, workspace)
    if target.removesuffix("/**") != workspace and not target.startswith(workspace + "/"):
        return False
    probe = FileAccess(access.action, target, access.source, glob=target.endswith("/**"))
    found = _first_path_match(compiled.lists["allow"], (access.action,), probe)
    return found is not None and found[2] is Match.CERTAIN


def _held(text: str, reason: str, rule: Rule | None) -> Judged:
    """Allowed, contained: what is only known at run time, the executor holds."""
    part = _part(Kind.FILE, text, Decision.ALLOW, f"contained: {reason}", rule)
    return Judged(dataclasses.replace(part, contained=True))


def judge_file(
    access: FileAccess, compiled: CompiledRules, contained: bool = False
) -> Judged | None:
    """The part for one file access; None when it changes nothing (a read by a known
    reader that no rule mentions). Most accesses are such reads: their texts are only
    built once they become a part. ``contained``: the executor holds the run to its
    effects, so a deny rule it enforces (effects.refuses) need not ask about a path only
    known at run time."""
    actions = (access.action,) if access.action else _ALL_ACTIONS
    for list_name in ("deny", "ask"):
        hit = _first_path_match(compiled.lists[list_name], actions, access)
        if hit is None:
            continue
        target, text, via = _file_texts(access)
        item, action, match = hit
        rule = item.rule.text
        if (
            access.recursive
            and list_name == "deny"
            and match is Match.POSSIBLE
            and not (access.uncertain or access.glob)
            and access.path is not None
        ):
            # A recursive read of D reads every file below it: a deny rule for some path
            # below D is certain to be hit (if the file exists), not merely possible.
            directory = sanitise(access.path.rsplit("/", 1)[0] or "/")
            reason = f"a recursive read of {directory} includes files {rule} denies{via}"
            return Judged(_part(Kind.FILE, text, Decision.DENY, reason, item.rule))
        if (
            contained
            and list_name == "deny"
            and (match is Match.POSSIBLE or access.uncertain)
            and refuses(access, item.rule, compiled.workspace)
        ):
            refusal = (
                "its path is hidden"
                if access.action is FileAction.READ
                else ("it writes only in the context")
            )
            reason = f"may match {rule} at run time, which the executor refuses ({refusal}){via}"
            if access.require_allow and not _covers_target(access, compiled):
                reason = f"may match deny rule {rule} at run time{via}"
                return Judged(_part(Kind.FILE, text, Decision.ASK, reason, item.rule))
            return _held(text, reason, None)
        if access.action is None:
            reason = f"the command may {action.value} it, which {rule} covers{via}"
        elif match is Match.POSSIBLE:
            reason = f"may match {list_name} rule {rule} at run time{via}"
        elif access.uncertain:
            reason = f"the working directory is not certain; this path is covered by {rule}{via}"
        elif list_name == "deny":
            return Judged(_part(Kind.FILE, text, Decision.DENY, f"denied: {rule}{via}", item.rule))
        else:
            proposal = propose_file_rule(access.action, access.path, compiled.workspace)
            part = _part(Kind.FILE, text, Decision.ASK, f"ask rule: {rule}{via}", item.rule)
            return Judged(part, proposal)
        return Judged(_part(Kind.FILE, text, Decision.ASK, reason, item.rule))
    if access.action is None:
        return None
    configured = (
        configures(access.path, pattern=access.glob)
        if access.action is FileAction.WRITE and access.path is not None
        else None
    )
    if configured:
        # An allowed program reads it and runs what it names: never allowed by a rule.
        target, text, via = _file_texts(access)
        reason = f"{sanitise(target)} {configured}{via}"
        return Judged(_part(Kind.FILE, text, Decision.ASK, reason, None))
    if not access.require_allow:
        return None  # a read by a known reader: not denied is enough, allowed or not
    target, text, via = _file_texts(access)
    allowed = _first_path_match(compiled.lists["allow"], (access.action,), access)
    if allowed is not None and allowed[2] is Match.CERTAIN:
        reason = f"allowed: {allowed[0].rule.text}{via}"
        return Judged(_part(Kind.FILE, text, Decision.ALLOW, reason, allowed[0].rule))
    if contained and _covers_target(access, compiled):
        covering = _first_path_match(compiled.lists["allow"], (access.action,), access)
        rule_text = covering[0].rule.text if covering else "the context"
        reason = f"the path is only known at run time; the executor holds it to {rule_text}{via}"
        return _held(text, reason, None)
    reason = "no file rule allows it" if access.path else "the path is only known at run time"
    proposal = propose_file_rule(access.action, access.path, compiled.workspace)
    return Judged(_part(Kind.FILE, text, Decision.ASK, f"{reason}{via}", None), proposal)


def judge_host(
    host: str,
    source: str,
    compiled: CompiledRules,
    sources: Sources | None,
    direction: Direction,
) -> Judged:
    text = f"{direction.value} {sanitise(host)}"
    via = f" (via {sanitise(source)})" if source else ""
    part: Part | None = None
    for list_name in LISTS:
        for item in compiled.lists[list_name].network:
            if network_match(item, host, direction):
                decision = {"deny": Decision.DENY, "ask": Decision.ASK}.get(
                    list_name, Decision.ALLOW
                )
                verb = {"deny": "denied", "ask": "ask rule"}.get(list_name, "allowed")
                part = _part(Kind.NETWORK, text, decision, f"{verb}: {item.rule.text}{via}",
                             item.rule)  # fmt: skip
                break
        if part:
            break
    if part is None:
        part = _part(Kind.NETWORK, text, Decision.ASK, f"no rule matched{via}", None)
    if sources is not None and direction == Direction.OUTBOUND and part.decision != Decision.DENY:
        part = _narrow(part, check_host(host, sources, "network"))
    proposal = f"network({direction.value}:{host})" if part.decision == Decision.ASK else None
    return Judged(part, proposal)


def judge_destination(
    access: NetworkAccess, compiled: CompiledRules, sources: Sources | None
) -> Judged | None:
    """A URL an allowed program contacts. sources.json, when there is one, has judged it
    already (narrowing); without one a deny or ask network rule applies to it, as to a read
    no allow is needed."""
    if sources is not None:
        return None
    via = f" (via {sanitise(access.source)})"
    for list_name, decision in (("deny", Decision.DENY), ("ask", Decision.ASK)):
        for item in compiled.lists[list_name].network:
            if access.host is None:
                if item.rule.pattern is None or item.rule.pattern == "*":
                    text = "outbound (a host only known at run time)"
                    reason = f"{list_name} rule: {item.rule.text}{via}"
                    return Judged(_part(Kind.NETWORK, text, decision, reason, item.rule))
                continue
            if network_match(item, access.host, Direction.OUTBOUND):
                verb = "denied" if list_name == "deny" else "ask rule"
                reason = f"{verb}: {item.rule.text}{via}"
                text = f"outbound {sanitise(access.host)}"
                return Judged(_part(Kind.NETWORK, text, decision, reason, item.rule))
    if access.host is None and any(compiled.lists[name].network for name in ("deny", "ask")):
        text = "outbound (a host only known at run time)"
        reason = f"a network rule may cover it{via}"
        return Judged(_part(Kind.NETWORK, text, Decision.ASK, reason, None))
    return None


# --- proposals ----------------------------------------------------------------------------

_SIMPLE_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


def propose_shell_rule(view: View) -> str | None:
    """Program + subcommand + first argument, as far as they are plain words:
    ``pip install pandas`` → ``shell(pip install pandas:*)``, ``pip install pandas==2`` →
    ``shell(pip install:*)``, ``ls -la`` → ``shell(ls:*)``."""
    program = view.program if view.trusted else view.words[0].value
    if re.search(r"[\s()*]", program):
        return None
    words = [program]
    for word in view.words[1:3]:
        if word.kind is not WordKind.LITERAL or not _SIMPLE_TOKEN.match(word.value):
            break
        words.append(word.value)
    return f"shell({' '.join(words)}:*)"


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def propose_file_rule(action: FileAction | None, path: str | None, workspace: str) -> str | None:
    """The path's directory: ``/workspace/c1/data/a.csv`` → ``file(read:${WORKSPACE}/data/*)``."""
    if action is None or path is None or SENTINEL in path or "\n" in path:
        return None
    directory = posixpath.dirname(path)
    escaped = _GLOB_SPECIAL.sub(r"\\\1", directory)
    if directory == workspace or directory.startswith(workspace + "/"):
        escaped = "${WORKSPACE}" + _GLOB_SPECIAL.sub(r"\\\1", directory[len(workspace) :])
    if ")" in escaped or "(" in escaped or "${" in escaped.replace("${WORKSPACE}", ""):
        return None
    return f"file({action.value}:{escaped.rstrip('/')}/*)"


# --- entry points -----------------------------------------------------------------------------


def _judge(
    operation: Operation,
    rules: RuleSet,
    sources: Sources | None,
    context_id: str,
    contained: bool = False,
) -> tuple[list[Judged], str, dict[str, list[str]] | None]:
    check_context_id(context_id)
    compiled = compile_rules(rules, context_id)
    if isinstance(operation, ShellOperation):
        normalised = sanitise(operation.command)
        hidden = hidden_paths(rules, compiled.workspace)
        try:
            decomposition = decompose(
                operation.command, workspace=compiled.workspace, context_id=context_id
            )
        except RecursionError:
            # Nesting deep enough to exhaust the stack (bashlex or the walker): fail closed.
            part = Part(Kind.SHELL, normalised, Decision.ASK, "nested too deeply to judge")
            return [Judged(part)], normalised, opaque_effects(compiled.workspace, hidden)
        judged: list[Judged] = []
        for invocation in decomposition.invocations:
            judged.extend(judge_shell(invocation, compiled, sources, contained))
        effects = effects_of(
            decomposition,
            compiled.workspace,
            contained_network=contained_hosts(rules, sources) if contained else None,
            hidden=hidden,
        )
        return judged, normalised, effects
    if isinstance(operation, FileOperation):
        path = operation.path
        normalised = sanitise(path)
        if hidden_characters(path):
            part = Part(Kind.FILE, f"{operation.action.value} {normalised}", Decision.ASK,
                        "the path contains hidden or control characters")  # fmt: skip
            return [Judged(part)], f"{operation.action.value} {normalised}", None
        absolute = normalise_path(posixpath.join(compiled.workspace, path))
        access = FileAccess(operation.action, absolute, "", glob=False, require_allow=True)
        judged_file = judge_file(access, compiled)
        assert judged_file is not None  # require_allow: never neutral
        return [judged_file], f"{operation.action.value} {absolute}", None
    assert isinstance(operation, NetworkOperation)
    text = f"{operation.direction.value} {sanitise(operation.host)}"
    if hidden_characters(operation.host):
        part = Part(Kind.NETWORK, text, Decision.ASK, "the host contains hidden characters")
        return [Judged(part)], text, None
    judged_host = judge_host(operation.host, "", compiled, sources, operation.direction)
    if operation.url:
        text += f" ({sanitise(operation.url)})"
    return [judged_host], text, None


def evaluate(
    operation: Operation,
    *,
    rules: RuleSet,
    sources: Sources | None,
    context_id: str,
    contained: bool = False,
) -> Evaluation:
    """Decide ``operation`` for the context ``context_id``; see the module docstring.

    ``contained``: the agent type's executor holds every command to its judged effects
    (bubblewrap and Landlock), so an explicitly allowed interpreter running code the engine
    cannot read is allowed, contained, instead of asked about (docs/rules.md)."""
    judged, normalised, effects = _judge(operation, rules, sources, context_id, contained)
    parts = [item.part for item in judged]
    return Evaluation(
        decision=combine(parts), parts=tuple(parts), normalised=normalised, effects=effects
    )


def propose_allow_rule(
    operation: Operation,
    *,
    rules: RuleSet,
    sources: Sources | None,
    context_id: str,
    contained: bool = False,
) -> str | None:
    """A narrow allow rule for "approve and allow similar": for the first part that is
    asked about, ``shell(program subcommand first-arg:*)``, ``file(action:directory/*)`` or
    ``network(outbound:host)``. None when no allow rule could make the operation pass (it is
    denied, or the asked part cannot be judged at all, like ``python -c …``)."""
    judged, _, _ = _judge(operation, rules, sources, context_id, contained)
    if any(item.part.decision == Decision.DENY for item in judged):
        return None
    for item in judged:
        if item.part.decision == Decision.ASK:
            return item.proposal
    return None


def rule_matches(
    rule: str | Rule,
    operation: Operation,
    context_id: str,
    *,
    context_workspace: str | None = None,
) -> bool:
    """Would ``rule`` (as an allow rule) match ``operation`` — for a shell command, any of
    its simple commands? Used to count the past requests a proposed rule covers."""
    check_context_id(context_id)
    parsed = parse_rule(rule) if isinstance(rule, str) else rule
    rules = RuleSet(allow=(parsed,), context_workspace=context_workspace)
    compiled = compile_rules(rules, context_id)
    item = compiled.lists["allow"]
    if isinstance(operation, ShellOperation):
        if parsed.kind != Kind.SHELL:
            return False
        decomposition = decompose(
            operation.command, workspace=compiled.workspace, context_id=context_id
        )
        for invocation in decomposition.invocations:
            effective = invocation.effective
            if effective is None or invocation.problems:
                continue
            texts = view_texts(effective)
            for candidate in item.shell_candidates((effective.program,)):
                if shell_match(candidate, texts, for_allow=True) is Match.CERTAIN:
                    return True
        return False
    if isinstance(operation, FileOperation):
        if parsed.kind != Kind.FILE or hidden_characters(operation.path):
            return False
        path = normalise_path(posixpath.join(compiled.workspace, operation.path))
        return any(
            path_match(candidate, path, False) is Match.CERTAIN
            for candidate in item.files.get(operation.action, ())
        )
    if parsed.kind != Kind.NETWORK:
        return False
    return any(network_match(c, operation.host, operation.direction) for c in item.network)

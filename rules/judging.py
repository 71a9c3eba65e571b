"""Each invocation, file access and host judged against the compiled rules and sources.json:
the parts an evaluation is made of, and the allow rule to propose for each asked part."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rules.contained import contained_by, covers_target
from rules.effects import refuses
from rules.invocations import FileAccess, Invocation, NetworkAccess, as_written
from rules.matching import (
    LISTS,
    Compiled,
    CompiledRules,
    Match,
    allowing_rule,
    every_possible_match,
    first_path_match,
    network_match,
    shell_match,
    view_texts,
)
from rules.model import Decision, Direction, FileAction, Kind, Part, Rule
from rules.narrowing import Verdict, check_command, check_host
from rules.patterns import SENTINEL
from rules.programs.builtins import HARMLESS as HARMLESS_BUILTINS
from rules.programs.configuration import configures
from rules.proposals import propose_file_rule, propose_shell_rule
from rules.sources import Sources
from rules.text import sanitise


@dataclass(frozen=True, slots=True)
class Judged:
    part: Part
    proposal: str | None = None  # the narrow allow rule "approve and allow similar" offers


def _where(origin: str) -> str:
    return f" (in {origin})" if origin else ""


def _part(kind: Kind, text: str, decision: Decision, reason: str, rule: Rule | None) -> Part:
    return Part(kind, text, decision, reason, rule.text if rule else None)


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
        container = contained_by(invocation, all_texts, compiled) if contained else None
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
        rule = allowing_rule(effective, texts, compiled)
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
    if invocation.fallback or invocation.second:
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


def _file_texts(access: FileAccess) -> tuple[str, str, str]:
    """(target, the part's text, " (via …)") for an access that becomes a part."""
    action_text = access.action.value if access.action else "access"
    target = access.path.replace(SENTINEL, "…") if access.path else access.source
    via = f" (via {access.source})" if access.source and access.path else ""
    return target, f"{action_text} {sanitise(target)}", via


_ALL_ACTIONS = tuple(FileAction)


def _held(text: str, reason: str, rule: Rule | None) -> Judged:
    """Allowed, contained: what is only known at run time, the executor holds."""
    part = _part(Kind.FILE, text, Decision.ALLOW, f"contained: {reason}", rule)
    return Judged(dataclasses.replace(part, contained=True))


def _unrefused(
    access: FileAccess, actions: tuple[FileAction, ...], compiled: CompiledRules
) -> Rule | None:
    """A rule that may match ``access`` whose effect the executor does not refuse on its
    own — not only the first deny rule is looked at (``cat "$F"`` may be /etc/shadow, which
    every run is denied, or a .env file, which a glob rule denies and nothing hides) — or
    an ask rule that may match; None when there is none."""
    for item in every_possible_match(compiled.lists["deny"], actions, access):
        if not refuses(access, item.rule, compiled.workspace):
            return item.rule
    asked = every_possible_match(compiled.lists["ask"], actions, access)
    return asked[0].rule if asked else None


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
        hit = first_path_match(compiled.lists[list_name], actions, access)
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
        unrefused = (
            _unrefused(access, actions, compiled)
            if contained and list_name == "deny" and (match is Match.POSSIBLE or access.uncertain)
            else None
        )
        if unrefused is not None and refuses(access, item.rule, compiled.workspace):
            reason = (
                f"may match {unrefused.text} at run time, which the executor cannot refuse "
                f"on its own{via}"
            )
            return Judged(_part(Kind.FILE, text, Decision.ASK, reason, unrefused))
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
            if access.require_allow and not covers_target(access, compiled):
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
    allowed = first_path_match(compiled.lists["allow"], (access.action,), access)
    if allowed is not None and allowed[2] is Match.CERTAIN:
        reason = f"allowed: {allowed[0].rule.text}{via}"
        return Judged(_part(Kind.FILE, text, Decision.ALLOW, reason, allowed[0].rule))
    if contained and covers_target(access, compiled):
        covering = first_path_match(compiled.lists["allow"], (access.action,), access)
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

"""Evaluate an operation against settings.json rules and sources.json.

For every part of the operation: a deny rule that certainly matches → deny; a deny rule that
matches for some run-time value, or an ask rule → ask; a reason it cannot be judged → ask;
an allow rule → allow; nothing → ask. sources.json may then turn the part into deny (or an
allow into ask when the resource is only known at run time). The operation is denied if any
part is, allowed if every part is, and asked about otherwise.

Here are the entry points and the operation's decision; the rules compiled and matched are
matching.py's, each part judged judging.py's, the contained allow contained.py's and the
rule "approve and allow similar" offers proposals.py's.
"""

from __future__ import annotations

import posixpath
from typing import NamedTuple

from rules.budget import TooComplex, bounded
from rules.effects import (
    contained_hosts,
    effects_of,
    hidden_paths,
    opaque_effects,
    reaches_network,
)
from rules.invocations import FileAccess, normalise_path
from rules.judging import Judged, judge_file, judge_host, judge_shell
from rules.matching import Match, compile_rules, network_match, path_match, shell_match, view_texts
from rules.model import (
    Decision,
    Evaluation,
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
from rules.settings import parse_rule
from rules.shell import decompose, deny_scan
from rules.sources import Sources
from rules.text import hidden_characters, sanitise


class Judgement(NamedTuple):
    judged: list[Judged]
    normalised: str
    effects: dict[str, list[str]] | None
    # A program of the command contacts a host of its own (pip, curl, git push origin…),
    # as opposed to one that may, being unknown: rules.risk keys on it.
    reaches_network: bool = False


def _judge(
    operation: Operation,
    rules: RuleSet,
    sources: Sources | None,
    context_id: str,
    contained: bool = False,
) -> Judgement:
    check_context_id(context_id)
    compiled = compile_rules(rules, context_id)
    if isinstance(operation, ShellOperation):
        normalised = sanitise(operation.command)
        hidden = hidden_paths(rules, compiled.workspace)
        try:
            with bounded():
                decomposition = decompose(
                    operation.command, workspace=compiled.workspace, context_id=context_id
                )
                judged: list[Judged] = []
                for invocation in decomposition.invocations:
                    judged.extend(judge_shell(invocation, compiled, sources, contained))
        except RecursionError:
            # Nesting deep enough to exhaust the stack (bashlex or the walker): fail closed.
            part = Part(Kind.SHELL, normalised, Decision.ASK, "nested too deeply to judge")
            return Judgement([Judged(part)], normalised, opaque_effects(compiled.workspace, hidden))
        except TooComplex as exc:
            # Past the budget: ask, with a deny scan of the line's program words (constant
            # time per word, outside the budget) so that a denied program still denies.
            reason = f"too complex to judge within the engine's bounds ({exc} after expansion)"
            scanned = deny_scan(operation.command, reason)
            judged = [Judged(Part(Kind.SHELL, normalised, Decision.ASK, reason))]
            for invocation in scanned.invocations:
                judged.extend(judge_shell(invocation, compiled, sources, contained))
            return Judgement(judged, normalised, opaque_effects(compiled.workspace, hidden))
        effects = effects_of(
            decomposition,
            compiled.workspace,
            contained_network=contained_hosts(rules, sources) if contained else None,
            hidden=hidden,
        )
        return Judgement(judged, normalised, effects, reaches_network(decomposition))
    if isinstance(operation, FileOperation):
        path = operation.path
        normalised = sanitise(path)
        if hidden_characters(path):
            part = Part(Kind.FILE, f"{operation.action.value} {normalised}", Decision.ASK,
                        "the path contains hidden or control characters")  # fmt: skip
            return Judgement([Judged(part)], f"{operation.action.value} {normalised}", None)
        absolute = normalise_path(posixpath.join(compiled.workspace, path))
        access = FileAccess(operation.action, absolute, "", glob=False, require_allow=True)
        judged_file = judge_file(access, compiled)
        assert judged_file is not None  # require_allow: never neutral
        return Judgement([judged_file], f"{operation.action.value} {absolute}", None)
    assert isinstance(operation, NetworkOperation)
    text = f"{operation.direction.value} {sanitise(operation.host)}"
    if hidden_characters(operation.host):
        part = Part(Kind.NETWORK, text, Decision.ASK, "the host contains hidden characters")
        return Judgement([Judged(part)], text, None)
    judged_host = judge_host(operation.host, "", compiled, sources, operation.direction)
    if operation.url:
        text += f" ({sanitise(operation.url)})"
    return Judgement([judged_host], text, None)


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
    judged, normalised, effects, reaches = _judge(operation, rules, sources, context_id, contained)
    parts = [item.part for item in judged]
    return Evaluation(
        decision=combine(parts),
        parts=tuple(parts),
        normalised=normalised,
        effects=effects,
        reaches_network=reaches,
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
    judged = _judge(operation, rules, sources, context_id, contained).judged
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
            if effective is None or invocation.problems or invocation.second:
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

"""The contained allow (docs/rules.md, "Contained allow"): when an enforcing executor holds
a command to its judged effects, which allow rule lets it run although the engine cannot
read all it does, and whether an allow rule covers all the executor would let an access
only known at run time do."""

from __future__ import annotations

from typing import Any

from rules.effects import target_of
from rules.invocations import FileAccess, Invocation
from rules.matching import CompiledRules, Match, allowing_rule, first_path_match, view_texts
from rules.model import Rule
from rules.programs import interprets


def contained_by(
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
        if view is not effective and interpreter and allowing_rule(view, texts, compiled) is None:
            return None
    texts = all_texts[-1] if invocation.views[-1] is effective else view_texts(effective)
    return allowing_rule(effective, texts, compiled)


def covers_target(access: FileAccess, compiled: CompiledRules) -> bool:
    """Does an allow rule cover everything the executor would let ``access`` do (the
    tree its unknown path lies in), which lies in the context?"""
    if access.action is None:
        return False
    workspace = compiled.workspace
    target = target_of(access, workspace)
    if target.removesuffix("/**") != workspace and not target.startswith(workspace + "/"):
        return False
    probe = FileAccess(access.action, target, access.source, glob=target.endswith("/**"))
    found = first_path_match(compiled.lists["allow"], (access.action,), probe)
    return found is not None and found[2] is Match.CERTAIN

"""The adversarial corpus (tests/support/adversarial_cases.py): shell commands written
against the engine's model of each program, one class per way the model could be wrong. A
"deny" case must be denied (bash certainly runs the denied program); a "not-allow" case may
be asked about or denied, never allowed. The cases are data: only ever passed to evaluate()
as strings."""

from __future__ import annotations

from collections import Counter

import pytest

from rules import (
    Decision,
    Evaluation,
    RuleSet,
    ShellOperation,
    Sources,
    evaluate,
    parse_settings,
    parse_sources,
)
from rules.tests.policies import plain_settings, seed_settings, seed_sources
from tests.support.adversarial_cases import CASES, Case

CONTEXT = "ctx-1"


def _policies() -> dict[str, tuple[RuleSet, Sources | None]]:
    seed = parse_settings(seed_settings())
    plain = parse_settings(plain_settings())
    sources = parse_sources(seed_sources())
    return {"seed": (seed, sources), "plain": (plain, None)}


POLICIES = _policies()


def judged(policy: str, command: str, *, contained: bool = False) -> Evaluation:
    """``command`` evaluated under one of POLICIES in the corpora's context."""
    rules, sources = POLICIES[policy]
    return evaluate(
        ShellOperation(command),
        rules=rules,
        sources=sources,
        context_id=CONTEXT,
        contained=contained,
    )


def test_the_corpus_covers_every_class_and_is_large_enough() -> None:
    per_class = Counter(case.cls for case in CASES)

    assert sorted(per_class) == list(range(1, 13))
    assert min(per_class.values()) >= 30
    assert len(CASES) >= 500
    assert len({case.id for case in CASES}) == len({case.command for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_adversarial_command_is_never_allowed(case: Case) -> None:
    rules, sources = POLICIES[case.policy]

    evaluation = evaluate(
        ShellOperation(case.command), rules=rules, sources=sources, context_id=CONTEXT
    )

    if case.expect == "deny":
        assert evaluation.decision == Decision.DENY, case.why
    else:
        assert evaluation.decision != Decision.ALLOW, case.why

"""The second adversarial set (tests/support/adversarial_words.py): commands written against
how bash expands words (brace, glob, here-document, arithmetic, parameter expansion, magic
paths, operand roles, programs run implicitly, shell variables, and others). None may be
allowed; with the contained allow on, only a case whose whole danger an enforcing executor
holds (``contained_ok``). The cases are data: only ever passed to evaluate() as strings."""

from __future__ import annotations

from collections import Counter

import pytest

from rules import Decision, RuleSet, ShellOperation, Sources, evaluate
from rules.tests.test_adversarial import POLICIES
from tests.support.adversarial_cases import CASES as FIRST_SET
from tests.support.adversarial_words import CASES, CLASSES, WordCase


def test_the_set_is_new_large_enough_and_covers_every_class() -> None:
    per_class = Counter(case.cls for case in CASES)

    assert len(CASES) >= 300
    assert sorted(per_class) == sorted(CLASSES)
    assert min(per_class.values()) >= 25
    assert len({case.id for case in CASES}) == len({case.command for case in CASES}) == len(CASES)
    assert {case.command for case in CASES} & {case.command for case in FIRST_SET} == set()
    assert {case.expect for case in CASES} == {"deny", "not-allow"}
    assert {case.policy for case in CASES} <= set(POLICIES)


def _evaluate(case: WordCase, *, contained: bool) -> Decision:
    rules: RuleSet
    sources: Sources | None
    rules, sources = POLICIES[case.policy]
    evaluation = evaluate(
        ShellOperation(case.command),
        rules=rules,
        sources=sources,
        context_id="ctx-1",
        contained=contained,
    )
    return evaluation.decision


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_word_bypass_is_never_allowed(case: WordCase) -> None:
    assert _evaluate(case, contained=False) != Decision.ALLOW, case.why


@pytest.mark.parametrize(
    "case", [case for case in CASES if not case.contained_ok], ids=lambda case: case.id
)
def test_the_contained_allow_lets_through_only_what_the_executor_holds(case: WordCase) -> None:
    assert _evaluate(case, contained=True) != Decision.ALLOW, case.why

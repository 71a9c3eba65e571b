"""The "held" measure (docs/rules.md, "Held by the executor"): for every adversarial case
the engine allows, with the contained allow off and on, the grants the executor would run
it under — computed with the executor's own code (tests/support/held.py) — must not give
the case's harm (tests/support/harms.py). The engine is an advisor; this is the boundary,
measured. The cases are data, only ever handed to evaluate()."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rules import Decision
from rules.tests.test_adversarial import POLICIES, judged
from tests.support import adversarial_programs, adversarial_words
from tests.support.adversarial_words_harms import HARMS as WORD_HARMS
from tests.support.harms import Harm
from tests.support.held import held

WORKSPACE = "/workspace/ctx-1"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


@dataclass(frozen=True)
class Judged:
    id: str
    policy: str
    command: str
    harms: tuple[Harm, ...]


def _word_cases() -> list[Judged]:
    return [
        Judged(case.id, case.policy, case.command, WORD_HARMS[case.id])
        for case in adversarial_words.CASES
    ]


def _program_cases() -> list[Judged]:
    return [
        Judged(case.id, case.policy, case.command, case.harms)
        for case in adversarial_programs.CASES
    ]


SETS: dict[str, Callable[[], list[Judged]]] = {
    "adversarial_words.py": _word_cases,
    "adversarial_programs.py": _program_cases,
}


@dataclass(frozen=True)
class Measure:
    cases: int
    allowed: int
    held: int
    not_held: list[tuple[str, list[Harm]]]


def measure(cases: list[Judged], *, contained: bool) -> Measure:
    allowed = held_count = 0
    not_held: list[tuple[str, list[Harm]]] = []
    for case in cases:
        evaluation = judged(case.policy, case.command, contained=contained)
        if evaluation.decision is not Decision.ALLOW:
            continue
        allowed += 1
        rules, sources = POLICIES[case.policy]
        given = held(evaluation, case.harms, rules, sources, WORKSPACE)
        if given:
            not_held.append((case.id, given))
        else:
            held_count += 1
    return Measure(len(cases), allowed, held_count, not_held)


def test_every_case_of_every_set_is_annotated_with_its_harm() -> None:
    assert sorted(WORD_HARMS) == sorted(case.id for case in adversarial_words.CASES)


@pytest.mark.parametrize("contained", [False, True], ids=["not contained", "contained"])
@pytest.mark.parametrize("name", sorted(SETS))
def test_what_the_engine_allows_the_executor_holds(name: str, contained: bool) -> None:
    result = measure(SETS[name](), contained=contained)

    assert result.not_held == []
    assert result.held == result.allowed


def test_docs_report_the_measure_as_it_stands() -> None:
    """docs/rules.md's table is this measure, set by set, contained off and on."""
    text = DOCS.read_text()
    for name, cases in SETS.items():
        for contained in (False, True):
            result = measure(cases(), contained=contained)
            row = (
                rf"\| `{re.escape(name)}` \| {'on' if contained else 'off'} \| "
                rf"{result.cases} \| {result.allowed} \| {result.held} \| "
                rf"{len(result.not_held)} \|"
            )
            assert re.search(row, text), f"docs/rules.md lacks the row {row}"

"""The benign set (tests/support/everyday_commands.py): what data, devops and research
agents type every day, each with the right decision under seed 001's settings.json and the
agent type's sources.json, with the contained allow on. docs/rules.md ("Everyday commands")
reports the allow rate per agent type and explains every command that is not allowed. The
commands are data: only ever passed to evaluate() as strings."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from rules import Decision, ShellOperation, Sources, evaluate, parse_settings, parse_sources
from rules.tests.policies import CTX, FIXTURES, seed_settings
from tests.support.everyday_commands import COMMANDS, Everyday

SETTINGS = parse_settings(seed_settings())
SOURCES: dict[str, Sources] = {
    agent: parse_sources(json.loads((FIXTURES / name).read_text()))
    for agent, name in (
        ("data", "sources.json"),
        ("devops", "sources_devops.json"),
        ("research", "sources_research.json"),
    )
}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def _decide(case: Everyday, *, contained: bool = True) -> Decision:
    evaluation = evaluate(
        ShellOperation(case.command),
        rules=SETTINGS,
        sources=SOURCES[case.agent],
        context_id=CTX,
        contained=contained,
    )
    return evaluation.decision


def test_the_set_is_large_enough_and_every_refusal_says_why() -> None:
    per_agent = Counter(case.agent for case in COMMANDS)

    assert len(COMMANDS) >= 200
    assert per_agent["data"] >= 100
    assert per_agent["devops"] >= 50
    assert per_agent["research"] >= 50
    assert sorted(per_agent) == ["data", "devops", "research"]
    assert len({(case.agent, case.command) for case in COMMANDS}) == len(COMMANDS)
    assert {case.expect for case in COMMANDS} == {"allow", "ask", "deny"}
    assert [case for case in COMMANDS if case.expect != "allow" and not case.why] == []


@pytest.mark.parametrize("case", COMMANDS, ids=lambda case: f"{case.agent}:{case.command[:60]}")
def test_an_everyday_command_gets_its_decision(case: Everyday) -> None:
    assert _decide(case).value == case.expect, case.why


def _rates(*, contained: bool) -> dict[str, tuple[int, int]]:
    allowed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for case in COMMANDS:
        total[case.agent] += 1
        allowed[case.agent] += _decide(case, contained=contained) == Decision.ALLOW
    return {agent: (allowed[agent], total[agent]) for agent in total}


def _percent(rates: dict[str, tuple[int, int]], agent: str) -> str:
    allowed, total = rates[agent]
    return f"{allowed} ({100 * allowed / total:.1f} %)"


def test_the_data_agent_is_allowed_at_least_95_percent_and_docs_report_every_rate() -> None:
    held = _rates(contained=True)
    asked = _rates(contained=False)
    documented = DOCS.read_text()

    allowed, total = held["data"]
    assert allowed / total >= 0.95
    for agent in ("data", "devops", "research"):
        row = f"| {agent} | {held[agent][1]} | {_percent(held, agent)} | {_percent(asked, agent)} |"
        assert row in documented, f"docs/rules.md should have the row {row!r}"


def test_every_data_command_that_is_not_allowed_is_explained_in_the_docs() -> None:
    documented = DOCS.read_text()
    section = documented.split("### Everyday commands", 1)[1].split("\n## ", 1)[0]
    explained = set(re.findall(r"`([^`]+)`", section))

    missing = [case.command for case in COMMANDS if case.agent == "data" and case.expect != "allow"]
    assert [command for command in missing if command not in explained] == []

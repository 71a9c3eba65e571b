"""Issue 45: a value the line itself certainly assigns is read a second time, so that a deny
rule that certainly matches wins (``F=/etc/shadow; head "$F"`` was "may match at run time",
allowed contained); only its denies count, and it adds no effect."""

from __future__ import annotations

import pytest

from rules.model import Decision
from rules.tests.test_adversarial import judged

SHADOW = "denied: file(read:/etc/shadow:*) (via argument of head: /etc/shadow)"


@pytest.mark.parametrize("contained", [False, True])
@pytest.mark.parametrize(
    "command",
    [
        'F=/etc/shadow; head "$F"',
        "F=/etc/shadow && head $F",
        "F=/etc/shadow\nhead ${F}",
        "cd /tmp; F=/etc/shadow; { head -n1 $F; }",
    ],
)
def test_a_deny_rule_that_certainly_matches_an_assigned_value_wins(
    command: str, contained: bool
) -> None:
    evaluation = judged("seed", command, contained=contained)

    assert evaluation.decision == Decision.DENY
    assert evaluation.deciding_part is not None
    assert evaluation.deciding_part.reason == SHADOW


@pytest.mark.parametrize(
    "command",
    [
        # Assigned again, or otherwise, before the use: the value is not certain.
        'F=/etc/shadow; read F; head "$F"',
        'F=/etc/shadow; F=data.csv; head "$F"',
        'F=/etc/shadow; for F in a b; do head "$F"; done',
        # The assignment may not run, or runs in another shell.
        'true && F=/etc/shadow; head "$F"',
        'if x; then F=/etc/shadow; fi; head "$F"',
        '(F=/etc/shadow); head "$F"',
        'F=/etc/shadow & head "$F"',
        'F=/etc/shadow | true; head "$F"',
        "bash -c 'head $F'; F=/etc/shadow",
        "F=/etc/shadow; bash -c 'head $F'",  # not exported: the inner shell has no F
    ],
)
def test_a_value_that_is_not_certain_is_not_read_as_one(command: str) -> None:
    evaluation = judged("seed", command, contained=True)

    assert evaluation.decision != Decision.DENY
    assert all("/etc/shadow)" not in part.reason for part in evaluation.parts)


def test_the_second_reading_adds_no_effect_and_allows_nothing() -> None:
    plain = judged("seed", 'head "$F"', contained=True)
    assigned = judged("seed", 'F=data.csv; head "$F"', contained=True)

    assert (plain.decision, assigned.decision) == (Decision.ALLOW, Decision.ALLOW)
    assert assigned.effects == plain.effects
    # Contained off: the literal's own reading (an allowed read of data.csv) does not
    # turn the run-time path's ask into an allow.
    assert judged("seed", 'F=data.csv; head "$F"').decision == Decision.ASK

"""The third pass over the engine's classes of misreading (docs/rules.md, "Third pass"): a
program told another name, an emptied environment, a builtin that re-expands what it is
given, the variables the executor sets and programs obey, the directories programs search
for their configuration, a copy whose target is built from its source's path, and modules
that serve. The commands are data, only ever handed to evaluate()."""

from __future__ import annotations

import pytest

from cs_agent.environment import command_environment
from rules import Decision, RuleSet, ShellOperation, Sources, evaluate
from rules.environment import HARMLESS_ENVIRONMENT, dangerous_variable
from rules.tests.policies import CTX


def _judged(
    command: str, rules: RuleSet, sources: Sources | None, *, contained: bool
) -> tuple[Decision, str]:
    """The decision, and the reasons of every part that was not allowed (one per line)."""
    evaluation = evaluate(
        ShellOperation(command), rules=rules, sources=sources, context_id=CTX, contained=contained
    )
    reasons = [part.reason for part in evaluation.parts if part.decision is not Decision.ALLOW]
    return evaluation.decision, "\n".join(reasons)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "exec -a git-upload-pack git status",
            "exec -a gives the program another name (argv[0]); not judged",
        ),
        (
            "exec -c git status",
            "exec -c empties the environment, taking the executor's settings (PATH, HOME, "
            "GIT_CONFIG_*, the proxies) with it; not judged",
        ),
        (
            "env -i git log",
            "env -i empties the environment, taking the executor's settings (PATH, HOME, "
            "GIT_CONFIG_*, the proxies) with it; not judged",
        ),
        (
            "env - git log",
            "env -i empties the environment, taking the executor's settings (PATH, HOME, "
            "GIT_CONFIG_*, the proxies) with it; not judged",
        ),
        (
            "env -u GIT_CONFIG_COUNT git log",
            "env -u removes GIT_CONFIG_COUNT from the environment, which may be one the "
            "executor sets to hold the command (PATH, HOME, GIT_CONFIG_*, the proxies)",
        ),
        (
            "declare -a 'x=($(id))'; echo $x",
            "declare re-expands the compound assignment 'x=($(id))' (command substitutions "
            "in it run); not judged",
        ),
        (
            'typeset "y=(\\`id\\`)"',
            "typeset re-expands the compound assignment 'y=(`id`)' (command substitutions in "
            "it run); not judged",
        ),
        ("VIRTUAL_ENV=/tmp/v; pip install pandas", "VIRTUAL_ENV"),
        ("TMPDIR=.git; sort -o out.txt data.txt", "TMPDIR"),
        ("export PYTHONWARNINGS=ignore::evil.Warning; python3 -c 1", "PYTHONWARNINGS"),
        ("python3 -m http.server --cgi 8000", "python3 -m http.server starts a server"),
        ("python3 -m jupyter notebook", "python3 -m jupyter starts a server"),
    ],
)
def test_what_changes_the_program_or_its_environment_is_asked_even_contained(
    command: str, reason: str, rules: RuleSet, sources: Sources
) -> None:
    for contained in (False, True):
        decision, said = _judged(command, rules, sources, contained=contained)

        assert decision == Decision.ASK
        assert reason in said


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "git clone https://github.com/a/dotfiles .config",
            "/workspace/ctx-1/.config is where programs look for their configuration",
        ),
        (
            "cp -r settings .local/",
            "/workspace/ctx-1/.local/settings, which holds Python's user site-packages",
        ),
        ("mv pipdir .pip", "/workspace/ctx-1/.pip/pipdir, which is where pip looks for its"),
        ("cp index.toml uv.toml", "/workspace/ctx-1/uv.toml configures uv"),
        ("cp cfg .config/uv/uv.toml", "uv.toml/cfg, which is where programs look for their"),
    ],
)
def test_writing_where_programs_look_for_configuration_is_asked_about(
    command: str, reason: str, rules: RuleSet, sources: Sources
) -> None:
    for contained in (False, True):
        decision, said = _judged(command, rules, sources, contained=contained)

        assert decision == Decision.ASK
        assert reason in said


def test_cp_parents_writes_along_the_sources_path_dot_dot_parts_and_all(
    rules: RuleSet, sources: Sources
) -> None:
    # out/../../../etc/x from /workspace/ctx-1 is /etc/x: a denied write.
    denied = _judged("cp --parents ../../../etc/cron.d/job out", rules, sources, contained=True)
    outside = _judged("cp --parents ../../x out", rules, sources, contained=False)

    assert denied == (
        Decision.DENY,
        "denied: file(write:/etc/**:*) (via destination of cp --parents: "
        "out/../../../etc/cron.d/job)",
    )
    assert outside == (
        Decision.ASK,
        "no file rule allows it (via destination of cp --parents: out/../../x)",
    )
    assert _judged("cp --parents src/a.py out/", rules, sources, contained=False)[0] == (
        Decision.ALLOW
    )


@pytest.mark.parametrize(
    "command",
    [
        "env -u LANG ls",
        "env LANG=C ls",
        "exec ls -la",
        "export PYTHONUNBUFFERED=1",
        "python3 -m jupyter nbconvert --to script notebook.ipynb",
        "cp --parents src/a.py src/b.py out/",
        "mkdir -p settings && cp a.toml settings/",
    ],
)
def test_the_everyday_forms_beside_them_stay_allowed(
    command: str, rules: RuleSet, sources: Sources
) -> None:
    assert _judged(command, rules, sources, contained=True)[0] == Decision.ALLOW


def test_every_variable_the_executor_sets_is_one_an_assignment_may_not_change() -> None:
    """The executor's own environment (cs_agent/environment.py), proxy included: a plain
    assignment of any of them (VIRTUAL_ENV=…; pip install) would take a protection away.
    Only the locale it passes through may be set."""
    from pathlib import Path

    given = command_environment(
        {"LANG": "C.UTF-8", "TZ": "UTC"},
        Path("/workspace/ctx-1"),
        sandboxed=True,
        venv=True,
        proxy=True,
    )

    kept = sorted(name for name in given if not dangerous_variable(name))

    assert kept == ["LANG", "TZ"]
    assert set(kept) <= set(HARMLESS_ENVIRONMENT)


def test_contained_only_when_the_executor_refuses_every_deny_rule_that_may_match() -> None:
    """Under "plain", ``cat "$F"`` may be /etc/shadow (hidden from every run) or a .env file
    (denied by a glob no run can hide): the first alone let it through, contained."""
    from rules.tests.test_adversarial import POLICIES

    plain, _ = POLICIES["plain"]
    seed, sources = POLICIES["seed"]

    asked = _judged('cat "$F"', plain, None, contained=True)
    held = _judged('cat "$F"', seed, sources, contained=True)

    assert asked == (
        Decision.ASK,
        "may match file(read:**/.ssh/**) at run time, which the executor cannot refuse on its own",
    )
    assert held[0] == Decision.ALLOW

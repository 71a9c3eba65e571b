"""rules/risk.py: the level a reviewer sees first, and what the two-person rule keys on,
read from the engine's own evaluation."""

from __future__ import annotations

import pytest

from rules import evaluate, operation_from_dict, parse_settings
from rules.risk import Risk, assess, changed_paths, inside

RULES = parse_settings(
    {
        "permissions": {
            "allow": ["shell(ls:*)", "file(read:${WORKSPACE}/**)"],
            "deny": ["shell(curl:*)"],
            "ask": ["network(outbound:*.example.com)"],
        }
    }
)
WORKSPACE = "/workspace/ctx-1"


def risk(operation: dict[str, str]) -> Risk:
    parsed = operation_from_dict(operation)
    evaluation = evaluate(parsed, rules=RULES, sources=None, context_id="ctx-1")
    return assess(parsed, evaluation, WORKSPACE)


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ({"kind": "file", "action": "read", "path": "data/a.csv"}, Risk.LOW),
        ({"kind": "file", "action": "write", "path": "data/a.csv"}, Risk.MEDIUM),
        ({"kind": "file", "action": "delete", "path": "out"}, Risk.MEDIUM),
        ({"kind": "file", "action": "read", "path": "/etc/hosts"}, Risk.HIGH),
        ({"kind": "file", "action": "read", "path": "../ctx-2/secret"}, Risk.HIGH),
        ({"kind": "network", "host": "pypi.org"}, Risk.HIGH),
        # A program that contacts a host of its own reaches the network: pip its index,
        # git push the remote its repository names (issue 45: medium, with no network
        # effect, so one approver sufficed under the two-person rule).
        ({"kind": "shell", "command": "pip install pandas"}, Risk.HIGH),
        ({"kind": "shell", "command": "git push origin main"}, Risk.HIGH),
        ({"kind": "shell", "command": "git fetch"}, Risk.HIGH),
        ({"kind": "shell", "command": "git status"}, Risk.MEDIUM),
        ({"kind": "shell", "command": "echo hi > out.txt"}, Risk.MEDIUM),
        ({"kind": "shell", "command": "rm -rf data"}, Risk.MEDIUM),
        # A write outside the context's directory, by a redirection or an argument.
        ({"kind": "shell", "command": "ls > /etc/motd"}, Risk.HIGH),
        ({"kind": "shell", "command": "cp a.txt /tmp/b.txt"}, Risk.HIGH),
        # A command that reaches a host a network rule names.
        ({"kind": "shell", "command": "git clone https://git.example.com/r.git"}, Risk.HIGH),
        # Hidden characters (shown escaped) are high whatever the command.
        ({"kind": "shell", "command": "echo\u200b hi"}, Risk.HIGH),
    ],
)
def test_risk_comes_from_what_the_evaluation_found(
    operation: dict[str, str], expected: Risk
) -> None:
    assert risk(operation) == expected


def test_changed_paths_lists_writes_and_deletes_only() -> None:
    parsed = operation_from_dict({"kind": "shell", "command": "cat a.txt > b.txt && rm c.txt"})
    evaluation = evaluate(parsed, rules=RULES, sources=None, context_id="ctx-1")

    assert changed_paths(evaluation) == [
        ("write", "/workspace/ctx-1/b.txt"),
        ("delete", "/workspace/ctx-1/c.txt"),
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/workspace/ctx-1", True),
        ("/workspace/ctx-1/a/b", True),
        ("/workspace/ctx-10/a", False),
        ("/workspace/ctx-1/../ctx-2", False),
        # What a recursion or a glob finds below a directory of the context's stays in it...
        ("/workspace/ctx-1/data/…", True),
        # ...but not below the context's own directory (a ".." there leaves it), nor a name
        # only partly known.
        ("/workspace/ctx-1/…", False),
        ("/workspace/ctx-1/data/.…", False),
        ("$TARGET", False),
    ],
)
def test_inside_is_certain_or_false(path: str, expected: bool) -> None:
    assert inside(path, WORKSPACE) is expected


@pytest.mark.parametrize(
    ("command", "network"),
    [
        ("git push origin main", ["*"]),
        ("git fetch upstream", ["*"]),
        ("git pull", ["*"]),
        ("git ls-remote origin", ["*"]),
        ("git push https://git.example.com/r.git main", ["git.example.com"]),
        ("git status", []),
    ],
)
def test_a_remote_the_repository_names_is_a_host_only_known_at_run_time(
    command: str, network: list[str]
) -> None:
    """Its URL is in .git/config: the executor holds it to the agent type's ceiling."""
    parsed = operation_from_dict({"kind": "shell", "command": command})
    evaluation = evaluate(parsed, rules=RULES, sources=None, context_id="ctx-1")

    assert evaluation.effects is not None
    assert evaluation.effects["network"] == network

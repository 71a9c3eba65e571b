"""What a shell command is judged to do, as the executor is then held to it (rules.effects):
exact paths where the walker knows them, the directory they certainly lie in where it does
not, and the whole context (with the network) for a command it could not model."""

from __future__ import annotations

import pytest

from rules import RuleSet, ShellOperation, evaluate

CTX = "/workspace/ctx-1"


def effects(command: str) -> dict[str, list[str]] | None:
    return evaluate(
        ShellOperation(command), rules=RuleSet(), sources=None, context_id="ctx-1"
    ).effects


@pytest.mark.parametrize(
    ("command", "read", "write", "delete", "network"),
    [
        ("cat notes.txt", [f"{CTX}/notes.txt"], [], [], []),
        ("ls", [CTX], [], [], []),
        ("sort a.txt > b.txt", [f"{CTX}/a.txt"], [f"{CTX}/b.txt"], [], []),
        ("grep -rn error logs/", [f"{CTX}/logs", f"{CTX}/logs/**"], [], [], []),
        ("cat *.txt", [f"{CTX}/**"], [], [], []),
        ("cat /etc/*.conf", ["/etc/**"], [], [], []),
        ("mv a b", [], [f"{CTX}/b"], [f"{CTX}/a"], []),
        ("echo $X > $Y", [], [f"{CTX}/**"], [], []),
        (
            "git clone https://github.com/a/b",
            [f"{CTX}/**"],
            [f"{CTX}/**", f"{CTX}/b"],
            [],
            ["github.com"],
        ),
        ("pip install pandas", [], [f"{CTX}/**"], [], ["*"]),
        ("python3 job.py", [f"{CTX}/**", f"{CTX}/job.py"], [f"{CTX}/**"], [], ["*"]),
        ("sleep 3", [], [], [], []),
    ],
)
def test_judged_effects(
    command: str, read: list[str], write: list[str], delete: list[str], network: list[str]
) -> None:
    found = effects(command)

    assert found is not None
    assert (found["read"], found["write"], found["delete"], found["network"]) == (
        read,
        write,
        delete,
        network,
    )


def test_file_and_network_operations_have_no_shell_effects() -> None:
    from rules import FileAction, FileOperation, NetworkOperation

    file_effects = evaluate(
        FileOperation(FileAction.READ, "a.txt"), rules=RuleSet(), sources=None, context_id="c"
    ).effects
    host_effects = evaluate(
        NetworkOperation("pypi.org"), rules=RuleSet(), sources=None, context_id="c"
    ).effects

    assert (file_effects, host_effects) == (None, None)


def test_effects_are_not_part_of_the_explanation_reviewers_read() -> None:
    evaluation = evaluate(
        ShellOperation("cat notes.txt"), rules=RuleSet(), sources=None, context_id="ctx-1"
    )

    assert "effects" not in evaluation.to_dict()
    assert evaluation.effects is not None
    assert evaluation.effects["programs"] == ["cat"]

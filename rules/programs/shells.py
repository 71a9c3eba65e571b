"""Shells run as programs (``bash x.sh``, ``sh -c '…'``) and the project tools that run the
agent's own code (pytest, make): what the shell's own options do, which file it runs, and
which text it runs as commands (``-c``, standard input), which the walker judges like any
other line."""

from __future__ import annotations

import re

from rules.invocations import Contained
from rules.programs.base import (
    Abbreviations,
    Effect,
    Parsed,
    Program,
    Understanding,
    flags,
    parse,
    table,
    valued,
)
from rules.programs.walking import Command, Hook, Outcome, Walk, here_texts, stdin_text
from rules.words import Word, WordKind, literal

# Names of standard input and of an inherited descriptor, as a script operand.
STDIN = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
DESCRIPTOR = re.compile(r"/(?:dev|proc/self)/fd/\d+")

SHELL_TABLE = table(
    flags(
        "-b -C -e -E -f -h -m -n -p -P -t -T -u -v -x -B -r --restricted --norc "
        "--noprofile --noediting --posix --verbose --help --version -D --dump-strings "
        "--dump-po-strings --pretty-print"
    ),
    valued("-o"),  # the option names are checked below
    flags("-c -s"),  # -c: the walker judges the command string; -s: commands on stdin
    flags("-a", Effect.UNSAFE, "exports every variable the script assigns (allexport)"),
    flags("-k", Effect.UNSAFE, "takes assignments anywhere on a line into the environment"),
    flags("-H", Effect.UNSAFE, "turns on history expansion, which rewrites the lines it reads"),
    valued(
        "-O", Effect.UNSAFE, "sets a shell option (lastpipe, cdable_vars …) the engine reads as off"
    ),
    flags("-i", Effect.UNSAFE, "starts an interactive shell, which reads startup files"),
    flags("-l,--login", Effect.UNSAFE, "reads login startup files the agent may have written"),
    valued("--rcfile,--init-file", Effect.EXEC, "runs a startup file"),
    flags("--debugger", Effect.UNSAFE, "runs the debugger profile"),
    abbreviations=Abbreviations.NONE,
    permute=False,
    # bash -oerrexit x: -o takes the next word (x), "errexit" is read as more flags.
    clusters="next",
)
# "set -o NAME" names a shell may be started with (the rest change how lines are read).
HARMLESS_SHELL_OPTIONS = frozenset(
    {"errexit", "nounset", "pipefail", "xtrace", "verbose", "noclobber", "noglob", "posix"}
)


def script_operands(parsed: Parsed) -> list[Word]:
    """The operands after the options: "+x", "+o NAME", "+O NAME" switch options off and
    come before the script (or the command string)."""
    operands = list(parsed.operands)
    while operands and operands[0].kind is WordKind.LITERAL and operands[0].value[:1] == "+":
        operands = operands[2:] if operands[0].value in {"+o", "+O"} else operands[1:]
    return operands


def _shell(name: str, parsed: Parsed, found: Understanding) -> None:
    for option in parsed.values("-o"):
        if option.value not in HARMLESS_SHELL_OPTIONS:
            found.problems.append(f"{name} -o {option.display} changes how lines are read")
    operands = script_operands(parsed)
    if parsed.has("-c", "-s") or not operands:
        return  # the walker judges the command string or standard input
    script = operands[0]
    if script.kind is WordKind.LITERAL and script.value in STDIN:
        return  # the walker judges the here-document or here-string it reads
    # /dev/fd/N: a process substitution or some descriptor — the walker judges any
    # here-document so a deny wins, but which text it is cannot be known.
    found.code.append(script)
    found.read([script], f"script of {name}:")
    # A system script does what its code says with its arguments (sh /bin/zgrep x FILE
    # reads FILE): not modelled.
    found.problems.append(
        Contained(f"{name} runs the script {script.display}: what it does is not modelled")
    )


SHELL = Program(("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"), SHELL_TABLE, _shell)
SHELLS = frozenset(SHELL.names)


def _commands(command: Command, walk: Walk) -> Outcome:
    """The command string of ``-c`` and the commands a shell reads from a here-document
    or here-string (as standard input, ``/dev/stdin`` or ``/dev/fd/N``) are judged like
    any line; a script file is ``_shell``'s (code the agent may have written)."""
    name, problems = command.name, command.problems
    parsed = parse(command.words[1:], SHELL_TABLE, name)
    operands = script_operands(parsed)
    if parsed.has("-c"):
        if not operands:
            problems.append(f"{name} -c without a command string")
        else:
            walk.command_string(operands[0], f"{name} -c", command.depth, problems)
        return Outcome.READ
    script = None if parsed.has("-s") or not operands else operands[0]
    if script is not None and script.kind is WordKind.LITERAL and script.value in STDIN:
        script = None
    if script is None:
        text = stdin_text(command.redirects)
        if text is not None:
            origin = f"{name} reading a here-document"
            walk.command_string(literal(text), origin, command.depth, problems)
        elif not any(operator == "<" for operator, _ in command.redirects):
            problems.append(f"{name} reads commands from standard input, which is not seen")
        # "bash < script.sh": the file is code (the walker judges it as such)
        return Outcome.READ
    if script.kind is WordKind.LITERAL and DESCRIPTOR.fullmatch(script.value):
        here_texts(command, walk, f"{name} reading {script.value}")
    return Outcome.READ


PYTEST = Program(
    ("pytest", "py.test"),
    table(permute=True, parse_options=False),
    None,
    runs_project_code=(
        "pytest runs the project's tests, conftest.py files and plugins: code the agent may "
        "have written"
    ),
)
MAKE = Program(
    ("make", "gmake"),
    table(parse_options=False),
    None,
    runs_project_code="make runs the recipes of a Makefile the agent may have written",
)

PROGRAMS = (SHELL, PYTEST, MAKE)
HOOKS: dict[str, Hook] = dict.fromkeys(SHELLS, _commands)

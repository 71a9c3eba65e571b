"""Shells run as programs (``bash x.sh``, ``sh -c '…'``) and the project tools that run the
agent's own code (pytest, make). A command string (``-c``) and commands on standard input
are judged by the walker like any other line; here is what the shell's own options do and
which file it runs."""

from __future__ import annotations

from approvals.rules.programs.base import (
    Abbreviations,
    Effect,
    Parsed,
    Program,
    Understanding,
    flags,
    table,
    valued,
)
from approvals.rules.words import WordKind

SHELL_TABLE = table(
    flags(
        "-a -b -C -e -E -f -h -H -k -m -n -p -P -t -T -u -v -x -B -r --restricted --norc "
        "--noprofile --noediting --posix --verbose --help --version -D --dump-strings "
        "--dump-po-strings --pretty-print"
    ),
    valued("-o -O"),
    flags("-c -s"),  # -c: the walker judges the command string; -s: commands on stdin
    flags("-i", Effect.UNSAFE, "starts an interactive shell, which reads startup files"),
    flags("-l,--login", Effect.UNSAFE, "reads login startup files the agent may have written"),
    valued("--rcfile,--init-file", Effect.EXEC, "runs a startup file"),
    flags("--debugger", Effect.UNSAFE, "runs the debugger profile"),
    abbreviations=Abbreviations.NONE,
    permute=False,
)


def _shell(name: str, parsed: Parsed, found: Understanding) -> None:
    operands = list(parsed.operands)
    # "+x", "+o NAME", "+O NAME" switch options off; they come before the script.
    while operands and operands[0].kind is WordKind.LITERAL and operands[0].value[:1] == "+":
        operands = operands[2:] if operands[0].value in {"+o", "+O"} else operands[1:]
    if parsed.has("-c", "-s") or not operands:
        return  # the walker judges the command string or standard input
    script = operands[0]
    if script.kind is WordKind.LITERAL and script.value == "-":
        return
    found.code.append(script)
    found.read([script], f"script of {name}:")


SHELL = Program(("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"), SHELL_TABLE, _shell)

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
_ = valued

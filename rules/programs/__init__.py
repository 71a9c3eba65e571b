"""Command knowledge, one module per program family: ``understand(words)`` reads a simple
command against its program's option table and says what it does with each word — or why
it cannot be understood (then no rule can allow it); ``runs(name)`` is the hook that finds
the commands a program runs (``sudo X``, ``bash -c …``, ``eval …``) for the walker to judge
(walking.py); the wrappers it strips first are wrappers.py's."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rules.programs import (
    builtins,
    coreutils,
    find,
    git,
    interpreters,
    network,
    python,
    runners,
    shells,
    text,
)
from rules.programs.base import (
    Parsed,
    Program,
    Role,
    ShellDirectory,
    Understanding,
    Use,
    option_uses,
    parse,
)
from rules.programs.walking import Hook
from rules.words import PIP_NAME, PYTHON_NAME, Word, WordKind, program_name

REGISTRY: dict[str, Program] = {
    name: program
    for module in (builtins, coreutils, text, find, python, git, shells, network)
    for program in module.PROGRAMS
    for name in program.names
}

# A mention of a builtin that moves the shell (cd, pushd, popd) somewhere in a text.
_MOVERS = sorted(
    name for name, program in REGISTRY.items() if program.shell_directory is not ShellDirectory.KEPT
)
CHANGES_DIRECTORY = re.compile(rf"\b(?:{'|'.join(_MOVERS)})\b")

# The hooks of the programs that run commands (or text as commands), by name.
HOOKS: dict[str, Hook] = {
    name: hook
    for module in (builtins, runners, find, shells, interpreters)
    for name, hook in module.HOOKS.items()
}

__all__ = [
    "CHANGES_DIRECTORY",
    "HOOKS",
    "REGISTRY",
    "Role",
    "Understanding",
    "Use",
    "interprets",
    "lookup",
    "read",
    "runs",
    "understand",
]


def runs(name: str) -> Hook | None:
    """The hook that finds what else the program ``name`` runs; None for most programs."""
    return HOOKS.get(name)


def interprets(name: str) -> bool:
    """Is ``name`` a shell or a Python, which runs the code it is given in a way an
    enforcing executor can contain (programs.base's Contained)?"""
    return name in shells.SHELLS or bool(PYTHON_NAME.match(name))


def lookup(name: str) -> Program | None:
    """The program a name runs: ``python3.11`` is python, ``pip3.12`` is pip."""
    found = REGISTRY.get(name)
    if found is None and PYTHON_NAME.match(name):
        found = python.PYTHON
    if found is None and PIP_NAME.match(name):
        found = python.PIP
    return found


def understand(words: Sequence[Word]) -> Understanding:
    """What the simple command ``words`` (the program first) does, as far as the engine can
    tell; ``problems`` lists what it cannot, and makes the command at most ask."""
    name = program_name(words[0])
    program = lookup(name)
    if program is None:
        return Understanding(
            name, modelled=False, problems=[f"{name} is not a program the engine models"]
        )
    found = Understanding(name, shell_directory=program.shell_directory)
    parsed = parse(words[1:], program.table, name)
    found.problems.extend(parsed.problems)
    if program.subcommands is None:
        if program.operands is None:
            option_uses(name, parsed, found)
        else:
            program.operands(name, parsed, found)
    else:
        _subcommand(name, program, parsed, found)
    if program.runs_project_code:
        found.problems.append(program.runs_project_code)
    return found


def _subcommand(name: str, program: Program, parsed: Parsed, found: Understanding) -> None:
    if program.operands is not None:
        program.operands(name, parsed, found)
    else:
        option_uses(name, parsed, found)
    if not parsed.operands:
        return  # git --version, pip --help
    head, rest = parsed.operands[0], parsed.operands[1:]
    assert program.subcommands is not None
    sub = program.subcommands.get(head.value) if head.kind is WordKind.LITERAL else None
    if sub is None:
        found.problems.append(f"{name} {head.display} is not a subcommand the engine models")
        return
    what = f"{name} {head.value}"
    sub_parsed = parse(rest, sub.table, what)
    found.problems.extend(sub_parsed.problems)
    if sub.operands is None:
        option_uses(what, sub_parsed, found)
    else:
        sub.operands(what, sub_parsed, found)


def read(words: Sequence[Word], *, guess: bool = False) -> tuple[str, Parsed] | None:
    """The command (``git clone``, ``pip install``) and its options and operands as its
    tables read them, for sources.json narrowing to judge the URLs and packages in them.
    ``guess`` resolves abbreviations even in partial tables: narrowing only ever makes a
    verdict stricter. None: not a program (or subcommand) the engine models."""
    name = program_name(words[0])
    program = lookup(name)
    if program is None:
        return None
    parsed = parse(words[1:], program.table, name, guess=guess)
    if program.subcommands is None:
        return name, parsed
    if not parsed.operands or parsed.operands[0].kind is not WordKind.LITERAL:
        return None
    head = parsed.operands[0].value
    sub = program.subcommands.get(head)
    if sub is None:
        return None
    what = f"{name} {head}"
    inner = parse(parsed.operands[1:], sub.table, what, guess=guess)
    return what, Parsed(parsed.given + inner.given, inner.operands, inner.problems)

"""What a program's model may ask of the walker, and what it is handed: the commands a
program runs (``sudo X``, ``find -exec X``, ``bash -c '…'``, ``eval …``) are walked like the
line's own, but which words are those commands is the program's knowledge. The walker looks
a program's ``Hook`` up by name (``programs.runs``) and calls it without knowing which
program it is; the hook says what is left to do with the command (``Outcome``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from rules.invocations import Cwd, Invocation
from rules.words import Word, WordKind, literal


class Outcome(Enum):
    READ = "read"  # then read against its table (programs.understand), as any command
    # It only runs the command it names, which is judged as a part of its own (sudo X).
    RUNNER = "runner"
    # Nothing of its own to allow: its inner commands decide (eval).
    TRANSPARENT = "transparent"


@dataclass(slots=True)
class Command:
    """The effective command of one simple command, as the walker found it."""

    words: list[Word]
    name: str  # its program
    redirects: list[tuple[str, Any]]  # (operator, a Word, a here-document body, or None)
    problems: list[str]  # what keeps a rule from allowing it: a hook adds to them
    # Commands it runs, judged after it as commands of their own: (words, origin, cwd).
    inner: list[tuple[list[Word], str, Cwd]]
    cwd: Cwd  # where it runs (a wrapper's chdir applied)
    depth: int  # how deeply the text it is in is nested (bash -c inside eval …)


class Walk(Protocol):
    """The walker, as a hook sees it."""

    cwd: Cwd  # the shell's working directory (not a wrapper's chdir)

    def run_text(self, text: str, origin: str, depth: int) -> None:
        """Walk ``text`` as lines this shell runs (eval): a ``cd`` in it moves the shell."""

    def command_string(self, word: Word, origin: str, depth: int, problems: list[str]) -> None:
        """Walk ``word`` as a command line another shell runs (``bash -c``, ``trap``), one
        level deeper than ``depth``; a problem when its text is only known at run time."""

    def assignment_problems(self, name: str, value: Word, *, exported: bool) -> list[str]:
        """Why assigning ``value`` to ``name`` keeps a rule from allowing the command."""

    def report(self, invocation: Invocation) -> None:
        """Add an invocation of its own (a malformed part of the command)."""


Hook = Callable[[Command, Walk], Outcome]


def stdin_text(redirects: list[tuple[str, Any]]) -> str | None:
    """The commands a shell would read on stdin when we can see them, else None."""
    for operator, target in reversed(redirects):
        if operator in {"<<", "<<-"} and isinstance(target, str):
            return target
        if operator == "<<<" and isinstance(target, Word):
            return target.value if target.kind is WordKind.LITERAL else None
        if operator == "<":
            return None
    return None


def here_texts(command: Command, walk: Walk, origin: str) -> None:
    """A program reads commands from a descriptor (``/dev/fd/3``): every here-document
    and here-string of the command may be it, so each is judged as commands."""
    for operator, target in command.redirects:
        if operator in {"<<", "<<-"} and isinstance(target, str):
            walk.command_string(literal(target), origin, command.depth, command.problems)
        elif operator == "<<<" and isinstance(target, Word):
            walk.command_string(target, origin, command.depth, command.problems)

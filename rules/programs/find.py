"""find: starting points, then an expression of tests and actions (its own syntax, not
getopt's). Every primary must be known; the actions that write, delete or run programs are
what the rules judge; the commands of -exec and friends (``_commands``) are walked as
commands of their own."""

from __future__ import annotations

from collections.abc import Sequence

from rules.invocations import Invocation
from rules.patterns import SENTINEL
from rules.programs.base import NO_OPTIONS, Parsed, Program, Understanding
from rules.programs.walking import Command, Hook, Outcome, Walk
from rules.words import Word, WordKind, render, unknown

# Options before the starting points.
LEADING = frozenset({"-H", "-L", "-P"})
LEADING_VALUED = frozenset({"-D"})  # -D debugopts; -Olevel is one word
# Primaries: name → how many words follow it.
TESTS = {
    **dict.fromkeys(
        [
            "-amin",
            "-anewer",
            "-atime",
            "-cmin",
            "-cnewer",
            "-ctime",
            "-gid",
            "-group",
            "-ilname",
            "-iname",
            "-inum",
            "-ipath",
            "-iregex",
            "-iwholename",
            "-links",
            "-lname",
            "-mmin",
            "-mtime",
            "-name",
            "-newer",
            "-path",
            "-perm",
            "-regex",
            "-samefile",
            "-size",
            "-type",
            "-uid",
            "-used",
            "-user",
            "-wholename",
            "-xtype",
            "-context",
            "-fstype",
            "-maxdepth",
            "-mindepth",
            "-regextype",
            "-files0-from",
        ],
        1,
    ),
    **dict.fromkeys(
        [
            "-empty",
            "-executable",
            "-false",
            "-nogroup",
            "-nouser",
            "-readable",
            "-true",
            "-writable",
            "-depth",
            "-d",
            "-daystart",
            "-follow",
            "-ignore_readdir_race",
            "-noignore_readdir_race",
            "-mount",
            "-xdev",
            "-noleaf",
            "-warn",
            "-nowarn",
            "-print",
            "-print0",
            "-ls",
            "-prune",
            "-quit",
            "-not",
            "-a",
            "-and",
            "-o",
            "-or",
            "!",
            "(",
            ")",
            ",",
        ],
        0,
    ),
}
WRITES = {"-fprint": 1, "-fprint0": 1, "-fls": 1, "-fprintf": 2}
FORMAT = {"-printf": 1}
RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def below(start: Word) -> Word:
    """``START/…``: any path below a starting point."""
    if start.kind is WordKind.UNKNOWN:
        return start
    return Word(start.value.rstrip("/") + "/" + SENTINEL, start.kind)


LISTED = unknown("<starting points listed by -files0-from>")


def starting_points(words: Sequence[Word]) -> tuple[list[Word], int]:
    """find's starting points (``words`` are its arguments) and the index where its
    expression begins. The options -H, -L, -P, -D and -O come first (``find -L /etc`` starts
    at /etc); with -files0-from the starting points are the paths listed in a file, only
    known at run time; with none at all, find starts at ".". The commands -exec runs on
    ``{}`` (``_commands``) and find's own paths (``_find``) are read from the same ones."""
    index = 0
    while index < len(words) and (
        words[index].value in LEADING
        or words[index].value in LEADING_VALUED
        or words[index].value.startswith("-O")
    ):
        index += 2 if words[index].value in LEADING_VALUED else 1
    starts: list[Word] = []
    while index < len(words) and not (
        words[index].value.startswith("-") or words[index].value in {"(", "!", ")", ","}
    ):
        starts.append(words[index])
        index += 1
    if any(word.value == "-files0-from" for word in words[index:]):
        starts.append(LISTED)
    return starts or [Word(".")], index


def _find(name: str, parsed: Parsed, found: Understanding) -> None:
    words = parsed.operands
    starts, index = starting_points(words)
    for start in starts:
        if start.kind is WordKind.UNKNOWN and start != LISTED:
            found.problems.append(f"find: the starting point {start.display} may be an option")
        elif start.kind is WordKind.GLOB and start.value[:1] in "*?[":
            # find * with a file named "-delete" or "-fprint": an expression, not a start.
            found.problems.append(
                f"find: the starting point {start.display} may expand to an expression"
            )
    found.read(starts, "find")
    while index < len(words):
        word = words[index]
        primary = word.value
        if word.kind is not WordKind.LITERAL:
            found.problems.append(f"find: {word.display} where a primary goes is not known")
            index += 1
            continue
        if primary in RUNS:
            index = command_end(words, index) + 1  # the walker judges the command itself
            continue
        if primary == "-delete":
            found.delete([below(start) for start in starts], "find -delete")
            index += 1
            continue
        if primary in WRITES:
            if index + 1 < len(words):
                found.write([words[index + 1]], f"find {primary}")
            index += 1 + WRITES[primary]
            continue
        if primary == "-files0-from" and index + 1 < len(words):
            found.read_listed(words[index + 1], "find -files0-from")
        if primary in FORMAT:
            index += 1 + FORMAT[primary]
            continue
        if primary.startswith("-newer") and len(primary) == 8:
            index += 2  # -newerXY reference
            continue
        if primary not in TESTS:
            found.problems.append(f"find: unknown primary {primary}")
            index += 1
            continue
        for value in words[index + 1 : index + 1 + TESTS[primary]]:
            if value.kind is WordKind.UNKNOWN and primary in {"-newer", "-samefile", "-anewer"}:
                found.problems.append(f"find {primary} {value.display} is only known at run time")
        index += 1 + TESTS[primary]


FIND = Program(("find",), NO_OPTIONS, _find)

PROGRAMS = (FIND,)


def _commands(command: Command, walk: Walk) -> Outcome:
    """The commands find runs (-exec, -execdir, -ok, -okdir) are judged as commands of
    their own; what find itself reads, writes and deletes is ``_find``'s."""
    words = command.words
    starts, first = starting_points(words[1:])
    index = first + 1
    while index < len(words):
        value = words[index].value
        if value in RUNS:
            end = command_end(words, index)
            inner = [
                found_path(word, starts) if "{}" in word.value else word
                for word in words[index + 1 : end]
            ]
            if end >= len(words) or not inner:
                walk.report(
                    Invocation(
                        text=render(words),
                        problems=(f"find {value} without a terminated command",),
                    )
                )
            else:
                # -execdir runs in each match's directory: the cwd is unknown there.
                inner_cwd = None if value.endswith("dir") else command.cwd
                command.inner.append((inner, f"find {value}", inner_cwd))
            index = end + 1
            continue
        index += 1
    return Outcome.READ


def command_end(words: Sequence[Word], index: int) -> int:
    """Where the command of the -exec/-execdir/-ok/-okdir at ``index`` ends (the index of
    its terminator, or ``len(words)``), as findutils parses it (parser.c, insert_exec_ok):
    at a ``;`` word, or for -exec and -execdir at a ``+`` word right after a ``{}`` word —
    a ``+`` anywhere else is an argument of the command, and -ok takes no ``+`` at all."""
    plus = words[index].value in {"-exec", "-execdir"}
    end = index + 1
    while end < len(words):
        value = words[end].value
        if value == ";" or (plus and value == "+" and words[end - 1].value == "{}"):
            return end
        end += 1
    return end


def found_path(word: Word, starts: list[Word]) -> Word:
    """``{}`` in ``find START -exec cmd {} ;`` is START or a path below it: ``START/…``
    (at depth 0 it is START itself, so ``{}/..`` may be START's parent: such a word is a
    path only known at run time)."""
    if len(starts) != 1 or starts[0].kind is not WordKind.LITERAL:
        return unknown(word.value)
    if "{}/.." in word.value or "{}.." in word.value:
        return unknown(word.value)
    below = starts[0].value.rstrip("/") + "/" + SENTINEL
    return Word(word.value.replace("{}", below), WordKind.GLOB)


HOOKS: dict[str, Hook] = {"find": _commands}

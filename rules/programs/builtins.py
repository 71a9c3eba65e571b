"""bash builtins that only change the shell's own state (variables, options, the positional
parameters). Which names they assign, and whether that changes what later commands run, the
walker judges (``assigning_builtin``); here are their options and that their operands are
names and values, not paths."""

from __future__ import annotations

from rules.programs.base import (
    NO_OPTIONS,
    Abbreviations,
    Effect,
    Parsed,
    Program,
    Understanding,
    flags,
    option_uses,
    table,
    valued,
)
from rules.words import WordKind

NONE = Abbreviations.NONE


def names(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)  # operands are variable names and values


DECLARE = Program(
    ("declare", "typeset", "local"),
    table(
        flags("-a -A -f -F -g -I -l -r -t -u -x -p"),  # "+x" (switch off) reads as a name
        flags("-i", Effect.UNSAFE, "makes assignments evaluate arithmetic"),
        flags("-n", Effect.UNSAFE, "creates a name reference"),
        abbreviations=NONE,
        permute=False,
    ),
    names,
)
EXPORT = Program(("export",), table(flags("-f -n -p"), abbreviations=NONE, permute=False), names)
READONLY = Program(
    ("readonly",), table(flags("-a -A -f -p"), abbreviations=NONE, permute=False), names
)
UNSET = Program(("unset",), table(flags("-f -v -n"), abbreviations=NONE, permute=False), names)
READ = Program(
    ("read",),
    table(
        flags("-e -r -s"),
        valued("-a -d -i -n -N -p -t -u"),
        abbreviations=NONE,
        permute=False,
    ),
    names,
)
MAPFILE = Program(
    ("mapfile", "readarray"),
    table(flags("-t"), valued("-d -n -O -s -u -C -c"), abbreviations=NONE, permute=False),
    names,
)
GETOPTS = Program(("getopts",), NO_OPTIONS, names)
# Words that end a loop, a function or the shell, or wait for children: nothing to judge.
CONTROL = Program(("shift", "exit", "return", "break", "continue", "wait"), NO_OPTIONS, names)
UMASK = Program(("umask",), table(flags("-p -S"), abbreviations=NONE, permute=False), names)
TYPE = Program(("type",), table(flags("-a -f -p -P -t"), abbreviations=NONE), names)

# set: -o NAME / +o NAME for these names; the letters below; "--" or the first other word
# starts the positional parameters (plain data).
_SET_LETTERS = frozenset("eEuxvCfhbmPT")
_SET_NAMES = frozenset(
    {
        "errexit", "errtrace", "nounset", "xtrace", "verbose", "noclobber", "noglob", "hashall",
        "notify", "monitor", "physical", "functrace", "pipefail", "ignoreeof",
        "history", "emacs", "vi",
    }
)  # fmt: skip
_SET_UNSAFE = {
    "a": "exports every variable assigned later (set -a)",
    "k": "moves assignments anywhere on a command line into its environment (set -k)",
    "B": "changes brace expansion, which the engine reads as bash's default",
    "t": "exits after one command (set -t)",
    "n": "stops running commands",
    # With history on, "!$" or "!!:1" in a later line is replaced by words of an earlier
    # one before the line is parsed: the engine would judge text bash does not run.
    "H": "turns on history expansion, which rewrites later lines (set -H)",
}


def _set(name: str, parsed: Parsed, found: Understanding) -> None:
    words = parsed.operands
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        value = word.value
        if word.kind is not WordKind.LITERAL:
            found.problems.append(f"set: {word.display} is only known at run time")
            return
        if value in {"--", "-"} or value[:1] not in "-+":
            return  # the rest are positional parameters
        for letter in value[1:]:
            if letter == "o":
                option = words[index].value if index < len(words) else ""
                index += 1
                if option == "histexpand":
                    found.problems.append(f"set {_SET_UNSAFE['H']}")
                elif option not in _SET_NAMES:
                    found.problems.append(f"set -o {option or '(list)'} is not an option judged")
            elif letter in _SET_UNSAFE:
                found.problems.append(f"set {_SET_UNSAFE[letter]}")
            elif letter not in _SET_LETTERS:
                found.problems.append(f"set: unknown option {value[0]}{letter}")


SET = Program(("set",), NO_OPTIONS, _set)

PROGRAMS = (DECLARE, EXPORT, READONLY, UNSET, READ, MAPFILE, GETOPTS, CONTROL, UMASK, TYPE, SET)

"""Interpreters whose inline code the engine cannot read (perl -e, node -p …): the option
letters that introduce code, and that a program read from standard input is not judged
either."""

from __future__ import annotations

from rules.programs.walking import Command, Hook, Outcome, Walk
from rules.words import WordKind

INLINE_CODE = {
    "perl": "eE",
    "ruby": "e",
    "node": "ep",
    "nodejs": "ep",
    "php": "r",
    "lua": "e",
    "Rscript": "e",
    "R": "e",
    "osascript": "e",
    "bun": "e",
    "fish": "c",
    "csh": "c",
    "tcsh": "c",
    "pwsh": "c",
}


def _inline_code(command: Command, walk: Walk) -> Outcome:
    words, name, problems = command.words, command.name, command.problems
    letters = INLINE_CODE[name]
    for word in words[1:]:
        value = word.value
        if word.kind is WordKind.UNKNOWN or not value.startswith("-") or value == "-":
            break
        if value.startswith("--"):
            if value.split("=")[0] in {"--eval", "--print", "--command"}:
                problems.append(f"inline {name} code cannot be judged")
            continue
        if any(letter in value[1:] for letter in letters):
            problems.append(f"inline {name} code cannot be judged")
            return Outcome.READ
    positional = [w for w in words[1:] if not w.value.startswith("-")]
    if not positional:
        problems.append(f"{name} reads its program from standard input, which is not judged")
    return Outcome.READ


HOOKS: dict[str, Hook] = dict.fromkeys(INLINE_CODE, _inline_code)

"""bash builtins that only change the shell's own state (variables, options, the positional
parameters): their options, that their operands are names and values, not paths, which
names they assign and whether that changes what later commands run (``_assigning``); and
the builtins that run text as commands (eval, trap, source) or that no rule can allow."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rules.environment import HARMLESS_ENVIRONMENT, dangerous_variable
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
from rules.programs.shells import DESCRIPTOR, STDIN
from rules.programs.walking import Command, Hook, Outcome, Walk, here_texts
from rules.words import Word, WordKind, integer_literal

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

# Builtins that only move the shell or change its own state: no rule is needed (what they
# assign or where they go is judged as a problem or a path: below, and rules.accesses).
HARMLESS = frozenset(
    {"true", "false", ":", "cd", "pushd", "popd", "test", "["}
    | {"export", "declare", "typeset", "local", "readonly", "unset", "read", "mapfile"}
    | {"readarray", "getopts", "shift", "exit", "return", "break", "continue", "wait", "set"}
    | {"umask", "type"}
)


ALWAYS_ASK = {
    "source": "source runs a file's commands, which cannot be judged here",
    ".": "'.' runs a file's commands, which cannot be judged here",
    "alias": "alias changes what later commands mean",
    "unalias": "unalias changes what later commands mean",
    "trap": "trap installs a command string that runs later",
    "enable": "enable swaps shell builtins",
    "hash": "hash can point a command name at another program",
    "coproc": "coproc is not supported",
    # A name in an arithmetic expression is evaluated as an expression itself, so a value
    # like "a[$(cmd)]" runs cmd: arithmetic on anything but constants cannot be judged.
    "let": "let evaluates arithmetic, which can run commands hidden in variable values",
}


def _asked(command: Command, walk: Walk) -> Outcome:
    command.problems.append(ALWAYS_ASK[command.name])
    return Outcome.READ


def _source(command: Command, walk: Walk) -> Outcome:
    """``source /dev/stdin`` (or a descriptor) reads the command's here-documents."""
    name, words = command.name, command.words
    command.problems.append(ALWAYS_ASK[name])
    reads = words[1] if len(words) > 1 else None
    if (
        reads is not None
        and reads.kind is WordKind.LITERAL
        and (reads.value in STDIN or DESCRIPTOR.fullmatch(reads.value))
    ):
        here_texts(command, walk, f"{name} {reads.value}")
    return Outcome.READ


def _trap(command: Command, walk: Walk) -> Outcome:
    command.problems.append(ALWAYS_ASK["trap"])
    words = command.words
    if len(words) > 2 and not words[1].value.startswith("-"):
        # The handler runs later, but it runs: judge it so a deny inside still wins.
        walk.command_string(words[1], "trap", command.depth, command.problems)
    return Outcome.READ


def _exec(command: Command, walk: Walk) -> Outcome:
    if len(command.words) == 1 and command.redirects:
        command.problems.append("exec with only redirections changes the shell's descriptors")
    return Outcome.READ


def _eval(command: Command, walk: Walk) -> Outcome:
    words = command.words
    if any(word.kind is WordKind.UNKNOWN for word in words[1:]):
        command.problems.append("eval of text that is only known at run time")
    else:
        arguments = words[1:]
        if arguments and arguments[0].value == "--":
            arguments = arguments[1:]  # eval takes "--" as the end of its options
        text = " ".join(word.value for word in arguments)
        walk.run_text(text, "eval", command.depth + 1)
    return Outcome.TRANSPARENT


ASSIGNING_BUILTINS = frozenset(
    {"printf", "read", "mapfile", "readarray", "declare", "typeset", "export", "local"}
    | {"readonly", "getopts", "unset", "wait"}
)


_ASSIGNED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[.*\])?", re.DOTALL)


# bash's builtins read options with internal_getopt: letters grouped (-rs), a letter that
# takes a value takes the rest of its word or the next word (-vNAME, -v NAME, -aNAME).
# Per builtin: the letters that take a value, and those whose value is a variable it
# assigns (printf -v, read -a, wait -p); mapfile's -C value is a command it runs.
_NAME_BUILTIN_OPTIONS = {
    "printf": ("v", "v"),
    "read": ("adinNptu", "a"),
    "mapfile": ("dnOsuCc", ""),
    "readarray": ("dnOsuCc", ""),
    "wait": ("p", "p"),
    "unset": ("", ""),
    "getopts": ("", ""),
}


def _builtin_options(words: Sequence[Word], valued: str) -> tuple[list[tuple[str, Word]], int]:
    """(letter, value) for each option of a bash builtin that takes one, and the index of
    the first operand."""
    values: list[tuple[str, Word]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word.kind is WordKind.UNKNOWN or not word.value.startswith("-") or word.value == "-":
            break
        index += 1
        if word.value == "--":
            break
        letters = word.value[1:]
        for position, letter in enumerate(letters):
            if letter in valued:
                attached = letters[position + 1 :]
                if attached:
                    values.append((letter, Word(attached, word.kind)))
                elif index < len(words):
                    values.append((letter, words[index]))
                    index += 1
                break
    return values, index


def _assigning(command: Command, walk: Walk) -> Outcome:
    callbacks: list[Word] = []
    _assigning_builtin(command.words, command.name, command.problems, callbacks)
    for callback in callbacks:
        # mapfile -C evaluates its callback like eval: a deny inside still wins.
        walk.command_string(callback, f"{command.name} -C", command.depth, command.problems)
    return Outcome.READ


def _assigning_builtin(
    words: list[Word], name: str, problems: list[str], callbacks: list[Word]
) -> None:
    """printf -v, read, mapfile, declare … assign variables without an '=' prefix. A
    name with a subscript (``printf -v 'a[$(id)]'``, ``read 'a[y]'``) has it evaluated
    as arithmetic, which runs command substitutions: only integer subscripts pass."""
    targets: list[Word] = []
    rest = words[1:]
    exported = False
    if name in _NAME_BUILTIN_OPTIONS:
        valued, naming = _NAME_BUILTIN_OPTIONS[name]
        values, first = _builtin_options(rest, valued)
        targets = [given for letter, given in values if letter in naming]
        if name not in {"printf", "wait"}:
            targets += rest[first:]  # read NAME…, mapfile ARRAY, unset NAME…
        if name == "getopts":
            targets = rest[first + 1 : first + 2]  # getopts OPTSTRING NAME [ARGS]
        for letter, given in values:
            if letter == "C":
                problems.append(f"{name} -C runs {given.display} as a command")
                callbacks.append(given)
    else:
        options_given = [w.value for w in rest if w.value.startswith(("-", "+"))]
        exported = name == "export" or any(v.startswith("-") and "x" in v for v in options_given)
        if any(v.startswith("-") and "n" in v for v in options_given):
            problems.append(f"{name} -n creates a name reference")
        if name != "export" and any("i" in v[1:] for v in options_given):
            problems.append(f"{name} -i makes assignments evaluate arithmetic; not judged")
        for w in rest:
            if w.value.startswith(("-", "+")):
                continue
            assigned = "=" in w.value
            if (
                assigned
                and not re.match(r"[^=]*=\(", w.value)
                and (
                    w.kind is not WordKind.LITERAL or re.search(r"[$`(]", w.value.split("=", 1)[1])
                )
            ):
                # Its value is only known when bash expands it: one that turns out to be
                # "(…)" is a compound assignment, re-expanded as below (bash re-parses it
                # for -a/-A and for a variable that is already an array).
                problems.append(
                    f"{name} assigns {w.display}, whose value may turn out to be a compound "
                    "assignment bash expands again; not judged"
                )
            if re.match(r"[^=]*=\(", w.value):
                # bash re-expands a compound assignment given to a declaration builtin as a
                # word, quoted or not: declare -a 'x=($(id))' runs id (bash(1) declare).
                problems.append(
                    f"{name} re-expands the compound assignment {w.display} (command "
                    "substitutions in it run); not judged"
                )
            # NAME=$VALUE: the value is unknown, the name before "=" is not.
            written = w.value.split("=", 1)[0].rstrip("+")
            plain = _ASSIGNED_NAME.fullmatch(written) and not re.search(r"[$`'\"\\]", written)
            targets.append(Word(written, WordKind.LITERAL if plain else w.kind))
    for target in targets:
        if target.kind is WordKind.UNKNOWN:
            problems.append(f"{name} assigns a variable named at run time ({target.display})")
            continue
        value = target.value
        if value == "PATH" or dangerous_variable(value):
            problems.append(f"{name} assigns {value}, which changes what runs")
        elif exported and value.split("[", 1)[0] not in HARMLESS_ENVIRONMENT:
            problems.append(
                f"{name} exports {value}, which is not an environment variable the engine "
                "knows to be harmless"
            )
        subscript = re.fullmatch(r"[^\[]*\[(.*)\]", value, re.DOTALL)
        if "[" in value and (subscript is None or not integer_literal(subscript.group(1))):
            problems.append(f"{name}: the subscript in {target.display} is evaluated as arithmetic")


HOOKS: dict[str, Hook] = {
    **dict.fromkeys(ALWAYS_ASK, _asked),
    "source": _source,
    ".": _source,
    "trap": _trap,
    "exec": _exec,
    "eval": _eval,
    **dict.fromkeys(ASSIGNING_BUILTINS, _assigning),
}

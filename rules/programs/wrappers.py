"""Wrappers stripped before matching (``timeout 5 nice curl x`` is ``curl x`` too): what each
wrapper's options are and which command it runs."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rules.environment import ASSIGNMENT_WORD, HARMLESS_ENVIRONMENT
from rules.model import FileAction
from rules.programs import git, npm, python
from rules.programs.base import Table, parse
from rules.words import (
    PIP_NAME,
    PYTHON_NAME,
    Options,
    Word,
    WordKind,
    literal,
    options,
    scan_options,
    unknown,
)


@dataclass(slots=True)
class Unwrapped:
    rest: list[Word] | None  # the wrapped command, or None when nothing is wrapped
    problems: list[str] = field(default_factory=list)
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    files: list[tuple[FileAction, Word]] = field(default_factory=list)
    chdir: Word | None = None
    code: list[Word] = field(default_factory=list)  # files the wrapper runs as code
    final: bool = False  # the rest is the same program again (hoisted): do not unwrap it


Unwrap = Callable[[list[Word]], Unwrapped]

# Emptying the environment takes with it what the executor sets to hold the command (git's
# protections in GIT_CONFIG_*, PATH, HOME, the egress proxy): what then runs is not judged.
ENVIRONMENT_EMPTIED = (
    "{what} empties the environment, taking the executor's settings (PATH, HOME, "
    "GIT_CONFIG_*, the proxies) with it; not judged"
)


def _after_options(words: list[Word], spec: Options, name: str, skip: int = 0) -> Unwrapped:
    scan = scan_options(words, 1, spec, name)
    end = scan.end + skip
    return Unwrapped(words[end:] or None, scan.problems)


def _timeout(words: list[Word]) -> Unwrapped:
    spec = options("-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose")
    return _after_options(words, spec, "timeout", skip=1)


def _time(words: list[Word]) -> Unwrapped:
    spec = options("-f --format -o --output", "-p -a -v -q --portability --append --verbose")
    scan = scan_options(words, 1, spec, "time")
    result = Unwrapped(words[scan.end :] or None, scan.problems)
    result.files = [(FileAction.WRITE, value) for value in scan.values("-o", "--output")]
    return result


def _nice(words: list[Word]) -> Unwrapped:
    index = 1
    if index < len(words) and re.fullmatch(r"-\d+", words[index].value):
        index += 1  # the historic form "nice -5 cmd"
    spec = options("-n --adjustment")
    scan = scan_options(words, index, spec, "nice")
    return Unwrapped(words[scan.end :] or None, scan.problems)


def _stdbuf(words: list[Word]) -> Unwrapped:
    return _after_options(words, options("-i -o -e --input --output --error"), "stdbuf")


def _plain(name: str) -> Unwrap:
    def unwrap(words: list[Word]) -> Unwrapped:
        return _after_options(words, options(), name)

    return unwrap


def _command(words: list[Word]) -> Unwrapped:
    scan = scan_options(words, 1, options("", "-p -v -V"), "command")
    if scan.has("-v", "-V"):
        return Unwrapped(None, scan.problems)  # "command -v x" looks x up, runs nothing
    return Unwrapped(words[scan.end :] or None, scan.problems)


def _exec(words: list[Word]) -> Unwrapped:
    scan = scan_options(words, 1, options("-a", "-c -l"), "exec")
    result = Unwrapped(words[scan.end :] or None, scan.problems)
    if scan.has("-a"):
        # bash(1) exec: "-a name … passes name as the zeroth argument": python, bash, dash,
        # busybox and git choose what they do by it (git-upload-pack, sh's POSIX mode…).
        result.problems.append("exec -a gives the program another name (argv[0]); not judged")
    if scan.has("-c"):
        result.problems.append(ENVIRONMENT_EMPTIED.format(what="exec -c"))
    if scan.has("-l"):
        result.problems.append("exec -l makes the program a login shell (it reads ~/.profile)")
    return result


def _env(words: list[Word]) -> Unwrapped:
    spec = options(
        "-u --unset -C --chdir -S --split-string",
        "-i --ignore-environment -0 --null -v --debug",
    )
    index = 1
    while index < len(words) and words[index].value == "-":
        index += 1  # "env -" is "env -i"
    scan = scan_options(words, index, spec, "env")
    result = Unwrapped(None, scan.problems)
    if scan.has("-S", "--split-string"):
        result.problems.append("env -S splits a string into a command line; not judged")
    if index > 1 or scan.has("-i", "--ignore-environment"):
        result.problems.append(ENVIRONMENT_EMPTIED.format(what="env -i"))
    for name in scan.values("-u", "--unset"):
        if name.kind is not WordKind.LITERAL or name.value not in HARMLESS_ENVIRONMENT:
            result.problems.append(
                f"env -u removes {name.display} from the environment, which may be one the "
                "executor sets to hold the command (PATH, HOME, GIT_CONFIG_*, the proxies)"
            )
    chdir = scan.values("-C", "--chdir")
    result.chdir = chdir[-1] if chdir else None
    index = scan.end
    while index < len(words):
        word = words[index]
        match = ASSIGNMENT_WORD.match(word.value)
        if not match:
            break
        value = word.value[match.end() :]
        result.assignments.append(
            (match.group(1), unknown(value) if word.kind is WordKind.UNKNOWN else literal(value))
        )
        index += 1
    result.rest = words[index:] or None
    return result


_XARGS = options(
    "-a --arg-file -d --delimiter -E --eof -I --replace -L --max-lines -n --max-args "
    "-P --max-procs -s --max-chars --process-slot-var",
    "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit "
    "--show-limits",
)


# -e[EOF], -i[R], -l[N] and their long forms --eof[=EOF], --replace[=R], --max-lines[=N]
# take an optional value, only ever attached (findutils' xargs.c: optional_argument): in
# "xargs --replace rm x" rm is the command, not the replacement string.
_XARGS_OPTIONAL = re.compile(r"-([eil])(.*)|--(eof|replace|max-lines)(?:=(.*))?", re.DOTALL)
_XARGS_LONG = {"eof": "e", "replace": "i", "max-lines": "l"}


def _xargs(words: list[Word]) -> Unwrapped:
    # Rewrite the options with an optional value to the forms that always take one.
    normalised: list[Word] = []
    replace_with: str | None = None
    for index, word in enumerate(words):
        value = word.value
        optional = _XARGS_OPTIONAL.fullmatch(value) if index else None
        if optional and word.kind is WordKind.LITERAL:
            letter = optional.group(1) or _XARGS_LONG[optional.group(3)]
            attached = optional.group(2) if optional.group(1) else optional.group(4)
            if letter == "i":
                replace_with = attached or "{}"
                continue
            normalised.append(literal({"e": "-E", "l": "-L"}[letter]))
            normalised.append(literal(attached or ("1" if letter == "l" else "")))
            continue
        normalised.append(word)
    scan = scan_options(normalised, 1, _XARGS, "xargs")
    result = Unwrapped(None, scan.problems)
    for variable in scan.values("--process-slot-var"):
        # Each command gets VARIABLE=<slot number> in its environment.
        result.assignments.append((variable.value, literal("0")))
    result.files = [(FileAction.READ, value) for value in scan.values("-a", "--arg-file")]
    replacements = scan.values("-I", "--replace")
    if replacements:
        replace_with = replacements[-1].value
    command = normalised[scan.end :] or [literal("echo")]
    input_word = unknown("<input from xargs>")
    if replace_with:
        # Each input line replaces the marker inside the words that contain it.
        result.rest = [input_word if replace_with in word.value else word for word in command]
    else:
        result.rest = [*command, input_word]  # arguments are appended from the input
    return result


@dataclass(frozen=True, slots=True)
class PythonCall:
    mode: str  # "-c" (inline code), "-m" (module), "script", or "stdin"
    target: Word | None  # the code, module or script
    rest: int  # index of the first argument passed on to the program
    flags: frozenset[str]


def python_call(words: Sequence[Word]) -> PythonCall:
    """Python's own option parsing: ``-c``/``-m`` end it (``-Bc code``, ``-m pip``),
    ``-W``/``-X`` take a value, the first other word is the script."""
    flags: set[str] = set()
    index = 1
    while index < len(words):
        value = words[index].value
        if words[index].kind is WordKind.UNKNOWN or not value.startswith("-") or value == "-":
            break
        index += 1
        if value == "--":
            break
        if value.startswith("--"):
            index += value == "--check-hash-based-pycs"
            flags.add(value)
            continue
        for position, letter in enumerate(value[1:], start=1):
            if letter in "cm":
                attached = value[position + 1 :]
                target = literal(attached) if attached else None
                if target is None and index < len(words):
                    target, index = words[index], index + 1
                return PythonCall(f"-{letter}", target, index, frozenset(flags))
            if letter in "WX":
                index += not value[position + 1 :]  # the value is the next word
                break
            flags.add(f"-{letter}")
    if index >= len(words) or words[index].value == "-":
        return PythonCall("stdin", None, index + 1, frozenset(flags))
    return PythonCall("script", words[index], index + 1, frozenset(flags))


def python_module(words: list[Word]) -> Unwrapped:
    """``python -m pip …`` is pip; any other python invocation is not a wrapper."""
    call = python_call(words)
    if call.mode == "-m" and call.target is not None and call.target.value == "pip":
        # Unless isolated (-I, -P), the working directory comes first on sys.path: a pip
        # module there would run instead of pip.
        shadow = [] if call.flags & {"-I", "-P"} else [literal(".")]
        return Unwrapped([literal("pip"), *words[call.rest :]], code=shadow)
    return Unwrapped(None)


def _uv(words: list[Word]) -> Unwrapped:
    if len(words) > 1 and words[1].value == "pip":
        return Unwrapped(words[1:])
    return Unwrapped(None)


def _busybox(words: list[Word]) -> Unwrapped:
    return Unwrapped(words[1:] or None)


def hoist(spec: Table) -> Unwrap:
    """``git -C repo push`` is judged as ``git push -C repo`` too, so global options placed
    before the subcommand cannot dodge a ``shell(git push:*)`` deny (same for pip, npm).
    The subcommand is found with the program's own table of global options."""

    def unwrap(words: list[Word]) -> Unwrapped:
        first = parse(words[1:], spec, words[0].value, guess=True).first_operand
        if not first:  # no subcommand, or nothing before it
            return Unwrapped(None)
        end = first + 1
        head, subcommand = words[0], words[end]
        return Unwrapped([head, subcommand, *words[1:end], *words[end + 1 :]], final=True)

    return unwrap


PIP = hoist(python.PIP.table)


WRAPPERS: dict[str, Unwrap] = {
    "timeout": _timeout,
    "time": _time,
    "nice": _nice,
    "nohup": _plain("nohup"),
    "stdbuf": _stdbuf,
    "command": _command,
    "builtin": _plain("builtin"),
    "env": _env,
    "exec": _exec,
    "xargs": _xargs,
    "uv": _uv,
    "busybox": _busybox,
    "git": hoist(git.GLOBAL),
    "npm": hoist(npm.GLOBAL),
}


def unwrapper(name: str) -> Unwrap | None:
    """How to find the command a wrapper named ``name`` runs; None: not a wrapper."""
    unwrap = WRAPPERS.get(name)
    if unwrap is None and name.startswith("p"):  # python…, pypy…, pip…
        if PYTHON_NAME.match(name):
            return python_module
        if PIP_NAME.match(name):
            return PIP
    return unwrap

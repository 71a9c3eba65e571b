"""What the installed programs do with each option the engine's tables name: the real
arity of every option, found by running the program in the executor's sandbox with harmless
arguments, written to ``fixtures/option_arity.json`` for test_option_arity.py to hold the
tables to. Run (under two minutes; git's probes are most of it):

    .venv/bin/python -m rules.tests.record_option_arity

Two or three probes per option, each one run of the program on its own, stdin /dev/null,
in a scratch directory of a throwaway context (``git`` in a fresh repository of its own per
subcommand, with one empty commit; the pip and ``python -m`` parsers in one Python process,
see ``HARNESS``):

* bare: ``--name`` (or ``-n``) and nothing after it. An option that needs a value says so
  ("option '--name' requires an argument"); one the program lacks says that.
* attached: ``--name=x`` (``-n}`` for a short option). An option that takes no value refuses
  the word ("doesn't allow an argument"), or, short, reads ``}`` as an option of its own
  ("invalid option -- '}'"); one that takes a value takes it.
* next (git and the shells only): ``--name --cs-arity-next``. An option that takes the next
  word takes it (and says something about it: "malformed object name --cs-arity-next");
  one that does not leaves it to be refused as an unknown option. Only git (an option whose
  value may be left off at the end, ``git branch --contains``) and the shells (``bash -o``
  with nothing after it lists the options) have options that take the next word without
  needing one; getopt, optparse, curl and Python's own parser need a value they may take
  from the next word, so the bare probe says all.

When the attached probe did exactly what the bare one did, a control probe
(``--name --cs-arity-next``) tells a value taken and ignored from a program that stopped at
the option and never read the rest (help and version options; ``id -Z`` without SELinux).

Nothing here runs a string from a corpus: the arguments are the options' own names, ``x``,
``}``, ``--cs-arity-next`` and, for find's primaries, values of this module's own
(``FIND_VALUES``). Nothing connects anywhere (the sandbox has no network; no probe names a
host) or writes outside the throwaway context.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cs_agent import Executor
from cs_agent.client import Verdict
from cs_agent.sandbox import SYSTEM_PATH
from rules.programs import REGISTRY, builtins, find, python
from rules.programs.base import Arity, Program, Table

FIXTURE = Path(__file__).with_name("fixtures") / "option_arity.json"
NEXT = "--cs-arity-next"
CHAR = "}"
VALUE = "x"

# --- what the tables say ----------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One option name as a table has it: ``arity`` is the table's ("none", "required",
    "optional"; find's primaries "count:N", the words after them)."""

    program: str  # the name the engine judges: "tail", "git", "python3"
    sub: str  # the subcommand ("" for none): "status", "install", "-m venv"
    option: str  # "--lines", "-n", "-name"
    arity: str
    source: str  # where the claim is written

    @property
    def key(self) -> str:
        return " ".join(part for part in (self.program, self.sub, self.option) if part)


# Programs the engine models whose tables make no claim about options (every word is an
# operand, or the program runs the project's own code), and why.
NO_OPTION_TABLES = {
    "echo": "bash's echo has no options by name: leading -n/-e/-E words (the table reads none)",
    "printf": "its words are a format and data (printf -v: builtins._NAME_BUILTIN_OPTIONS)",
    "true": "bash ignores its arguments",
    "false": "bash ignores its arguments",
    ":": "bash ignores its arguments",
    "test": "test's words are an expression (test_problems reads them)",
    "[": "test's words are an expression (test_problems reads them)",
    "set": "its own reader (builtins._set): -o NAME, letters, positional parameters",
    "getopts": "no options; its operands are an option string and a name",
    "shift": "no options",
    "exit": "no options",
    "return": "no options",
    "break": "no options",
    "continue": "no options",
    "wait": "no options in its table (wait -p: builtins._NAME_BUILTIN_OPTIONS)",
    "pytest": "runs the project's code, never allowed: its options are not read",
    "py.test": "runs the project's code, never allowed: its options are not read",
    "make": "runs the project's code, never allowed: its options are not read",
    "gmake": "runs the project's code, never allowed: its options are not read",
    "find": "no getopt options: its leading options and primaries are claimed below",
    "python": "python_parts reads it with python.PYTHON_TABLE, claimed below",
    "python3": "python_parts reads it with python.PYTHON_TABLE, claimed below",
    "pypy": "python_parts reads it with python.PYTHON_TABLE, claimed below",
    "pypy3": "python_parts reads it with python.PYTHON_TABLE, claimed below",
}
# find's expression operators: structure, not options with values.
FIND_OPERATORS = frozenset({"!", "(", ")", ",", "-not", "-a", "-and", "-o", "-or"})
# Names a table lists that its parser can never match (a short name is one letter): they
# cannot be probed either.
_SHORT_NAME = re.compile(r"-[^-]$")
_LONG_NAME = re.compile(r"--[^=\s]+$")


def _arity(arity: Arity) -> str:
    return arity.value


def _table_claims(program: str, sub: str, spec: Table, source: str) -> list[Claim]:
    """A short option that takes a value in a table whose clusters give each value the
    next word (tree, the shells) claims "next-split"."""
    return [
        Claim(
            program,
            sub,
            name,
            "next-split"
            if spec.clusters == "next"
            and option.arity is Arity.REQUIRED
            and _SHORT_NAME.match(name)
            else _arity(option.arity),
            source,
        )
        for option in spec.options
        for name in option.names
    ]


def claims() -> list[Claim]:
    """Every option name every table of the engine has, for every name of its program."""
    found: list[Claim] = []
    for name, program in REGISTRY.items():
        if program.table.parse_options:
            found += _table_claims(name, "", program.table, _source(program))
        for sub, subprogram in (program.subcommands or {}).items():
            source = f"{name} {subprogram.names[0]}'s table"
            found += _table_claims(name, sub, subprogram.table, source)
    for name, (letters, _) in builtins._NAME_BUILTIN_OPTIONS.items():
        for letter in letters:
            found.append(
                Claim(name, "", f"-{letter}", "required", "builtins._NAME_BUILTIN_OPTIONS")
            )
    for name in python.PYTHON.names:
        found += _table_claims(name, "", python.PYTHON_TABLE, "python.PYTHON_TABLE")
        for module, program in python.MODULES.items():
            found += _table_claims(name, f"-m {module}", program.table, "python.MODULES")
    found += [Claim("find", "", name, "none", "find.LEADING") for name in sorted(find.LEADING)]
    found += [Claim("find", "", "-D", "next", "find.LEADING_VALUED")]
    found += [Claim("find", "", "-O", "attached", "find.starting_points (-O…)")]
    primaries = {**find.TESTS, **find.WRITES, **find.FORMAT}
    for primary, count in primaries.items():
        if primary not in FIND_OPERATORS:
            found.append(Claim("find", "", primary, f"count:{count}", "find.TESTS/WRITES/FORMAT"))
    # -newerXY: one value (the reference) after any XY.
    found.append(Claim("find", "", "-newermt", "count:1", "find._find (-newerXY)"))
    return found


def _source(program: Program) -> str:
    return f"{program.names[0]}'s table"


def probeable(claim: Claim) -> bool:
    """Can the option's name be given to the program at all? (``-vv`` in a table is never
    matched by the engine's parser, which reads short options a letter at a time.)"""
    if claim.program == "find":
        return True
    return bool(_SHORT_NAME.match(claim.option) or _LONG_NAME.match(claim.option))


# --- how each program says it ----------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """How a parser reports what it did with an option. Each pattern is a regular
    expression, searched line by line (``re.M``), in which ``{opt}`` is the option as given
    (``--lines``, ``-n``), ``{name}`` the same without its dashes, ``{positive}`` without
    any "no-" either, ``{prog}`` the program's name; all escaped."""

    name: str
    requires: tuple[str, ...]  # the option needs a value and got none
    unknown: tuple[str, ...]  # the program has no such option
    refused: tuple[str, ...]  # the attached word is refused as a whole
    separate: tuple[str, ...] = ()  # "-n}": "}" was read as an option of its own
    next_unknown: tuple[str, ...] = ()  # NEXT was refused as an option: not taken
    named: tuple[str, ...] = ()  # a message naming an option: group 1 (abbreviations)
    probes_next: bool = False
    # Options it does not know are passed on as arguments and printed (git rev-parse): an
    # attached word (or NEXT) printed back was not taken as a value.
    echoes: bool = False

    def search(self, patterns: Iterable[str], text: str, option: str, prog: str) -> bool:
        fields = {
            "opt": re.escape(option),
            "name": re.escape(option.lstrip("-")),
            "positive": re.escape(_positive(option)),
            "prog": re.escape(prog),
        }
        return any(re.search(p.format(**fields), text, re.M) for p in patterns)


GETOPT = Dialect(
    "getopt",
    requires=(r"option '{opt}' requires an argument", r"option requires an argument -- '{name}'"),
    unknown=(
        r"unrecognized option '{opt}'",
        r"option '{opt}(?:=[^']*)?' is ambiguous",
        r"invalid option -- '{name}'",
    ),
    refused=(r"option '{opt}' doesn't allow an argument", r"unrecognized option '{opt}="),
    separate=(r"invalid option -- '\}}'",),
    next_unknown=(r"unrecognized option '--cs-arity-next'",),
    named=(r"option '(--[^'=]+)' (?:requires an argument|doesn't allow an argument)",),
)
_GIT_NEXT = (
    r"unknown option [`'](?:--)?cs-arity-next'",
    r"unrecognized argument: --cs-arity-next",
    r"invalid option: --cs-arity-next",
)
GIT = Dialect(
    "git parse-options",
    requires=(
        r"option [`']{name}' requires a value",
        r"switch [`']{name}' requires a value",
        r"Option '{opt}' requires a value",
        r"^error: {opt} requires an argument",
    ),
    unknown=(
        r"unknown option [`'](?:--)?{name}'",
        r"unknown switch [`']{name}'",
        r"unrecognized argument: {opt}$",
        r"invalid option: {opt}$",
        r"ambiguous option: {name} ",
    ),
    refused=(
        r"option [`'](?:no-)*{positive}' takes no value",  # --verify: "no-no-verify"
        r"unknown option [`'](?:--)?{name}=",
        r"unknown switch [`']{name}'",
        r"unrecognized argument: {opt}[=}}]",
        r"invalid option: {opt}[=}}]",
        r"'{name}\}}': not a non-negative integer",  # -1}: read as -NUMBER, and refused
    ),
    separate=(r"unknown (?:switch|option) [`']-?\}}'",),
    next_unknown=_GIT_NEXT,
    named=(r"option [`']([\w-]+)' (?:requires a value|takes no value)",),
    probes_next=True,
)
GIT_GLOBAL = Dialect(
    "git (options before the subcommand)",
    requires=(r"no \w+(?: \w+)? given for '?{opt}'?", r"^{opt} expects"),
    unknown=(r"unknown option: {opt}$",),
    refused=(r"unknown option: {opt}[=}}]",),
    next_unknown=(r"unknown option: --cs-arity-next", *_GIT_NEXT),
    probes_next=True,
)
REV_PARSE = Dialect(
    "git rev-parse",
    requires=(r"{opt} requires an argument",),
    unknown=(),
    refused=(),
    probes_next=True,
    echoes=True,
)
CURL = Dialect(
    "curl",
    requires=(r"option {opt}: requires parameter",),
    unknown=(r"option {opt}: is unknown",),
    refused=(r"option {opt}=x: is unknown",),
    separate=(r"option {opt}\}}: is unknown",),
    next_unknown=(r"option --cs-arity-next: is unknown",),
)
PYTHON = Dialect(
    "python",
    requires=(r"Argument expected for the {opt} option",),
    unknown=(r"unknown option {opt}$", r"Unknown option: {opt}$"),
    refused=(r"unknown option {opt}=",),
    separate=(r"Unknown option: -\}}$",),
    next_unknown=(r"unknown option --cs-arity-next",),
)
MAWK = Dialect(
    "mawk",
    requires=(r"option {opt} lacks argument",),
    unknown=(r"not an option: {opt}$",),
    refused=(r"not an option: {opt}[=}}]",),
    next_unknown=(r"not an option: --cs-arity-next",),
)
BASH = Dialect(
    "bash (invocation)",
    requires=(r"bash: (?:{opt}|{name}): option requires an argument",),
    unknown=(r"bash: {opt}: invalid option",),
    refused=(r"bash: {opt}=x: invalid option",),
    separate=(r"bash: -\}}: invalid option",),
    next_unknown=(r"bash: --cs-arity-next: invalid option$",),
    probes_next=True,
)
DASH = Dialect(  # dash, and sh scripts that read their options with getopts (which)
    "dash",
    requires=(r"{opt} requires an argument", r"No arg for {opt} option"),
    unknown=(r"Illegal option (?:{opt}|--)$",),
    refused=(r"Illegal option --$",),
    separate=(r"Illegal option -\}}$",),
    next_unknown=(r"Illegal option --$",),
    probes_next=True,
)
BUILTIN = Dialect(
    "bash builtin",
    requires=(r"{prog}: {opt}: option requires an argument",),
    unknown=(r"{prog}: {opt}: invalid (?:option|number)",),
    refused=(r"{prog}: {opt}\}}: invalid (?:option|number)",),
    separate=(r"{prog}: -\}}: invalid (?:option|number)",),
    next_unknown=(r"{prog}: --(?:cs-arity-next)?: invalid (?:option|number)",),
)
OPTPARSE = Dialect(
    "optparse (pip)",
    requires=(r"{opt} option requires 1 argument",),
    unknown=(r"no such option: {opt}$", r"ambiguous option: {opt} "),
    refused=(r"{opt} option does not take a value",),
    separate=(r"no such option: -\}}$",),
    next_unknown=(r"no such option: --cs-arity-next",),
)
ARGPARSE = Dialect(
    "argparse (python -m)",
    requires=(r"argument (?:\S+/)?{opt}(?:/\S+)?: expected one argument",),
    unknown=(r"unrecognized arguments: {opt}$",),
    refused=(
        r"argument (?:\S+/)?{opt}(?:/\S+)?: ignored explicit argument",
        r"unrecognized arguments: {opt}[=}}]",
    ),
    next_unknown=(r"unrecognized arguments: --cs-arity-next",),
)
# The options that print help or a version and exit as soon as they are read: what follows
# them in their word is never read (curl -h} prints the help).
HELP = frozenset({"-h", "--help", "-?", "-V", "--version", "--help-all"})

BUILTIN_NAMES = frozenset(
    {"declare", "typeset", "local", "export", "readonly", "unset", "read", "mapfile"}
    | {"readarray", "umask", "type", "cd", "pushd", "popd", "pwd", "printf", "wait"}
)


# --- where and how each program is run --------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A program (and subcommand) as it is probed: ``run`` is how (``shell``: a program on
    PATH; ``builtin``: bash's builtin; ``pip``/``module``: the harness), ``program`` is
    the name run (an alias's canonical name), ``place`` its scratch directory."""

    program: str
    sub: str
    dialect: Dialect
    run: str
    place: str


def installed(name: str) -> str | None:
    """The file the sandbox runs for ``name`` (its PATH is the image's system directories,
    the same files as here), None when there is none."""
    found = shutil.which(name, path=SYSTEM_PATH)
    return os.path.realpath(found) if found else None


def targets(
    names: Iterable[tuple[str, str]],
) -> tuple[dict[tuple[str, str], Target], dict[str, str], list[str]]:
    """For each (program, sub) claimed: how it is probed; the aliases (a name that runs
    the same file as one probed: ``nawk`` → ``awk``); the programs not installed."""
    result: dict[tuple[str, str], Target] = {}
    # egrep and fgrep are scripts that run grep -E / grep -F with the same table.
    aliases: dict[str, str] = {"pip3": "pip", "egrep": "grep", "fgrep": "grep"}
    missing: list[str] = []
    by_file: dict[str, str] = {}
    for program, sub in names:
        if program in aliases or (program, sub) in result:
            continue
        if program in BUILTIN_NAMES:
            result[program, sub] = Target(program, sub, BUILTIN, "builtin", "builtins")
            continue
        if program in {"pip", "pip3"}:
            result[program, sub] = Target("pip", sub, OPTPARSE, "pip", "pip")
            continue
        path = installed(program)
        if path is None:
            if program not in missing:
                missing.append(program)
            continue
        canonical = by_file.setdefault(path, program)
        if canonical != program:
            aliases[program] = canonical
            continue
        base = os.path.basename(path)
        if program == "git":
            dialect = REV_PARSE if sub == "rev-parse" else GIT if sub else GIT_GLOBAL
            place = f"git/{sub}" if sub else "git/global"
            result[program, sub] = Target(program, sub, dialect, "shell", place)
        elif sub.startswith("-m "):
            result[program, sub] = Target(program, sub, ARGPARSE, "module", "python")
        else:
            dialect = {
                "curl": CURL,
                "mawk": MAWK,
                "bash": BASH,
                "dash": DASH,
                "which": DASH,
            }.get(base.split(".")[0], PYTHON if base.startswith("python") else GETOPT)
            result[program, sub] = Target(program, sub, dialect, "shell", program)
    return result, aliases, missing


# --- the probes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    key: str  # the claim's key, with its program's canonical name
    option: str
    kind: str  # bare | attached | next | control | count0 | count1 | count2
    target: Target
    arguments: tuple[str, ...]  # after the program (and subcommand)


def probes_for(claim: Claim, target: Target) -> list[Probe]:
    option = claim.option
    key = Claim(target.program, claim.sub, option, claim.arity, claim.source).key
    if claim.program == "find":
        if claim.arity.startswith("count:"):
            # find P [V…] -cs-arity-next: the words P takes are those before find reads
            # the sentinel as a primary ("unknown predicate"). Values valid for P, so it
            # does not stop at a bad one first.
            values = FIND_VALUES.get(option, (VALUE, VALUE))
            return [
                Probe(key, option, f"count{count}", target, (option, *values[:count], FIND_NEXT))
                for count in range(3)
            ]
        return [
            Probe(key, option, "bare", target, (option,)),
            Probe(key, option, "attached", target, (option + "3",)),
            Probe(key, option, "next", target, (option, FIND_NEXT)),
        ]
    attached = f"{option}={VALUE}" if option.startswith("--") else option + CHAR
    found = [
        Probe(key, option, "bare", target, (option,)),
        Probe(key, option, "attached", target, (attached,)),
    ]
    if target.dialect.probes_next:
        found.append(Probe(key, option, "next", target, (option, NEXT)))
    return found


FIND_NEXT = "-cs-arity-next"
_NUMBER = ("1", "1")
FIND_VALUES: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        [
            "-amin",
            "-atime",
            "-cmin",
            "-ctime",
            "-mmin",
            "-mtime",
            "-used",
            "-links",
            "-inum",
            "-uid",
            "-gid",
            "-maxdepth",
            "-mindepth",
            "-size",
        ],
        _NUMBER,
    ),
    "-type": ("f", "f"),
    "-xtype": ("f", "f"),
    "-perm": ("644", "644"),
    "-user": ("root", "root"),
    "-group": ("root", "root"),
    "-regextype": ("posix-basic", "posix-basic"),
    "-fstype": ("ext4", "ext4"),
    **dict.fromkeys(["-newer", "-anewer", "-cnewer", "-samefile"], (".", ".")),
    "-newermt": ("2020-01-01", "2020-01-01"),
    "-files0-from": ("/dev/null", "/dev/null"),
    **dict.fromkeys(["-fprint", "-fprint0", "-fls"], ("out", "out")),
    "-fprintf": ("out", "%p"),
    "-printf": ("%p", "%p"),
}


# --- running them in the sandbox --------------------------------------------------------------

# pip's and the python -m modules' own parsers, in one Python process: pip's optparse
# parser for each subcommand (what ``pip SUB ARGS`` parses with before it runs anything),
# and json.tool's and venv's argparse parsers (captured as their main() builds them, then
# given each probe after a harmless positional argument). Each probe's messages go to
# o/INDEX, its exit status to o/status-harness, as the shell runner's do to o/status.
HARNESS = r"""
import argparse, contextlib, io, json, sys

probes = json.load(open(sys.argv[1]))
status = open("o/status-harness", "w")


class Captured(Exception):
    pass


def parser_of(main, *args):
    found = []
    original = argparse.ArgumentParser.parse_args

    def grab(self, *_args, **_kwargs):
        found.append(self)
        raise Captured

    argparse.ArgumentParser.parse_args = grab
    try:
        main(*args)
    except Captured:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    return found[0]


def parse(target, args):
    if target == "pip":
        from pip._internal.cli.main_parser import create_main_parser
        create_main_parser().parse_args(args)
    elif target.startswith("pip "):
        from pip._internal.commands import create_command
        create_command(target[4:], isolated=False).parse_args(args)
    elif target == "-m json.tool":
        import json.tool
        parser_of(json.tool.main).parse_args(["/dev/null", *args])
    elif target == "-m venv":
        import venv
        parser_of(venv.main, []).parse_args(["cs-arity-directory", *args])
    else:
        raise ValueError(target)


for probe in probes:
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            parse(probe["target"], probe["args"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:
            print(f"harness: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 99
    with open(f"o/{probe['index']}", "w") as output:
        output.write(err.getvalue())
    with open(f"o/{probe['index']}.out", "w") as output:
        output.write(out.getvalue())
    status.write(f"{probe['index']} {code}\n")
"""


def _shell_line(index: int, probe: Probe, seconds: float) -> str:
    target = probe.target
    words = [target.program, *target.sub.split(), *probe.arguments]
    if target.run == "builtin":
        command = shlex.join(words)
        if target.program == "local":
            command = f"f() {{ {command}; }}; f"
        command = f"( {command} )"
    else:
        command = f"timeout -k 1 {seconds} {shlex.join(words)}"
    return f'{command} </dev/null >"$O/{index}.out" 2>"$O/{index}"; echo {index} $? >>"$O/status"'


PARALLEL = 4
_GIT_REPOSITORY = (
    "git init -q && git -c user.name=cs -c user.email=cs@example.invalid "
    "commit -q --allow-empty -m probes"
)


@dataclass
class Outcome:
    text: str  # what it printed to its standard error
    status: int
    printed: str = ""  # a digest of what it printed to its standard output
    output: str = ""  # the start of it


@dataclass
class Sandbox:
    """A throwaway context under /var/tmp (the executor refuses one in /tmp) and the
    executor that runs in it, with the widest grant a command gets: anywhere in its
    context, no network."""

    root: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="cs-arity-", dir="/var/tmp"))
    )

    def __post_init__(self) -> None:
        self.context = self.root / "ctx-arity"
        self.context.mkdir()
        self.executor = Executor(None, workspace_root=str(self.root), environ={"LANG": "C.UTF-8"})  # type: ignore[arg-type]

    def run(self, command: str, seconds: int = 900) -> Any:
        verdict = Verdict(
            True,
            "allow",
            operation={"kind": "shell", "command": command},
            execution={
                "isolation": "namespaces",
                "workspace": str(self.context),
                "memoryLimitMb": 512,
                "timeLimitSeconds": seconds,
                "network": "pod",
                "effects": {
                    "read": [f"{self.context}/**"],
                    "write": [f"{self.context}/**"],
                    "network": [],
                },
            },
        )
        result = self.executor.execute(verdict, context_id=self.context.name)
        if result.outcome != "exited":
            raise RuntimeError(f"the probes did not run: {result.outcome} {result.message}")
        return result

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def run_probes(probes: Sequence[Probe], sandbox: Sandbox | None = None) -> list[Outcome]:
    """Run every probe in the sandbox (two runs: the shell's, the harness's) and read what
    each printed to its standard error and its exit status."""
    own = sandbox is None
    box = sandbox or Sandbox()
    try:
        context = box.context
        out = context / "o"
        if out.exists():
            shutil.rmtree(out)
        out.mkdir()
        lines = ['cd "$(dirname "$0")" && O="$PWD/o"']
        places: dict[str, list[str]] = {}
        harness = []
        for index, probe in enumerate(probes):
            target = probe.target
            if target.run in {"pip", "module"}:
                where = "pip" if target.run == "pip" else target.sub
                name = f"pip {target.sub}".strip() if target.run == "pip" else where
                harness.append({"index": index, "target": name, "args": list(probe.arguments)})
                continue
            seconds = 5 if target.program == "git" else 1
            places.setdefault(target.place, []).append(_shell_line(index, probe, seconds))
        if harness:
            (context / "probes.json").write_text(json.dumps(harness))
            (context / "harness.py").write_text(HARNESS)
            lines.append("python3 -I harness.py probes.json &")
        # Each place's probes in order, a few places at a time (the sandbox's process
        # limit; two cores), the harness beside them.
        names = []
        for number, (place, commands) in enumerate(places.items()):
            setup = f"mkdir -p {shlex.quote('w/' + place)} && cd {shlex.quote('w/' + place)}"
            if place.startswith("git/"):
                setup += f" && {_GIT_REPOSITORY}"
            body = "\n".join(commands)
            lines.append(f"p{number}() (\n{setup} || exit 0\n{body}\n)")
            names.append(f"p{number}")
        lines.append(
            f"for place in {' '.join(names)}; do\n"
            f'  while [ "$(jobs -rp | wc -l)" -ge {PARALLEL} ]; do wait -n; done\n'
            '  "$place" &\n'
            "done\n"
            "wait"
        )
        (context / "probes.sh").write_text("\n".join(lines) + "\n")
        said = [box.run("bash probes.sh").stderr]
        statuses: dict[int, int] = {}
        written = [out / "status", out / "status-harness"]
        for line in "".join(path.read_text() for path in written if path.exists()).splitlines():
            said_index, said_status = line.split()
            statuses[int(said_index)] = int(said_status)
        lost = [probes[index].key for index in range(len(probes)) if index not in statuses]
        if lost:
            messages = b"".join(said).decode(errors="replace")[-2000:]
            raise RuntimeError(f"{len(lost)} probes did not run, e.g. {lost[:5]}: {messages}")
        outcomes = []
        for index in range(len(probes)):
            path = out / str(index)
            text = path.read_text(errors="replace")[:6000] if path.exists() else ""
            printed = out / f"{index}.out"
            data = printed.read_bytes() if printed.exists() else b""
            digest = hashlib.sha256(data).hexdigest()
            head = data[:4000].decode(errors="replace")
            outcomes.append(Outcome(text, statuses.get(index, -1), digest, head))
        return outcomes
    finally:
        if own:
            box.close()


# --- what the answers mean --------------------------------------------------------------------


def answer(probe: Probe, outcome: Outcome) -> str:
    """What one probe showed: bare → requires | unknown | accepted | abbreviates:NAME;
    attached → accepted | refused | separate | unknown; next (and control) → taken |
    not-taken | unclear; countN (find) → taken | not-taken | unknown."""
    target, text, option = probe.target, outcome.text, probe.option
    if probe.kind.startswith("count") or target.program == "find":
        return _find_answer(probe, outcome)
    if outcome.status in {126, 127} and "not found" in text:
        return "not-installed"
    dialect = target.dialect
    prog = target.program
    search = dialect.search
    if probe.kind in {"next", "control"}:
        if search(dialect.next_unknown, text, option, prog):
            return "not-taken"
        if dialect.echoes:
            return "not-taken" if NEXT in outcome.output else "unclear"
        return "taken" if NEXT.lstrip("-") in text else "unclear"
    named = _named(dialect, text, option)
    if probe.kind == "bare":
        if search(dialect.requires, text, option, prog):
            return "requires"
        if search(dialect.unknown, text, option, prog):
            return "unknown"
        return named or "accepted"
    if search(dialect.refused, text, option, prog):
        return "refused"
    if dialect.echoes and probe.arguments[-1] in outcome.output:
        return "refused"  # passed on as an argument
    if search(dialect.separate, text, option, prog):
        return "separate"
    if search(dialect.unknown, text, option, prog):
        return "unknown"
    return named or "accepted"


def _positive(name: str) -> str:
    name = name.lstrip("-")
    while name.startswith("no-"):
        name = name[3:]
    return name


def _named(dialect: Dialect, text: str, option: str) -> str:
    """Only a long option is resolved by prefix (git names a short one by its long name)."""
    if not option.startswith("--"):
        return ""
    for pattern in dialect.named:
        for match in re.finditer(pattern, text, re.M):
            named = match.group(1)
            # git names an option given as the negation of a "no-" one by its "no-" name.
            if _positive(named) != _positive(option):
                return f"abbreviates:{named}"
    return ""


def _find_answer(probe: Probe, outcome: Outcome) -> str:
    text, option = outcome.text, probe.option
    if re.search(rf"unknown predicate [`'‘]{re.escape(option)}[’']", text):
        return "unknown"
    if re.search(rf"invalid predicate {re.escape(option)}:", text):
        return "unknown"  # -context without SELinux
    if re.search(rf"unknown predicate [`'‘]{FIND_NEXT}[’']", text):
        return "not-taken"
    if probe.kind.startswith("count"):
        return "taken"
    if re.search(rf"Missing argument after the {re.escape(option)} option", text):
        return "requires"
    if re.search(rf"The {re.escape(option)} option must be immediately followed", text):
        return "unknown"  # only attached (-O3)
    if probe.kind == "attached" and re.search(
        rf"unknown predicate [`'‘]{re.escape(option)}3[’']", text
    ):
        return "refused"
    return "taken" if probe.kind == "next" else "accepted"


def real_arity(kind_answers: Mapping[str, str]) -> str:
    """The option's arity as the program showed it:

    none · required (the next word or attached) · optional (only attached, may be left
    off) · attached (only attached, and needed) · next (only the next word; the attached
    form is refused as a whole, so a misreading fails) · next-split (only the next word,
    and the rest of a short option's word is read as more options: ``bash -oxi``) ·
    count:N (find: the words after a primary) · unknown (not an option of the program
    installed here) · abbreviates:NAME (a prefix the program resolves to NAME)."""
    if any(kind.startswith("count") for kind in kind_answers):
        if any(said == "unknown" for said in kind_answers.values()):
            return "unknown"
        counts = [int(kind[5:]) for kind, said in kind_answers.items() if said == "not-taken"]
        return f"count:{min(counts)}" if counts else "unclear"
    bare = kind_answers.get("bare", "")
    attached = kind_answers.get("attached", "")
    taken = kind_answers.get("next", "")
    if bare == "not-installed":
        return "not-installed"
    if bare.startswith("abbreviates:"):
        return bare
    if bare == "unknown":
        return "attached" if attached == "accepted" else "unknown"
    if attached.startswith("abbreviates:"):
        return attached
    if attached == "unclear" and bare != "requires":
        return "unclear"
    if taken == "not-taken" and bare == "requires":
        # It needs a value yet leaves the next word: the need is a later step's (git pull
        # passes --jobs on to fetch, which wants the number pull did not take).
        return "attached" if attached == "accepted" else "none"
    if bare == "requires" or taken == "taken":
        if attached == "accepted":
            return "required"
        return "next-split" if attached in {"separate", "ignored"} else "next"
    return "optional" if attached == "accepted" else "none"


# The real arities each table arity reads correctly.
FITS = {
    "none": frozenset({"none"}),
    "required": frozenset({"required", "next"}),
    "next-split": frozenset({"next-split"}),
    "optional": frozenset({"optional", "attached"}),
    # find's own claims
    "next": frozenset({"next"}),
    "attached": frozenset({"attached"}),
}
UNVERIFIABLE = ("unknown", "not-installed", "abbreviates:", "unclear")


def fits(claimed: str, real: str) -> bool:
    if claimed.startswith("count:"):
        return claimed == real
    return real in FITS[claimed]


def evidence(probe: Probe, outcome: Outcome) -> str:
    """The exit status and the line of a probe's messages that says what it did with the
    option (the first that any of its dialect's patterns finds), else its first line."""
    dialect, text = probe.target.dialect, outcome.text
    patterns = [
        *dialect.requires,
        *dialect.unknown,
        *dialect.refused,
        *dialect.separate,
        *dialect.next_unknown,
    ]
    # Bash names the script and line of a builtin's message: left off, so the recording
    # does not change with the order of the probes.
    lines = [
        re.sub(r"^\S*probes\.sh: line \d+: ", "", line.strip())
        for line in text.splitlines()
        if line.strip()
    ]
    chosen = next(
        (
            line
            for line in lines
            if dialect.search(patterns, line, probe.option, probe.target.program)
        ),
        next((line for line in lines if not line.lower().startswith(("usage:", "try "))), ""),
    )
    return f"[{outcome.status}] {chosen[:200]}"


# --- the recording ----------------------------------------------------------------------------

VERSION_COMMANDS = {"mawk": "-W version", "bash": "--version", "dash": None, "which": None}


@dataclass
class Plan:
    claims: list[Claim]
    targets: dict[tuple[str, str], Target]
    aliases: dict[str, str]
    missing: list[str]
    probes: list[Probe]


def plan(selected: Iterable[Claim] | None = None) -> Plan:
    every = claims() if selected is None else list(selected)
    found, aliases, missing = targets((claim.program, claim.sub) for claim in every)
    probes: list[Probe] = []
    seen: set[str] = set()
    for claim in every:
        target = found.get((aliases.get(claim.program, claim.program), claim.sub))
        if target is None or not probeable(claim):
            continue
        for probe in probes_for(claim, target):
            marker = f"{probe.key} {probe.kind}"
            if marker not in seen:
                seen.add(marker)
                probes.append(probe)
    return Plan(every, found, aliases, missing, probes)


_EMPTY = hashlib.sha256(b"").hexdigest()


def same(first: Outcome, second: Outcome) -> bool:
    return (first.status, first.printed, first.text) == (second.status, second.printed, second.text)


def survey(probes: Sequence[Probe], sandbox: Sandbox) -> dict[str, dict[str, Any]]:
    """Run the probes, then a control probe (``OPTION --cs-arity-next``) for each option
    whose attached probe did exactly what its bare one did: was the rest of the word taken
    as a value and ignored, or did the program stop at the option and never read it (help
    and version options; ``id -Z`` without SELinux)? The control says whether it reads on."""
    outcomes = list(run_probes(probes, sandbox))
    found: dict[str, dict[str, tuple[Probe, Outcome]]] = {}
    for probe, outcome in zip(probes, outcomes, strict=True):
        found.setdefault(probe.key, {})[probe.kind] = (probe, outcome)
    controls = []
    for key, kinds in found.items():
        if "next" in kinds or "attached" not in kinds or "bare" not in kinds:
            continue
        attached, bare = kinds["attached"], kinds["bare"][1]
        if answer(*attached) == "accepted" and same(attached[1], bare):
            probe = attached[0]
            controls.append(Probe(key, probe.option, "control", probe.target, (probe.option, NEXT)))
    if controls:
        outcomes += run_probes(controls, sandbox)
    return results([*probes, *controls], outcomes)


def results(probes: Sequence[Probe], outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    by_key: dict[str, dict[str, Any]] = {}
    seen: dict[str, dict[str, Outcome]] = {}
    for probe, outcome in zip(probes, outcomes, strict=True):
        entry = by_key.setdefault(probe.key, {"answers": {}, "evidence": {}})
        entry["answers"][probe.kind] = answer(probe, outcome)
        entry["evidence"][probe.kind] = evidence(probe, outcome)
        entry["dialect"] = probe.target.dialect.name
        seen.setdefault(probe.key, {})[probe.kind] = outcome
    for key, entry in by_key.items():
        answers, outcomes_of = entry["answers"], seen[key]
        option = key.rsplit(" ", 1)[-1]
        reads_on = answers.get("control", answers.get("next")) == "not-taken"
        bare = outcomes_of.get("bare")
        if (
            answers.get("attached") == "accepted"
            and answers.get("bare") == "accepted"
            and not reads_on
        ):
            assert bare is not None
            if option in HELP:
                answers["attached"] = "ignored"  # it printed its help or version and exited
            elif same(outcomes_of["attached"], bare):
                # It stopped at the option and never read the rest of the word: having
                # printed something and succeeded (diff -v, file -v: their versions), it
                # takes no value; otherwise (id -Z without SELinux) there is no answer.
                printed = bare.status == 0 and bare.printed != _EMPTY
                answers["attached"] = "ignored" if printed else "unclear"
        entry["arity"] = real_arity(answers)
    return by_key


def versions(programs: Iterable[str], sandbox: Sandbox) -> dict[str, str]:
    """The first line each program prints for its version (by the file it runs: ``awk``
    is mawk here, which says it with ``-W version``)."""
    lines = ['cd "$(dirname "$0")"']
    names = sorted(set(programs))
    for name in names:
        path = installed(name)
        option = VERSION_COMMANDS.get(os.path.basename(path or name), "--version")
        if option is None:
            lines.append(f"echo {shlex.quote(name)}: no version option")
            continue
        lines.append(
            f"printf '%s: ' {shlex.quote(name)}; "
            f"{{ {shlex.quote(name)} {option} 2>&1 </dev/null || true; }} | grep -m1 . || echo"
        )
    (sandbox.context / "versions.sh").write_text("\n".join(lines) + "\n")
    output = sandbox.run("bash versions.sh", seconds=60).stdout.decode(errors="replace")
    found = {}
    for line in output.splitlines():
        name, _, version = line.partition(": ")
        if name in names:
            found[name] = version.strip()
    return found


def version_programs(found: Mapping[tuple[str, str], Target]) -> list[str]:
    """The programs whose versions the recording depends on (bash for its builtins)."""
    names = {"bash"} | {t.program for t in found.values() if t.run == "shell"}
    names |= {"pip" for t in found.values() if t.run == "pip"}
    names |= {"python3" for t in found.values() if t.run == "module"}
    return sorted(names)


def dump(document: Mapping[str, Any]) -> str:
    """JSON, one option a line (so a re-recording's diff shows what changed)."""
    head = {key: value for key, value in document.items() if key != "options"}
    lines = [json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ",", ' "options": {']
    entries = [
        f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
        for key, value in document["options"].items()
    ]
    lines += [",\n".join(entries), " }", "}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    started = time.monotonic()
    chosen = plan()
    sandbox = Sandbox()
    try:
        recorded = survey(chosen.probes, sandbox)
        found_versions = versions(version_programs(chosen.targets), sandbox)
    finally:
        sandbox.close()
    not_probeable = sorted({c.key for c in chosen.claims if not probeable(c)})
    document = {
        "about": (
            "What the programs installed here do with each option the engine's tables name "
            "(rules/tests/record_option_arity.py; test_option_arity.py holds the tables to "
            "it). 'arity' is the program's: see real_arity."
        ),
        "versions": found_versions,
        "aliases": chosen.aliases,
        "not_installed": sorted(chosen.missing),
        "not_probeable": not_probeable,
        "options": dict(sorted(recorded.items())),
    }
    FIXTURE.write_text(dump(document))
    print(
        f"{len(chosen.probes)} probes of {len(recorded)} options in "
        f"{time.monotonic() - started:.0f} s: {FIXTURE}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

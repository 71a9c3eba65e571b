"""What the engine knows about a program: one option table per program (or subcommand) and
the role of each operand, and the parser that reads a command line against them.

The principle (docs/rules.md, "Positive knowledge"): an allow rule can only allow a command
the engine understands completely. Every option must be in the program's table — found the
way the program itself finds it, abbreviations included — with a known effect; every
operand has a known role; and no word whose text is only known at run time (``$X``,
``$(…)``, a glob that may expand to a file named like an option) sits where an option could
be. Whatever is not understood is a *problem*: the command is at most asked about.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from rules.invocations import HeldFiles
from rules.words import Word, WordKind


class Arity(Enum):
    NONE = "none"
    REQUIRED = "required"  # the next word, or attached (-n5, --lines=5)
    OPTIONAL = "optional"  # only attached (--color=auto, -i.bak); never the next word


class Effect(Enum):
    """What an option does, as far as the rules care."""

    HARMLESS = "harmless"  # output format, selection, behaviour inside the program
    READ = "read"  # its value is a path the program reads
    # Its value is a file that lists more paths the program reads (--files0-from): those
    # are only known at run time, so any deny or ask rule for reading may cover them.
    READ_LIST = "read-list"
    WRITE = "write"  # its value is a path the program writes (or creates)
    DELETE = "delete"  # its value is a path the program deletes
    CHDIR = "chdir"  # its value is the directory the program works in (git -C)
    RECURSIVE = "recursive"  # makes the program read whole directories below its operands
    NETWORK = "network"  # its value is a URL or host (judged by the module, e.g. sources)
    # Its value is a file listing what the program installs (pip -r): not readable here, so
    # asked about, or contained (rules.invocations.HeldFiles) where the executor holds the
    # run to the context and sources.json's registries.
    LISTED = "listed"
    # Creates links (cp -s, cp -l), which path rules cannot follow: never allowed by a rule,
    # but a link is refused by Landlock where it leads, so an enforcing executor holds it.
    LINK = "link"
    EXEC = "exec"  # runs a program or code: never allowed by a rule
    CONFIG = "config"  # configuration that can make the program run or contact anything
    UNSAFE = "unsafe"  # anything else no rule can judge (the note says what)

    # Members are singletons: hashed by identity, in C (sets of effects are looked up for
    # every option given; Enum's own __hash__ is Python code).
    __hash__ = object.__hash__


NOT_ALLOWABLE = frozenset({Effect.EXEC, Effect.CONFIG, Effect.UNSAFE, Effect.LINK})
# What an option can do that an enforcing executor holds (Landlock: reads of the image and
# the context, writes in the context): a word only known at run time that becomes such an
# option, or such an option's unknown value, is contained rather than asked about.
FILE_EFFECTS = frozenset(
    {Effect.HARMLESS, Effect.READ, Effect.READ_LIST, Effect.WRITE, Effect.DELETE}
    | {Effect.RECURSIVE, Effect.CHDIR, Effect.LINK}
)


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # "-n", "--lines"
    arity: Arity = Arity.NONE
    effect: Effect = Effect.HARMLESS
    note: str = ""  # why EXEC / CONFIG / UNSAFE options cannot be allowed
    name_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name_set", frozenset(self.names))


def flags(spec: str, effect: Effect = Effect.HARMLESS, note: str = "") -> list[Option]:
    """Flags written as one string of aliases groups: ``"-a,--all -l"``."""
    return [Option(tuple(group.split(",")), Arity.NONE, effect, note) for group in spec.split()]


def valued(
    spec: str, effect: Effect = Effect.HARMLESS, note: str = "", arity: Arity = Arity.REQUIRED
) -> list[Option]:
    return [Option(tuple(group.split(",")), arity, effect, note) for group in spec.split()]


class Abbreviations(Enum):
    NONE = "none"  # only full names (POSIX tools, bash builtins)
    UNIQUE_PREFIX = "unique-prefix"  # GNU getopt_long, git, Python optparse and argparse


@dataclass(frozen=True)
class Table:
    options: tuple[Option, ...]
    abbreviations: Abbreviations = Abbreviations.UNIQUE_PREFIX
    # GNU tools take options anywhere before "--"; POSIX ones stop at the first operand.
    permute: bool = True
    numeric: bool = False  # "-5" is an option (head, tail: -NUM lines)
    # False: every word is an operand (test's operators, echo's and printf's text).
    parse_options: bool = True
    # The table lists every option the program has. Only then may an abbreviation be
    # resolved: in a partial table "--fo" could look like a unique prefix of a known
    # "--format" while the program has an option named exactly "--fo" that it runs instead.
    complete: bool = False
    # How a cluster of short options takes values: "getopt" (the rest of the word, else the
    # next word: -n5, -n 5), or "next" as tree's own parser does it (tree.c): each option
    # of the cluster that takes a value takes the next word in turn (-Lo 1 out.txt), only
    # digits attached (-L2) being a value of the option itself.
    clusters: str = "getopt"
    long_names: dict[str, Option] = field(init=False, repr=False, compare=False)
    short_names: dict[str, Option] = field(init=False, repr=False, compare=False)
    # Every option only reads or writes files (containable), so an enforcing executor
    # holds whatever a word only known at run time turns out to be. Computed once.
    containable: bool = field(init=False, repr=False, compare=False)
    # Every option only changes what the program prints (ls, cat, wc without
    # --files0-from…): a word that turns out to be one, value and all, changes no file it
    # touches but to leave one out.
    harmless: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        long_names: dict[str, Option] = {}
        short_names: dict[str, Option] = {}
        for option in self.options:
            for name in option.names:
                names = long_names if name.startswith("--") else short_names
                key = name if name.startswith("--") else name[1:]
                if key in names and names[key] != option:
                    # Two meanings for one name: whichever won, a path could be misread.
                    raise ValueError(f"option {name} is defined twice")
                names[key] = option
        object.__setattr__(self, "long_names", long_names)
        object.__setattr__(self, "short_names", short_names)
        containable = all(option.effect in FILE_EFFECTS for option in self.options)
        harmless = all(option.effect is Effect.HARMLESS for option in self.options)
        object.__setattr__(self, "harmless", harmless)
        object.__setattr__(self, "containable", containable)

    def long(self, name: str, guess: bool = False) -> tuple[Option | None, str]:
        """(option, its full name) for ``--name``, resolving a unique prefix the way
        getopt_long does; (None, problem) when unknown or ambiguous. ``guess`` resolves
        prefixes in a partial table too — only for finding what to deny (narrowing)."""
        if name in self.long_names:
            return self.long_names[name], name
        if self.abbreviations is Abbreviations.UNIQUE_PREFIX:
            matches = sorted({full for full in self.long_names if full.startswith(name)})
            targets = {id(self.long_names[full]) for full in matches}
            if len(targets) == 1 and (self.complete or guess):
                return self.long_names[matches[0]], matches[0]
            if len(targets) == 1:
                return None, (
                    f"{name} abbreviates {matches[0]}; written in full it can be judged (the "
                    "engine does not know every option of this program)"
                )
            if matches:
                return None, f"{name} is ambiguous ({', '.join(matches)})"
        return None, f"unknown option {name}"


def table(
    *groups: Iterable[Option],
    abbreviations: Abbreviations = Abbreviations.UNIQUE_PREFIX,
    permute: bool = True,
    numeric: bool = False,
    parse_options: bool = True,
    complete: bool = False,
    clusters: str = "getopt",
) -> Table:
    return Table(
        tuple(option for group in groups for option in group),
        abbreviations=abbreviations,
        permute=permute,
        numeric=numeric,
        parse_options=parse_options,
        complete=complete,
        clusters=clusters,
    )


NO_OPTIONS = Table((), abbreviations=Abbreviations.NONE, permute=False, parse_options=False)


@dataclass(frozen=True, slots=True)
class Given:
    """An option as the command line gives it."""

    option: Option
    name: str  # the full name it resolved to
    value: Word | None


@dataclass(slots=True)
class Parsed:
    given: list[Given] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    first_operand: int | None = None  # its index in the words parsed (a subcommand's)

    def add_operand(self, word: Word, index: int) -> None:
        if self.first_operand is None:
            self.first_operand = index
        self.operands.append(word)

    def has(self, *names: str) -> bool:
        return any(not given.option.name_set.isdisjoint(names) for given in self.given)

    def values(self, *names: str) -> list[Word]:
        return [
            given.value
            for given in self.given
            if given.value is not None and not given.option.name_set.isdisjoint(names)
        ]

    def with_effect(self, effect: Effect) -> list[Given]:
        return [given for given in self.given if given.option.effect is effect]


def literal_prefix(word: Word) -> str:
    """The part of a word known before run time, from its start: ``x$Y`` → ``x``,
    ``"$Y"`` → ``""``. For other words, the whole value."""
    if word.kind is not WordKind.UNKNOWN:
        return word.value
    prefix = []
    for char in word.value:
        if char in "\"'":
            continue
        if char in "$`\\":
            break
        prefix.append(char)
    return "".join(prefix)


def may_be_option(word: Word) -> bool:
    """Could this word reach the program as something starting with ``-``?"""
    if word.kind is WordKind.UNKNOWN:
        prefix = literal_prefix(word)
        return not prefix or prefix.startswith("-")
    if word.kind is WordKind.GLOB and not word.value.startswith("-"):
        # A glob may expand to a file the agent named "--compress-program=sh".
        return word.value[:1] in "*?[" or word.brace
    return False


def _take_value(
    parsed: Parsed,
    option: Option,
    name: str,
    attached: Word | None,
    following: Word | None,
    what: str,
) -> int:
    """Record an option that takes a value: attached (``--lines=5``, ``-n5``), else the
    next word when it is required. Returns how many following words it used."""
    if attached is not None or option.arity is Arity.OPTIONAL:
        parsed.given.append(Given(option, name, attached))
        return 0
    if following is None:
        parsed.problems.append(f"{what}: {name} needs a value")
    parsed.given.append(Given(option, name, following))
    return 0 if following is None else 1


def parse(words: Sequence[Word], spec: Table, what: str, *, guess: bool = False) -> Parsed:
    """Read ``words`` (the arguments after the program) against ``spec`` (``guess``: see
    ``Table.long``)."""
    parsed = Parsed()
    given, problems = parsed.given, parsed.problems
    index = 0
    count = len(words)
    operands_only = not spec.parse_options
    while index < count:
        word = words[index]
        index += 1
        if operands_only:
            parsed.add_operand(word, index - 1)
            continue
        value = word.value
        # A glob that starts with "-" reaches the program starting with "-" whether it
        # matches a file or stays as written: read as the option it spells (--format=%G?).
        dashed = word.kind is WordKind.GLOB and value[:1] == "-" and value != "-"
        if word.kind is not WordKind.LITERAL and not dashed:
            risky = not spec.harmless
            if may_be_option(word) and risky:
                problem = f"{what}: {word.display} may expand to an option only known at run time"
                problems.append(HeldFiles(problem) if spec.containable else problem)
            parsed.add_operand(word, index - 1)
            if not spec.permute:
                operands_only = True
            continue
        if value[:1] != "-" or value == "-":
            parsed.add_operand(word, index - 1)
            if not spec.permute:
                operands_only = True
            continue
        if value == "--":
            operands_only = True
            continue
        following = words[index] if index < count else None
        if value.startswith("--"):
            name, equals, attached = value.partition("=")
            option, found = spec.long(name, guess)
            if option is None:
                problems.append(f"{what}: {found}")
                continue
            if option.arity is Arity.NONE:
                if equals:
                    problems.append(f"{what}: {found} takes no value")
                given.append(Given(option, found, None))
            else:
                value_word = Word(attached, word.kind) if equals else None
                index += _take_value(parsed, option, found, value_word, following, what)
            continue
        if spec.numeric and value[1:].isdigit():
            given.append(Given(Option((value,), effect=Effect.HARMLESS), value, None))
            continue
        short_names = spec.short_names
        position = 1
        while position < len(value):
            char = value[position]
            option = short_names.get(char)
            if option is None:
                problems.append(f"{what}: unknown option -{char}")
                break
            if option.arity is Arity.NONE:
                given.append(Given(option, "-" + char, None))
                position += 1
                continue
            rest = value[position + 1 :]
            if spec.clusters == "next" and not rest.isdigit():
                # tree: this option's value is the next word, the cluster goes on.
                following = words[index] if index < count else None
                index += _take_value(parsed, option, "-" + char, None, following, what)
                position += 1
                continue
            value_word = Word(rest, word.kind) if rest else None
            index += _take_value(parsed, option, "-" + char, value_word, following, what)
            break
    for item in given:
        effect = item.option.effect
        if effect in NOT_ALLOWABLE:
            problems.append(f"{what}: {item.name} {item.option.note or effect.value}")
        elif effect is Effect.LISTED:
            problems.append(HeldFiles(f"{what}: {item.name} {item.option.note}"))
        elif (
            item.value is not None
            and item.value.kind is WordKind.UNKNOWN
            and effect is not Effect.HARMLESS
        ):
            problem = f"{what}: the value of {item.name} is only known at run time"
            problems.append(HeldFiles(problem) if effect in FILE_EFFECTS else problem)
    return parsed


# --- what a command does with its words ---------------------------------------------------------


class Role(Enum):
    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    UNKNOWN = "unknown"  # a path whose use is not known: only deny/ask rules matter


@dataclass(frozen=True, slots=True)
class Use:
    """A path a command uses: ``recursive`` reads (or copies) everything below it."""

    role: Role
    word: Word
    source: str
    recursive: bool = False


class ShellDirectory(Enum):
    """What a builtin does to the working directory of the shell that runs it."""

    KEPT = "kept"
    MOVED = "moved"  # cd, pushd: later commands run in its chdir
    FORGOTTEN = "forgotten"  # popd: the directory stack is not tracked

    __hash__ = object.__hash__


@dataclass(slots=True)
class Understanding:
    """The result of reading a command against its program's knowledge."""

    program: str
    modelled: bool = True
    problems: list[str] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    chdir: Word | None = None  # the directory it works in (git -C DIR)
    code: list[Word] = field(default_factory=list)  # files it runs as code (scripts)
    # Files a write may create inside a destination directory (cp a.pth dir/ → dir/a.pth):
    # only checked against the files that configure programs (configuration.py).
    creates: list[Word] = field(default_factory=list)
    # URLs (or hosts) it contacts: judged by sources.json, or without one by the network
    # rules' deny and ask lists.
    destinations: list[Word] = field(default_factory=list)
    shell_directory: ShellDirectory = ShellDirectory.KEPT

    def read(self, words: Iterable[Word], source: str, *, recursive: bool = False) -> None:
        self.uses.extend(Use(Role.READ, word, source, recursive) for word in words)

    def read_listed(self, listing: Word, source: str) -> None:
        """``listing`` names a file of paths the program reads as well (``-`` is standard
        input): the list is read, and so are paths only known at run time."""
        if listing.value != "-" or listing.kind is not WordKind.LITERAL:
            self.read([listing], source)
        self.read([Word(f"<paths listed in {listing.display}>", WordKind.UNKNOWN)], source)

    def write(self, words: Iterable[Word], source: str) -> None:
        self.uses.extend(Use(Role.WRITE, word, source) for word in words)

    def delete(self, words: Iterable[Word], source: str, *, recursive: bool = False) -> None:
        self.uses.extend(Use(Role.DELETE, word, source, recursive) for word in words)


Reader = Callable[[str, Parsed, Understanding], None]


@dataclass(frozen=True)
class Program:
    """A program (or a subcommand of one): its table and what its operands are."""

    names: tuple[str, ...]
    table: Table
    # Given the parsed words, record uses and problems; None: operands are plain data.
    operands: Reader | None = None
    subcommands: Mapping[str, Program] | None = None
    # Any use of this program runs code the agent may have written (pytest, make): it is
    # understood — so its paths are still judged — but never allowed by a rule.
    runs_project_code: str = ""
    shell_directory: ShellDirectory = ShellDirectory.KEPT


_PIPE = re.compile(r"/dev/(?:fd/\d+|stdin|stdout|stderr)$")


def directory_files(first: Word, second: Word) -> list[Word]:
    """What ``diff FIRST SECOND`` reads when both are directories: every file of one named
    like a file of the other, and with -N every file of either (GNU diff, "Comparing
    Directories") — one level down, ``D/*`` of each. Which is a directory is only known
    then: both are judged."""
    if WordKind.UNKNOWN in (first.kind, second.kind) or "-" in (first.value, second.value):
        return []
    if _PIPE.match(first.value) or _PIPE.match(second.value):
        return []
    return [Word(word.value.rstrip("/") + "/*", WordKind.GLOB) for word in (first, second)]


def paired(first: Word, second: Word) -> list[Word]:
    """What ``diff FIRST SECOND`` also reads when one of them is a directory: the file in
    it named like the other's last component (GNU diff, "Comparing Directories"; git
    diff --no-index the same, diff-no-index.c's append_basename): ``diff /etc shadow``
    reads /etc/shadow. Which one is a directory is only known then: both are judged."""
    if WordKind.UNKNOWN in (first.kind, second.kind) or "-" in (first.value, second.value):
        return []
    if _PIPE.match(first.value) or _PIPE.match(second.value):
        return []  # <(sort a) is a pipe, not a directory
    result = []
    for directory, other in ((first, second), (second, first)):
        base = other.value.rstrip("/").rsplit("/", 1)[-1]
        if base and base not in {".", ".."}:
            kind = WordKind.GLOB if WordKind.GLOB in (first.kind, second.kind) else first.kind
            result.append(Word(directory.value.rstrip("/") + "/" + base, kind))
    return result


def option_uses(name: str, parsed: Parsed, understanding: Understanding) -> None:
    """The paths option values name (their effect says how they are used)."""
    for given in parsed.given:
        if given.value is None:
            continue
        source = f"{name} {given.name}"
        effect = given.option.effect
        if effect is Effect.READ:
            understanding.read([given.value], source)
        elif effect is Effect.READ_LIST:
            understanding.read_listed(given.value, source)
        elif effect is Effect.WRITE:
            understanding.write([given.value], source)
        elif effect is Effect.DELETE:
            understanding.delete([given.value], source)
        elif effect is Effect.CHDIR:
            # git -C /etc -C . works in /etc: each relative -C is taken from the last.
            before = understanding.chdir
            value = given.value
            if before is not None and not value.value.startswith("/"):
                kind = before.kind if before.kind is not WordKind.LITERAL else value.kind
                value = Word(before.value.rstrip("/") + "/" + value.value, kind)
            understanding.chdir = value
        elif effect is Effect.NETWORK:
            understanding.destinations.append(given.value)

"""GNU coreutils (and the few POSIX builtins agents use beside them): every option of each,
with what it does to files. Options are GNU getopt_long's: permuted, long ones by any
unique prefix (``--out`` is ``--output``), short ones clustered."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rules.invocations import HeldFiles
from rules.programs import base
from rules.programs.base import (
    NO_OPTIONS,
    Abbreviations,
    Arity,
    Effect,
    Option,
    Parsed,
    Program,
    Role,
    ShellDirectory,
    Table,
    Understanding,
    Use,
    directory_files,
    flags,
    option_uses,
    paired,
    valued,
)
from rules.programs.configuration import configures, configuring_directory
from rules.words import Word, WordKind, integer_literal


def table(*groups: Iterable[Option], **settings: Any) -> Table:
    """The tables here list every option of GNU coreutils 9 (and diffutils, file), checked
    against each program's --help (``python -m rules.programs.check``), so
    abbreviations resolve."""
    return base.table(*groups, complete=True, **settings)


COMMON = flags("--help --version")
READ, WRITE, READ_LIST = Effect.READ, Effect.WRITE, Effect.READ_LIST


def reads(name: str, parsed: Parsed, found: Understanding) -> None:
    """Every operand is a file the program reads (``-`` is standard input)."""
    option_uses(name, parsed, found)
    found.read([w for w in parsed.operands if w.value != "-"], f"argument of {name}:")


def writes(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    found.write([w for w in parsed.operands if w.value != "-"], f"argument of {name}:")


def data(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)  # operands are text, not paths


def no_operands(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    if parsed.operands:
        found.problems.append(f"{name} takes no operands here")


CAT = Program(
    ("cat",),
    table(
        COMMON,
        flags(
            "-A,--show-all -b,--number-nonblank -e -E,--show-ends -n,--number "
            "-s,--squeeze-blank -t -T,--show-tabs -u -v,--show-nonprinting"
        ),
    ),
    reads,
)
TAC = Program(
    ("tac",),
    table(COMMON, flags("-b,--before -r,--regex"), valued("-s,--separator")),
    reads,
)
NL = Program(
    ("nl",),
    table(
        COMMON,
        flags("-p,--no-renumber"),
        valued(
            "-b,--body-numbering -d,--section-delimiter -f,--footer-numbering "
            "-h,--header-numbering -i,--line-increment -l,--join-blank-lines "
            "-n,--number-format -s,--number-separator -v,--starting-line-number "
            "-w,--number-width"
        ),
    ),
    reads,
)
REV = Program(("rev",), table(flags("-h,--help -V,--version")), reads)
HEAD = Program(
    ("head", "tail"),
    table(
        COMMON,
        valued("-n,--lines -c,--bytes -s,--sleep-interval --pid --max-unchanged-stats"),
        flags("-q,--quiet,--silent -v,--verbose -z,--zero-terminated -F --retry"),
        flags("-f"),
        valued("--follow", arity=Arity.OPTIONAL),
        numeric=True,
    ),
    reads,
)
WC = Program(
    ("wc",),
    table(
        COMMON,
        flags("-c,--bytes -m,--chars -l,--lines -L,--max-line-length -w,--words"),
        valued("--files0-from", READ_LIST),
        valued("--total", arity=Arity.OPTIONAL),
    ),
    reads,
)
SORT = Program(
    ("sort",),
    table(
        COMMON,
        flags(
            "-b,--ignore-leading-blanks -d,--dictionary-order -f,--ignore-case "
            "-g,--general-numeric-sort -i,--ignore-nonprinting -M,--month-sort "
            "-h,--human-numeric-sort -n,--numeric-sort -R,--random-sort -r,--reverse "
            "-V,--version-sort -c -C -m,--merge -s,--stable -u,--unique "
            "-z,--zero-terminated --debug"
        ),
        valued("-k,--key -t,--field-separator -S,--buffer-size --parallel --batch-size"),
        valued("--sort"),
        valued("--check", arity=Arity.OPTIONAL),
        valued("--random-source", READ),
        valued("--files0-from", READ_LIST),
        valued("-o,--output", WRITE),
        valued("-T,--temporary-directory", WRITE),
        valued("--compress-program", Effect.EXEC, "runs a compression program"),
    ),
    reads,
)


def _uniq(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    found.read(parsed.operands[:1], "input of uniq:")
    found.write(parsed.operands[1:2], "output of uniq:")
    if len(parsed.operands) > 2:
        found.problems.append("uniq takes at most two operands")


UNIQ = Program(
    ("uniq",),
    table(
        COMMON,
        flags("-c,--count -d,--repeated -D -i,--ignore-case -u,--unique -z,--zero-terminated"),
        valued("-f,--skip-fields -s,--skip-chars -w,--check-chars"),
        valued("--all-repeated --group", arity=Arity.OPTIONAL),
    ),
    _uniq,
)
CUT = Program(
    ("cut",),
    table(
        COMMON,
        valued("-b,--bytes -c,--characters -d,--delimiter -f,--fields --output-delimiter"),
        flags("-n -s,--only-delimited -z,--zero-terminated --complement"),
    ),
    reads,
)
PASTE = Program(
    ("paste",),
    table(COMMON, valued("-d,--delimiters"), flags("-s,--serial -z,--zero-terminated")),
    reads,
)
TR = Program(
    ("tr",),
    table(COMMON, flags("-c,-C,--complement -d,--delete -s,--squeeze-repeats -t,--truncate-set1")),
    data,
)
# echo (bash's builtin) has no options by name: leading words made only of -n, -e, -E
# letters are options, anything else is printed; printf's words are its format and data.
ECHO = Program(("echo",), NO_OPTIONS, data)
PRINTF = Program(("printf",), NO_OPTIONS, data)
PWD = Program(
    ("pwd",), table(flags("-L -P"), abbreviations=Abbreviations.NONE, permute=False), no_operands
)
TRUE = Program(("true", "false", ":"), NO_OPTIONS, data)  # bash ignores their arguments


def _ls(name: str, parsed: Parsed, found: Understanding) -> None:
    """Listings are reads; with -R every directory below (names under a denied .ssh too).
    Without an operand ls lists the working directory (``cd /root/.ssh && ls``)."""
    option_uses(name, parsed, found)
    operands = [w for w in parsed.operands if w.value != "-"] or [Word(".")]
    recursive = parsed.has("-R", "--recursive")
    found.read(operands, f"argument of {name}:", recursive=recursive)


def _directories(name: str, parsed: Parsed, found: Understanding) -> None:
    """tree and du read the whole tree below each operand, the working directory when
    there is none."""
    option_uses(name, parsed, found)
    operands = [w for w in parsed.operands if w.value != "-"] or [Word(".")]
    found.read(operands, f"argument of {name}:", recursive=True)


LS = Program(
    ("ls", "dir", "vdir"),
    table(
        COMMON,
        flags(
            "-a,--all -A,--almost-all --author -b,--escape -B,--ignore-backups -c -C "
            "-d,--directory -D,--dired -f -F -g --group-directories-first -G,--no-group "
            "-h,--human-readable --si -H,--dereference-command-line "
            "--dereference-command-line-symlink-to-dir -i,--inode -k,--kibibytes -l "
            "-L,--dereference "
            "-m -n,--numeric-uid-gid -N,--literal -o -p -q,--hide-control-chars "
            "--show-control-chars -Q,--quote-name -r,--reverse -R,--recursive -s,--size -S -t "
            "-u -U -v -x -X -Z,--context -1 --full-time --file-type --zero"
        ),
        valued(
            "--block-size -I,--ignore --hide --quoting-style --sort --time --time-style "
            "-T,--tabsize -w,--width --format --indicator-style"
        ),
        valued("--color,--colour --hyperlink --classify", arity=Arity.OPTIONAL),
    ),
    # ls reads directory listings, not contents: "not denied" is what matters.
    _ls,
)
TREE = Program(
    ("tree",),
    table(
        COMMON,
        flags(
            "-a -d -l -f -x -q -N -Q -p -u -g -s -h --si --du -D -F -v -t -c -U -r -i -A -S -n -C "
            "-J -X --inodes --device --noreport --dirsfirst --filesfirst --prune --fromfile "
            "--gitignore --info --metafirst --matchdirs --ignore-case"
        ),
        valued("-L -P -I --filelimit --timefmt --charset --sort"),
        valued("-H"),
        valued("-o", WRITE),
        abbreviations=Abbreviations.NONE,  # tree compares each long option in full
        clusters="next",  # tree -Lo 1 out.txt: -L takes 1, -o takes out.txt
    ),
    _directories,
)


def _copy(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    recursive = parsed.has("-r", "-R", "--recursive", "-a", "--archive")
    operands = list(parsed.operands)
    target_dir = parsed.values("-t", "--target-directory")
    source_role = Role.DELETE if name == "mv" else Role.READ
    sources = operands if target_dir else operands[:-1]
    if not target_dir and len(operands) < 2:
        found.problems.append(f"{name} needs a source and a destination")
        return
    exchange = parsed.has("--exchange")
    for word in sources:
        found.uses.append(Use(source_role, word, f"source of {name}:", recursive and name == "cp"))
        if exchange:
            # mv --exchange swaps the two: the source gets the destination's contents.
            found.uses.append(Use(Role.WRITE, word, f"source of {name} --exchange:"))
    if not target_dir:
        found.write(operands[-1:], f"destination of {name}:")
    destination = (target_dir or operands)[-1]
    _into_configuration(name, parsed, sources, destination, recursive, found)
    if name == "cp" and parsed.has("--parents"):
        _parents(sources, destination, found)
    found.creates.extend(
        Word(destination.value.rstrip("/") + "/" + source.value.rstrip("/").rsplit("/", 1)[-1])
        for source in sources
        if source.kind is WordKind.LITERAL and destination.kind is WordKind.LITERAL
    )
    _links(name, parsed, sources, found)
    _backups(name, parsed, [destination] if not target_dir else [], found)


def _into_configuration(
    name: str,
    parsed: Parsed,
    sources: list[Word],
    destination: Word,
    recursive: bool,
    found: Understanding,
) -> None:
    """A tree (or files only known at run time) copied or moved into a directory whose
    files configure programs — or a tree's contents spilled into the working directory,
    where .git and .venv live — brings files whose names the line does not show."""
    trees = recursive or name == "mv"
    unknown_files = any(source.kind is not WordKind.LITERAL for source in sources)
    if destination.kind is not WordKind.LITERAL:
        return  # judged as a write only known at run time
    directory = configuring_directory(destination.value)
    named = configures("/" + destination.value.strip("/").removeprefix("./"))
    if directory is not None and (trees or unknown_files) and not named:
        found.problems.append(
            f"{name} brings files into {destination.display}, inside {directory}, whose "
            "files configure or extend programs; their names are not known here"
        )
        return
    spilled = parsed.has("-T", "--no-target-directory") or any(
        source.value.rstrip("/").endswith("/.") or source.value == "." for source in sources
    )
    if trees and spilled and destination.value.rstrip("/") in ("", ".", "~"):
        found.problems.append(
            f"{name} spills a tree's files into {destination.display}, where .git and .venv "
            "live; their names are not known here"
        )


def _parents(sources: list[Word], destination: Word, found: Understanding) -> None:
    """cp --parents copies each source to DESTINATION/SOURCE, the source's path as written,
    ``..`` parts included (coreutils "cp invocation"; copy.c builds it by appending):
    ``cp --parents ../../etc/x out`` writes out/../../etc/x. Each of those is a write."""
    for source in sources:
        if source.kind is not WordKind.LITERAL or destination.kind is not WordKind.LITERAL:
            found.problems.append(
                HeldFiles(
                    f"cp --parents writes below {destination.display} along the path of "
                    f"{source.display}, only known at run time"
                )
            )
            continue
        written = Word(destination.value.rstrip("/") + "/" + source.value.lstrip("/"))
        found.write([written], "destination of cp --parents:")
        found.creates.append(written)


def _links(name: str, parsed: Parsed, sources: list[Word], found: Understanding) -> None:
    """cp -P/-d/-a, and -R without -L (coreutils "cp invocation": "-R … copies symbolic
    links as symbolic links"), copies a link as a link: one taken from outside the
    workspace (/dev/fd is /proc/self/fd) would lead from the workspace to where path rules
    cannot follow. An enforcing executor refuses what such a link leads to."""
    if name != "cp" or parsed.has("-L", "--dereference"):
        return
    if not parsed.has("-P", "--no-dereference", "-d", "-a", "--archive") and not parsed.has(
        "-R", "-r", "--recursive"
    ):
        return
    for source in sources:
        value = source.value
        if source.kind is not WordKind.LITERAL or value.startswith("/") or ".." in value:
            found.problems.append(
                HeldFiles(
                    f"{name} copies links as links: one in {source.display} may lead where "
                    "path rules cannot follow"
                )
            )
            return


def _backups(name: str, parsed: Parsed, destinations: list[Word], found: Understanding) -> None:
    """-b/--backup (and -S, which implies it) renames what a destination replaces to
    DESTINATION + SUFFIX (coreutils "Backup options"; "~" by default, ".~N~" numbered): a
    name no argument spells (notes.txt -S rc onto .bash makes .bashrc), judged as a write."""
    suffixes = parsed.values("-S", "--suffix")
    for suffix in suffixes:
        if "/" in suffix.value or suffix.kind is not WordKind.LITERAL:
            found.problems.append(
                f"{name}: a backup suffix {suffix.display} may name another directory"
            )
            return
    if not (suffixes or parsed.has("-b", "--backup")):
        return
    endings = [suffix.value for suffix in suffixes] or ["~", ".~*~"]
    targets = [*destinations, *found.creates]
    for target in targets:
        if target.kind is not WordKind.LITERAL:
            continue
        for ending in endings:
            kind = WordKind.GLOB if "*" in ending else WordKind.LITERAL
            backup = Word(target.value.rstrip("/") + ending, kind)
            found.write([backup], f"backup of {name}:")
            found.creates.append(backup)


_BACKUP = valued("--backup", arity=Arity.OPTIONAL) + valued("-S,--suffix")
CP = Program(
    ("cp",),
    table(
        COMMON,
        flags(
            "-a,--archive --attributes-only -b -d -f,--force -i,--interactive -H "
            "-L,--dereference -n,--no-clobber -P,--no-dereference -p -R,-r,--recursive "
            "--remove-destination --strip-trailing-slashes -T,--no-target-directory -u "
            "-v,--verbose -x,--one-file-system --debug --keep-directory-symlink --parents "
            "--copy-contents"
        ),
        valued("--preserve --reflink", arity=Arity.OPTIONAL),
        valued("--no-preserve --sparse"),
        # coreutils 9.1 (Debian 12, the image's): --update takes no value (9.3 added one).
        flags("--update"),
        valued("-t,--target-directory", WRITE),
        flags(
            "-s,--symbolic-link",
            Effect.LINK,
            "creates symbolic links, which path rules cannot follow",
        ),
        flags(
            "-l,--link",
            Effect.LINK,
            "creates hard links: a write to one is a write to the other file, which path "
            "rules cannot follow",
        ),
        _BACKUP,
        flags("-Z"),
        valued("--context", arity=Arity.OPTIONAL),
    ),
    _copy,
)
MV = Program(
    ("mv",),
    table(
        COMMON,
        flags(
            "-b -f,--force -i,--interactive -n,--no-clobber --strip-trailing-slashes "
            "-T,--no-target-directory -u -v,--verbose -Z,--context --debug --exchange --no-copy "
            "--update"
        ),
        valued("-t,--target-directory", WRITE),
        _BACKUP,
    ),
    _copy,
)
MKDIR = Program(
    ("mkdir",),
    table(
        COMMON,
        flags("-p,--parents -v,--verbose -Z"),
        valued("-m,--mode"),
        valued("--context", arity=Arity.OPTIONAL),
    ),
    writes,
)
TOUCH = Program(
    ("touch",),
    table(
        COMMON,
        flags("-a -c,--no-create -f -h,--no-dereference -m"),
        valued("-d,--date -t --time"),
        valued("-r,--reference", READ),
    ),
    writes,
)
TEE = Program(
    ("tee",),
    table(
        COMMON,
        flags("-a,--append -i,--ignore-interrupts -p"),
        valued("--output-error", arity=Arity.OPTIONAL),
    ),
    writes,
)


def _rm(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    recursive = parsed.has("-r", "-R", "--recursive")
    found.delete(parsed.operands, f"argument of {name}:", recursive=recursive)


RM = Program(
    ("rm",),
    table(
        COMMON,
        flags(
            "-f,--force -i -I -r,-R,--recursive -d,--dir -v,--verbose --one-file-system "
            "--no-preserve-root"
        ),
        valued("--interactive --preserve-root", arity=Arity.OPTIONAL),
    ),
    _rm,
)


def _rmdir(name: str, parsed: Parsed, found: Understanding) -> None:
    found.delete(parsed.operands, f"argument of {name}:")


RMDIR = Program(
    ("rmdir",),
    table(COMMON, flags("--ignore-fail-on-non-empty -p,--parents -v,--verbose")),
    _rmdir,
)


def _diff(name: str, parsed: Parsed, found: Understanding) -> None:
    option_uses(name, parsed, found)
    recursive = parsed.has("-r", "--recursive")
    found.read(
        [w for w in parsed.operands if w.value != "-"], "argument of diff:", recursive=recursive
    )
    pairs = [tuple(parsed.operands)] if len(parsed.operands) == 2 else []
    for given in parsed.values("--from-file", "--to-file"):
        pairs.extend((given, operand) for operand in parsed.operands)
    for first, second in pairs:
        found.read(paired(first, second), "argument of diff (a directory's file):")
        # Two directories: every file of one named like a file of the other is read, and
        # with -N every file of either (GNU diff, "Comparing Directories"): each may be a
        # directory whose files are read, one level down.
        found.read(directory_files(first, second), "argument of diff (a directory's files):")


DIFF = Program(
    ("diff",),
    table(
        flags("--help -v,--version"),
        flags(
            "-q,--brief -s,--report-identical-files -c -u -e,--ed -n,--rcs -y,--side-by-side "
            "-l,--paginate -t,--expand-tabs -T,--initial-tab --suppress-common-lines "
            "-p,--show-c-function -r,--recursive -N,--new-file --unidirectional-new-file "
            "--ignore-file-name-case --no-ignore-file-name-case -i,--ignore-case "
            "-E,--ignore-tab-expansion -Z,--ignore-trailing-space -b,--ignore-space-change "
            "-w,--ignore-all-space -B,--ignore-blank-lines --strip-trailing-cr -a,--text "
            "-d,--minimal --speed-large-files --suppress-blank-empty --left-column -P "
            "--no-dereference --normal"
        ),
        # GNU diff: -C NUM and -U NUM take the next word, --context[=NUM] and
        # --unified[=NUM] only an attached one (diff.c's long options, optional_argument).
        valued("--context --unified", arity=Arity.OPTIONAL),
        valued(
            "-C -U -W,--width --tabsize -F,--show-function-line "
            "--label,-L -I,--ignore-matching-lines --horizon-lines -x,--exclude "
            "--old-line-format --new-line-format --unchanged-line-format --line-format "
            "--old-group-format --new-group-format --unchanged-group-format "
            "--changed-group-format -S,--starting-file -D,--ifdef --palette"
        ),
        valued("--color", arity=Arity.OPTIONAL),
        valued("--from-file --to-file -X,--exclude-from", READ),
    ),
    _diff,
)
COMM = Program(
    ("comm",),
    table(
        COMMON,
        flags("-1 -2 -3 --check-order --nocheck-order --total -z,--zero-terminated"),
        valued("--output-delimiter"),
    ),
    reads,
)
BASENAME = Program(
    ("basename", "dirname"),
    table(COMMON, flags("-a,--multiple -z,--zero"), valued("-s,--suffix")),
    data,
)
SEQ = Program(
    ("seq",),
    table(COMMON, flags("-w,--equal-width"), valued("-f,--format -s,--separator")),
    data,
)
SLEEP = Program(("sleep",), table(COMMON, permute=False), data)
DATE = Program(
    ("date",),
    table(
        COMMON,
        flags("-u,--utc,--universal -R,--rfc-email --debug"),
        valued("-d,--date --rfc-3339"),
        valued("-I,--iso-8601", arity=Arity.OPTIONAL),
        flags("--resolution"),
        valued("-r,--reference -f,--file", READ),
        valued("-s,--set", Effect.UNSAFE, "sets the system clock"),
    ),
    data,
)
UNAME = Program(
    ("uname",),
    table(
        COMMON,
        flags(
            "-a,--all -s,--kernel-name -n,--nodename -r,--kernel-release -v,--kernel-version "
            "-m,--machine -p,--processor -i,--hardware-platform -o,--operating-system"
        ),
    ),
    no_operands,
)
ID = Program(
    ("id",),
    table(
        COMMON,
        flags("-a -Z,--context -g,--group -G,--groups -n,--name -r,--real -u,--user -z,--zero"),
    ),
    data,
)
WHOAMI = Program(("whoami", "arch"), table(COMMON), no_operands)
NPROC = Program(("nproc",), table(COMMON, flags("--all"), valued("--ignore")), no_operands)
REALPATH = Program(
    ("realpath", "readlink"),
    table(
        COMMON,
        flags(
            "-e,--canonicalize-existing -m,--canonicalize-missing -L,--logical -P,--physical "
            "-q,--quiet -s,--strip,--no-symlinks -z,--zero -f,--canonicalize -n,--no-newline "
            "-v,--verbose --silent"
        ),
        valued("--relative-to --relative-base"),
    ),
    reads,
)
STAT = Program(
    ("stat",),
    table(
        COMMON,
        flags("-L,--dereference -f,--file-system -t,--terse"),
        valued("-c,--format --printf"),
        valued("--cached"),
    ),
    reads,
)
DU = Program(
    ("du",),
    table(
        COMMON,
        flags(
            "-0,--null -a,--all --apparent-size -b,--bytes -c,--total -D,--dereference-args "
            "-H -h,--human-readable --inodes -k -L,--dereference -l,--count-links -m "
            "-P,--no-dereference -S,--separate-dirs --si -s,--summarize -x,--one-file-system"
        ),
        valued("-B,--block-size -d,--max-depth -t,--threshold --time-style --exclude"),
        valued("--time", arity=Arity.OPTIONAL),
        valued("-X,--exclude-from", READ),
        valued("--files0-from", READ_LIST),
    ),
    _directories,
)


def _sums(name: str, parsed: Parsed, found: Understanding) -> None:
    """With --check each operand is a list of "HASH  PATH" lines: the paths in it are read
    too, and only known at run time."""
    if not parsed.has("-c", "--check"):
        reads(name, parsed, found)
        return
    option_uses(name, parsed, found)
    for listing in parsed.operands or [Word("-")]:
        found.read_listed(listing, f"{name} --check")


SUMS = Program(
    ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum"),
    table(
        COMMON,
        flags(
            "-b,--binary -c,--check --tag -t,--text -z,--zero --ignore-missing --quiet --status "
            "--strict -w,--warn --untagged"
        ),
        valued("-l,--length"),
    ),
    _sums,
)
FILE = Program(
    ("file",),
    table(
        flags("--help -v,--version"),
        flags(
            "-b,--brief -c,--checking-printout -E -h,--no-dereference -i,--mime --mime-type "
            "--mime-encoding -k,--keep-going -l,--list -L,--dereference -N,--no-pad "
            "-n,--no-buffer -p,--preserve-date -r,--raw -s,--special-files -S,--no-sandbox "
            "-z,--uncompress -Z,--uncompress-noreport -0,--print0 --apple --extension -d,--debug"
        ),
        flags("-C,--compile", Effect.UNSAFE, "writes a compiled magic file"),
        valued("-e,--exclude -F,--separator -P,--parameter --exclude-quiet"),
        valued("-m,--magic-file", READ),
        valued("-f,--files-from", READ_LIST),
    ),
    reads,
)
BASE64 = Program(
    ("base64", "base32"),
    table(COMMON, flags("-d,--decode -i,--ignore-garbage"), valued("-w,--wrap")),
    reads,
)
OD = Program(
    ("od",),
    table(
        COMMON,
        flags("-a -b -c -d -f -i -l -o -s -x -v,--output-duplicates --traditional"),
        valued("-A,--address-radix -j,--skip-bytes -N,--read-bytes -t,--format --endian"),
        valued("-S"),
        valued("--strings -w,--width", arity=Arity.OPTIONAL),
    ),
    reads,
)
FOLD = Program(
    ("fold",), table(COMMON, flags("-b,--bytes -s,--spaces"), valued("-w,--width")), reads
)
EXPAND = Program(
    ("expand", "unexpand"),
    table(COMMON, flags("-i,--initial -a,--all --first-only"), valued("-t,--tabs")),
    reads,
)
WHICH = Program(("which",), table(flags("-a")), data)


def _cd(name: str, parsed: Parsed, found: Understanding) -> None:
    if len(parsed.operands) > 1:
        found.problems.append(f"{name}: too many arguments")
    found.chdir = parsed.operands[0] if parsed.operands else Word("~", tilde=True)


CD = Program(
    ("cd", "pushd"),
    # bash's cd: -L, -P, -e, -@ and "--", then one directory; no abbreviations.
    table(flags("-L -P -e -@"), abbreviations=Abbreviations.NONE, permute=False),
    _cd,
    shell_directory=ShellDirectory.MOVED,
)
POPD = Program(
    ("popd",),
    table(flags("-n"), abbreviations=Abbreviations.NONE, permute=False),
    data,
    shell_directory=ShellDirectory.FORGOTTEN,
)


def test_problems(words: Sequence[Word]) -> list[str]:
    """``test -v 'a[$(id)]'`` evaluates the subscript as arithmetic and runs ``id``; inside
    ``[[ ]]`` the operands of -eq/-lt/… are arithmetic too. test, ``[`` and cd are allowed
    without a rule as harmless builtins, so this must make them ask."""
    problems: list[str] = []
    arithmetic = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"} if words[0].value == "[[" else set()
    for index, word in enumerate(words):
        operand = words[index + 1] if index + 1 < len(words) else None
        if word.value == "-v" and operand is not None:
            value = operand.value
            subscript = re.fullmatch(r"[^\[]*\[(.*)\]", value, re.DOTALL)
            if operand.kind is WordKind.UNKNOWN or (
                "[" in value and (subscript is None or not integer_literal(subscript.group(1)))
            ):
                problems.append(f"test -v {operand.display}: the subscript is arithmetic")
        if word.value in arithmetic:
            for side in (words[index - 1], operand):
                if side is None or side.kind is not WordKind.LITERAL:
                    problems.append(f"[[ … {word.value} … ]] evaluates run-time text")
                elif not integer_literal(side.value):
                    problems.append(f"[[ … {word.value} … ]] evaluates {side.display}")
    return problems


def _test(name: str, parsed: Parsed, found: Understanding) -> None:
    found.problems.extend(test_problems([Word(name), *parsed.operands]))


TEST = Program(("test", "["), NO_OPTIONS, _test)

PROGRAMS = (
    CAT, TAC, NL, REV, HEAD, WC, SORT, UNIQ, CUT, PASTE, TR, ECHO, PRINTF, PWD, TRUE, LS, TREE,
    CP, MV, MKDIR, TOUCH, TEE, RM, RMDIR, DIFF, COMM, BASENAME, SEQ, SLEEP, DATE, UNAME, ID,
    WHOAMI, NPROC, REALPATH, STAT, DU, SUMS, FILE, BASE64, OD, FOLD, EXPAND, WHICH, CD, POPD,
    TEST,
)  # fmt: skip

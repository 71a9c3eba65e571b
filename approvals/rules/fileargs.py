"""Paths named by command arguments, and what the command does with them.

A table for the commands agents actually use (the seed's allow list and the usual
destructive ones): ``cat /etc/shadow`` reads /etc/shadow, ``cp x /etc/passwd`` writes it,
``sed -i … f`` writes f, ``rm -rf d`` deletes d. Reads only need "not denied"; writes and
deletes need an allow rule, like redirections. For any other command a path-looking argument
(``/…``, ``./…``, ``../…``, ``~…``) is checked against the deny/ask rules of every action and
a hit means ask, because what the command does with it is unknown.

This is a heuristic, not a model of every program: ``python script.py`` can open anything.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from approvals.rules.model import FileAction
from approvals.rules.words import Word, WordKind, split_arguments


@dataclass(frozen=True)
class PathArgument:
    action: FileAction | None  # None: unknown use; only deny/ask rules matter, as ask
    word: Word
    source: str
    recursive: bool = False  # a directory the command reads everything below


# Options that make a reader descend into directories, per program (rg always does).
RECURSIVE_OPTIONS = {
    "grep": {"-r", "-R", "--recursive", "--dereference-recursive"},
    "cp": {"-r", "-R", "-a", "--recursive", "--archive"},
    "diff": {"-r", "--recursive"},
}


_Adder = Callable[[FileAction | None, Sequence[Word]], None]

READ = FileAction.READ
WRITE = FileAction.WRITE
DELETE = FileAction.DELETE

# Commands whose arguments are not paths at all (echo /etc/shadow reads nothing).
NO_PATHS = frozenset(
    {
        "echo", "printf", "pwd", "true", "false", ":", "test", "[", "cd", "pushd", "popd",
        "eval", "export", "declare", "typeset", "local", "readonly", "read", "exit", "return",
        "set", "shift", "unset", "wait", "sleep", "kill", "tr", "seq", "yes", "date",
        "whoami", "id", "uname", "sudo", "doas", "find", "basename", "dirname", "expr",
    }
)  # fmt: skip
READERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "wc", "sort", "diff", "cmp", "comm", "cut",
        "paste", "nl", "tac", "od", "xxd", "hexdump", "strings", "file", "stat", "du", "ls",
        "tree", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
        "b2sum", "cksum", "base64", "base32", "column", "fold", "fmt", "rev", "readlink",
        "realpath", "join", "zcat", "bzcat", "xzcat", "grep", "egrep", "fgrep", "rg", "jq",
        "awk", "gawk", "mawk", "nawk", "sed", "uniq",
    }
)  # fmt: skip
PATTERN_FIRST = {
    # program: options that, when given, mean the first operand is not the pattern/program
    "grep": {"-e", "-f", "--regexp", "--file"},
    "egrep": {"-e", "-f", "--regexp", "--file"},
    "fgrep": {"-e", "-f", "--regexp", "--file"},
    "rg": {"-e", "-f", "--regexp", "--file"},
    "jq": {"-f", "--from-file"},
    "awk": {"-f", "--file", "-e", "--source"},
    "gawk": {"-f", "--file", "-e", "--source"},
    "mawk": {"-f", "--file"},
    "nawk": {"-f", "--file"},
    "sed": {"-e", "-f", "--expression", "--file"},
}
WRITERS = frozenset({"tee", "touch", "mkdir", "truncate"})
DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})
MODE_FIRST = frozenset({"chmod", "chown", "chgrp"})
COPIERS = frozenset({"cp", "mv", "ln", "install"})

_VALUED = {
    "head": "-n -c --lines --bytes",
    "tail": "-n -c --lines --bytes --pid -s --sleep-interval",
    "sort": "-k --key -t --field-separator -o --output -T --temporary-directory -S "
    "--buffer-size --parallel",
    "uniq": "-f -s -w --skip-fields --skip-chars --check-chars",
    "cut": "-d -f -c -b --delimiter --fields --characters --bytes --output-delimiter",
    "grep": "-e -f -m -A -B -C --regexp --file --max-count --after-context --before-context "
    "--context --include --exclude --exclude-dir --label -d --directories -D --devices",
    "rg": "-e -f -m -A -B -C -g -t -T --regexp --file --max-count --glob --type --type-not",
    "jq": "--arg --argjson --slurpfile --rawfile --indent -f --from-file",
    "awk": "-F -v -f -e --field-separator --assign --file --source",
    "sed": "-e -f -l --expression --file --line-length",
    "truncate": "-s --size -r --reference",
    "touch": "-d --date -t -r --reference",
    "mkdir": "-m --mode",
    "cp": "-t --target-directory -S --suffix",
    "mv": "-t --target-directory -S --suffix",
    "ln": "-t --target-directory -S --suffix",
    "install": "-t --target-directory -S --suffix -m --mode -o --owner -g --group",
    "tree": "-L -o -I -P --filelimit --charset",
    "du": "-d --max-depth -B --block-size -t --threshold --exclude",
    "diff": "-L --label -I --ignore-matching-lines -x --exclude -X --exclude-from -S",
    "ls": "-I --ignore -T --tabsize -w --width --hide",
    "xxd": "-l -s -c -g -o",
    "od": "-A -j -N -t -w",
    "chmod": "--reference",
    "curl": "-o --output -T --upload-file -d --data --data-binary --data-raw --data-ascii "
    "--data-urlencode -F --form -H --header -u --user -X --request -K --config -x --proxy "
    "-e --referer -A --user-agent -b --cookie -c --cookie-jar --url -m --max-time "
    "--connect-timeout --retry -w --write-out --resolve --connect-to -D --dump-header",
    "wget": "-O --output-document -o --output-file -a --append-output -P --directory-prefix "
    "-i --input-file -U --user-agent --header -e --execute -t --tries -T --timeout",
    "git": "-C -c --git-dir --work-tree --namespace -b --branch -o --origin --depth --config "
    "--reference --reference-if-able --separate-git-dir -u --upload-pack --template -j --jobs "
    "--filter --shallow-since --shallow-exclude --server-option --bundle-uri",
}
_ALIASES = {"egrep": "grep", "fgrep": "grep", "gawk": "awk", "mawk": "awk", "nawk": "awk"}
_VALUED_SETS = {
    name: frozenset(_VALUED[_ALIASES.get(name, name)].split()) for name in [*_VALUED, *_ALIASES]
}
GIT_VALUED = _VALUED_SETS["git"]  # global options (hoisted after the subcommand) and clone's

# Option values that are paths, per program, with the action.
_OPTION_PATHS: dict[str, dict[str, FileAction]] = {
    "sort": {"-o": WRITE, "--output": WRITE},
    "tree": {"-o": WRITE},
    "grep": {"-f": READ, "--file": READ},
    "rg": {"-f": READ, "--file": READ},
    "jq": {"-f": READ, "--from-file": READ},
    "curl": {"-o": WRITE, "--output": WRITE, "-T": READ, "--upload-file": READ},
    "wget": {
        "-O": WRITE,
        "--output-document": WRITE,
        "-o": WRITE,
        "--output-file": WRITE,
        "-a": WRITE,
        "--append-output": WRITE,
        "-P": WRITE,
        "--directory-prefix": WRITE,
        "-i": READ,
        "--input-file": READ,
    },
    "cp": {"-t": WRITE, "--target-directory": WRITE},
    "mv": {"-t": WRITE, "--target-directory": WRITE},
    "ln": {"-t": WRITE, "--target-directory": WRITE},
    "install": {"-t": WRITE, "--target-directory": WRITE},
}
_DATA_OPTIONS = {
    "-d",
    "--data",
    "--data-binary",
    "--data-ascii",
    "--data-urlencode",
    "-F",
    "--form",
}


def path_like(word: Word) -> bool:
    if word.kind is WordKind.UNKNOWN:
        return False
    value = word.value
    return value.startswith(("/", "./", "../", "~")) or value in {".", ".."} or word.tilde


def path_arguments(program: str, words: Sequence[Word], problems: list[str]) -> list[PathArgument]:
    """The paths among ``words`` (the arguments after the program name)."""
    if program in NO_PATHS:
        return []
    valued = _VALUED_SETS.get(program, frozenset())
    found, operands = split_arguments(words, valued)
    result: list[PathArgument] = []
    specific = _OPTION_PATHS.get(program, {})
    for name, value in found:
        if value is None:
            continue
        if name in specific:
            result.append(PathArgument(specific[name], value, f"{program} {name}"))
        elif program == "curl" and name in _DATA_OPTIONS and "@" in value.value:
            path = value.value.split("@", 1)[1]
            result.append(PathArgument(READ, Word(path, value.kind), f"{program} {name} @"))
        elif program == "curl" and name in {"-K", "--config"}:
            problems.append("curl -K reads more options from a file")
        elif path_like(value):
            result.append(PathArgument(None, value, f"{program} {name}"))
    names = {name for name, _ in found}

    recursive = program == "rg" or bool(
        names & RECURSIVE_OPTIONS.get(_ALIASES.get(program, program), set())
    )
    if program in {"grep", "egrep", "fgrep"}:
        # -d recurse / --directories=recurse is -r.
        recursive = recursive or any(
            name in {"-d", "--directories"} and value is not None and value.value == "recurse"
            for name, value in found
        )

    def operand_paths(action: FileAction | None, items: Sequence[Word]) -> None:
        for item in items:
            if action is None and not path_like(item):
                continue
            result.append(
                PathArgument(action, item, f"argument of {program}:", recursive and action is READ)
            )

    if program in PATTERN_FIRST and not names & PATTERN_FIRST[program]:
        operands = operands[1:]  # the pattern / program text, not a path
    if recursive and program in {"grep", "egrep", "fgrep", "rg"} and not operands:
        operands = [Word(".")]  # grep -r PATTERN searches the working directory
    if program in {"awk", "gawk", "mawk", "nawk"}:
        operands = [word for word in operands if "=" not in word.value]  # var=value
    if program == "sed" and names & {"-i", "--in-place"}:
        operand_paths(WRITE, operands)
    elif program == "uniq":
        operand_paths(READ, operands[:1])
        operand_paths(WRITE, operands[1:2])
    elif program in READERS:
        operand_paths(READ, operands)
    elif program in WRITERS:
        operand_paths(WRITE, operands)
    elif program in DELETERS:
        operand_paths(DELETE, operands)
        if program == "shred":
            operand_paths(WRITE, operands)
    elif program in MODE_FIRST:
        operand_paths(WRITE, operands if "--reference" in names else operands[1:])
    elif program in COPIERS:
        if program == "cp" and names & {"-s", "--symbolic-link"}:
            problems.append("cp -s creates symbolic links, which path rules cannot follow")
        _copy_paths(program, operands, names, operand_paths)
    elif program == "dd":
        for operand in operands:
            key, _, path = operand.value.partition("=")
            if key in {"if", "of"}:
                action = READ if key == "if" else WRITE
                result.append(PathArgument(action, Word(path, operand.kind), f"dd {key}="))
    elif program == "git" and operands[:1] and operands[0].value == "clone":
        _git_clone_paths(operands[1:], operand_paths)
    else:
        operand_paths(None, operands)
    return result


def _copy_paths(program: str, operands: list[Word], names: set[str], add: _Adder) -> None:
    source_action = DELETE if program == "mv" else READ
    if names & {"-t", "--target-directory"}:
        add(source_action, operands)
    elif len(operands) == 1 and program == "ln":
        add(READ, operands)
        add(WRITE, [Word(posixpath.basename(operands[0].value), operands[0].kind)])
    else:
        add(source_action, operands[:-1])
        add(WRITE, operands[-1:])


def _git_clone_paths(operands: list[Word], add: _Adder) -> None:
    if len(operands) >= 2:
        add(WRITE, operands[1:2])
    elif operands:
        url = operands[0]
        name = url.value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        name = name.removesuffix(".git") or "repository"
        add(WRITE, [Word(name, url.kind) if url.kind is not WordKind.UNKNOWN else url])

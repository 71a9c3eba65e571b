"""Decompose a shell command line into every simple command it can run.

``decompose()`` parses the line (plain lines with ``fastparse``, the rest with bashlex) and
walks the tree: lists, pipelines, subshells, brace groups, loops and conditionals, ``$(…)``,
backticks and ``<(…)``/``>(…)``, and it re-parses command strings handed to ``bash -c``/
``sh -c``, ``eval`` and to a shell reading a here-document. Each simple command becomes an
:class:`Invocation`:

* ``views`` — the command as written and again after each harmless wrapper is stripped
  (``timeout 5 nice curl x`` → ``nice curl x`` → ``curl x``). Deny and ask rules are checked
  against every view, so a wrapper can neither hide a denied command nor be denied itself;
* ``effective`` — the innermost view, the only one an allow rule may match;
* ``problems`` — reasons the command cannot be judged (a variable as the program name,
  inline Python, a here-document with ``$(…)`` …): such a command is never allowed;
* ``files`` / ``network`` — paths it reads, writes or deletes (redirections, arguments of
  known commands) and raw sockets (``/dev/tcp/host/port``).

Commands run *by* another command (``sudo X``, ``find -exec X``, ``bash -c X``) are separate
invocations after their runner.

Nothing here knows the rules; ``engine`` judges the invocations.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import bashlex
import bashlex.errors
import bashlex.subst

from approvals.rules import fastparse
from approvals.rules.fileargs import unmodelled_paths
from approvals.rules.model import FileAction
from approvals.rules.patterns import SENTINEL
from approvals.rules.programs import Role, understand
from approvals.rules.programs.configuration import configures
from approvals.rules.text import describe, hidden_characters, sanitise
from approvals.rules.words import (
    PIP_NAME,
    PYTHON_NAME,
    Options,
    Word,
    WordKind,
    brace_expand,
    integer_literal,
    literal,
    names,
    options,
    program_name,
    render,
    scan_options,
    scan_word,
    unknown,
)

MAX_COMMAND_LENGTH = 4096
MAX_NESTING = 4  # bash -c inside eval inside sh -c …: deeper than this is not judged
TRUSTED_BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)
KNOWN_VARIABLES = ("WORKSPACE", "CONTEXT_ID")


@dataclass(frozen=True)
class View:
    """A simple command as rules see it. ``trusted``: the program is a bare name (found on
    PATH) or lives in a trusted bin directory, so an allow rule may match its basename;
    ``./ls`` or ``/workspace/x/ls`` is not ``ls`` for an allow rule (but is for a deny)."""

    words: tuple[Word, ...]
    program: str
    trusted: bool


@dataclass(frozen=True)
class FileAccess:
    """``action`` None: a path argument of a command whose use of it is unknown — only a
    deny/ask rule for any action matters, and then the answer is ask. ``path`` None: not
    known before run time. ``uncertain``: one of several paths the word may name (the
    working directory is one of several), so a deny matching it means ask, not deny.
    ``require_allow``: without a matching allow rule this is ask (redirections, writes and
    deletes); reads by known readers only need "not denied"."""

    action: FileAction | None
    path: str | None
    source: str
    glob: bool = False
    require_allow: bool = False
    uncertain: bool = False
    recursive: bool = False  # path is "D/<any sub-path>": a recursive read of directory D


@dataclass(frozen=True)
class NetworkAccess:
    host: str
    source: str


@dataclass(frozen=True)
class Invocation:
    text: str
    views: tuple[View, ...] = ()
    effective: View | None = None
    transparent: bool = False  # nothing of its own to allow (eval, assignment, redirect only)
    problems: tuple[str, ...] = ()
    files: tuple[FileAccess, ...] = ()
    network: tuple[NetworkAccess, ...] = ()
    origin: str = ""
    fallback: bool = False  # from a best-effort split: only a deny found in it is reported


@dataclass(frozen=True)
class Decomposition:
    invocations: tuple[Invocation, ...]


# --- small helpers ----------------------------------------------------------------------------

_CHANGES_DIRECTORY = re.compile(r"\b(?:cd|pushd|popd)\b")
_ASSIGNMENT_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")  # use with .match
_KNOWN_REFERENCE = re.compile(
    r"\$\{(WORKSPACE|CONTEXT_ID)\}|\$(WORKSPACE|CONTEXT_ID)(?![A-Za-z0-9_])"
)
_TIME_KEYWORD = re.compile(r"(^|[;&|(\n]\s*|[{]\s+|\b(?:then|do|else)\s+)time(?=\s)")
_HEREDOC_START = re.compile(r"(?<!<)<<(-?)[ \t]*(?!<)")
_HEREDOC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

# Assigning these changes which program runs or what it loads/contacts.
_DANGEROUS_VARIABLES = frozenset(
    {
        "PATH", "HOME", "IFS", "ENV", "BASH_ENV", "PROMPT_COMMAND", "PS4", "SHELLOPTS",
        "BASHOPTS", "CDPATH", "GLOBIGNORE", "BASH_LOADABLES_PATH", "PYTHONPATH",
        "PYTHONSTARTUP", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
        "NODE_OPTIONS", "NODE_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_DIR",
        "GIT_PROXY_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER",
        "GIT_PAGER", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
        "PIP_TRUSTED_HOST", "PIP_CONFIG_FILE", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX",
        "UV_DEFAULT_INDEX", "NPM_CONFIG_REGISTRY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
        "WORKSPACE", "CONTEXT_ID", "CURL_HOME", "WGETRC", "NETRC", "GOPROXY", "GOFLAGS",
        "CARGO_HOME",
    }
)  # fmt: skip
# Whole families: git reads config, hooks, diff and editor programs from GIT_* and
# $XDG_CONFIG_HOME/git/config (a file the agent may have written in its workspace); pip
# and uv take every option from PIP_* / UV_*.
_DANGEROUS_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_", "NPM_CONFIG_", "PIP_", "UV_", "XDG_")


def _dangerous_variable(name: str) -> bool:
    upper = name.upper()
    return upper in _DANGEROUS_VARIABLES or upper.startswith(_DANGEROUS_PREFIXES)


# What the environment of a command may be given (``NAME=value cmd``, ``env NAME=value``,
# ``export NAME=value``): a list of bad variables can never be complete (glibc, Python, TLS
# libraries and every tool read their own), so only these, with plain values, are allowed.
# A value with "/" would make a locale or terminal name a path.
_PLAIN_VALUE = r"[A-Za-z0-9_.,:@+=-]*"
HARMLESS_ENVIRONMENT = dict.fromkeys(
    (
        "LANG", "LANGUAGE", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC",
        "LC_TIME", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CI",
        "DEBIAN_FRONTEND", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
        "PYTHONIOENCODING", "PYTHONUTF8", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_NO_INPUT",
        "PIP_NO_CACHE_DIR", "PIP_PROGRESS_BAR", "GIT_TERMINAL_PROMPT",
    ),
    re.compile(_PLAIN_VALUE),
)  # fmt: skip


def environment_problem(name: str, value: Word) -> str | None:
    """Why giving a command's environment ``name=value`` cannot be allowed (None: it can)."""
    pattern = HARMLESS_ENVIRONMENT.get(name)
    if pattern is None:
        return f"{name} is not an environment variable the engine knows to be harmless"
    if value.kind is WordKind.UNKNOWN or not pattern.fullmatch(value.value.strip("\"'")):
        return f"the value of {name} is not a plain word ({value.display})"
    return None


def _unquoted_glob(raw: str) -> bool:
    """Does the source text of a word contain an unquoted glob or brace expansion?"""
    if not any(char in raw for char in "*?[{"):
        return False
    quote = ""
    index = 0
    brace_open = False
    while index < len(raw):
        char = raw[index]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\":
            index += 1
        elif quote == '"':
            if char == '"':
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "$" and raw[index + 1 : index + 2] == "{":
            close = raw.find("}", index)
            index = close if close != -1 else len(raw)
        elif char in "*?[":
            return True
        elif char == "{":
            brace_open = True
        elif brace_open and (char == "," or raw.startswith("..", index)):
            return True
        index += 1
    return False


def normalise_path(path: str) -> str:
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


# The working directories a command may run in; None when unknown. It is a set because a
# "cd" may fail (bash then stays where it was): after "cd /etc", a relative path names a file
# in /etc *or* in the previous directory.
Cwd = frozenset[str] | None
MAX_CWDS = 4


def resolve_paths(word: Word, cwd: Cwd) -> list[str] | None:
    """The absolute, normalised paths a word may name, or None when that depends on run time
    (variables, ``~``, an unknown working directory)."""
    if word.kind is WordKind.UNKNOWN or word.tilde:
        return None
    values = [word.value]
    if word.brace:
        # {/etc/passwd,} is /etc/passwd: judge every word the braces expand to.
        expanded = brace_expand(word.value)
        if not expanded:
            return None
        values = expanded
    if cwd is None and not all(value.startswith("/") for value in values):
        return None
    return sorted(
        {
            normalise_path(value if value.startswith("/") else posixpath.join(directory, value))
            for value in values
            for directory in (cwd or ("/",))
        }
    )


# --- wrappers: stripped before matching -------------------------------------------------------


@dataclass
class Unwrapped:
    rest: list[Word] | None  # the wrapped command, or None when nothing is wrapped
    problems: list[str] = field(default_factory=list)
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    files: list[tuple[FileAction, Word]] = field(default_factory=list)
    chdir: Word | None = None
    code: list[Word] = field(default_factory=list)  # files the wrapper runs as code


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


def _plain(name: str) -> Callable[[list[Word]], Unwrapped]:
    def unwrap(words: list[Word]) -> Unwrapped:
        return _after_options(words, options(), name)

    return unwrap


def _command(words: list[Word]) -> Unwrapped:
    scan = scan_options(words, 1, options("", "-p -v -V"), "command")
    if scan.has("-v", "-V"):
        return Unwrapped(None, scan.problems)  # "command -v x" looks x up, runs nothing
    return Unwrapped(words[scan.end :] or None, scan.problems)


def _exec(words: list[Word]) -> Unwrapped:
    return _after_options(words, options("-a", "-c -l"), "exec")


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
    chdir = scan.values("-C", "--chdir")
    result.chdir = chdir[-1] if chdir else None
    index = scan.end
    while index < len(words):
        word = words[index]
        match = _ASSIGNMENT_WORD.match(word.value)
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


def _xargs(words: list[Word]) -> Unwrapped:
    # -e[EOF], -i[R] and -l[N] take an optional *attached* value; rewrite them first.
    normalised: list[Word] = []
    replace_with: str | None = None
    for index, word in enumerate(words):
        value = word.value
        if index and word.kind is WordKind.LITERAL and re.fullmatch(r"-[eil].*", value):
            if value.startswith("-i"):
                replace_with = value[2:] or "{}"
                continue
            normalised.append(literal({"e": "-E", "l": "-L"}[value[1]]))
            normalised.append(literal(value[2:] or "1"))
            continue
        normalised.append(word)
    scan = scan_options(normalised, 1, _XARGS, "xargs")
    result = Unwrapped(None, scan.problems)
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


@dataclass(frozen=True)
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


def _python_module(words: list[Word]) -> Unwrapped:
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


def _hoist(spec: Options) -> Callable[[list[Word]], Unwrapped]:
    """``git -C repo push`` is judged as ``git push -C repo`` too, so global options placed
    before the subcommand cannot dodge a ``shell(git push:*)`` deny (same for pip, npm)."""

    def unwrap(words: list[Word]) -> Unwrapped:
        scan = scan_options(words, 1, spec, words[0].value)
        if scan.end == 1 or scan.end >= len(words):
            return Unwrapped(None)
        head, subcommand = words[0], words[scan.end]
        return Unwrapped([head, subcommand, *words[1 : scan.end], *words[scan.end + 1 :]])

    return unwrap


_GIT_GLOBAL = options(
    "-C -c --git-dir --work-tree --namespace --super-prefix --config-env --list-cmds",
    strict=False,
)
_PIP_GLOBAL = options(
    "--python --log --log-file --proxy --retries --timeout --exists-action --trusted-host "
    "--cert --client-cert --cache-dir --use-feature --use-deprecated --keyring-provider",
    strict=False,
)
_NPM_GLOBAL = options(
    "--registry --prefix --userconfig --cache --loglevel -w --workspace", strict=False
)

WRAPPERS: dict[str, Callable[[list[Word]], Unwrapped]] = {
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
    "git": _hoist(_GIT_GLOBAL),
    "npm": _hoist(_NPM_GLOBAL),
}


# --- things we refuse to judge ------------------------------------------------------------------

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
# Interpreters whose inline code we cannot read: option letters that introduce code.
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
AWK = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_OPTIONS = options(
    "-F --field-separator -v --assign -f --file -e --source -i --include -l --load -E --exec",
    strict=False,
)
ASSIGNING_BUILTINS = frozenset(
    {"printf", "read", "mapfile", "readarray", "declare", "typeset", "export", "local"}
    | {"readonly", "getopts", "unset"}
)
_ASSIGNED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[.*\])?", re.DOTALL)
# Options of read/mapfile whose value is the next word, not a variable name.
_NAME_BUILTIN_VALUED = {
    "read": frozenset("dinNptu"),
    "mapfile": frozenset("dnOsuCc"),
    "readarray": frozenset("dnOsuCc"),
}
_WATCH = options(
    "-n --interval -d --differences -q --equexit",
    "-t --no-title -b --beep -e --errexit -g --chgexit -c --color -x --exec -p --precise -w "
    "--no-wrap",
)
_AWK_DANGER = re.compile(r"system\s*\(|\||getline|\bprint[f]?\b[^;{}\n]*>|@load|@include")
# GNU sed's long options (canonical names; "--silent" is "--quiet") and short flags.
_SED_LONG = {
    name: name.replace("--silent", "--quiet")
    for name in names(
        "--expression --file --line-length --quiet --silent --debug --follow-symlinks "
        "--in-place --null-data --zero-terminated --posix --regexp-extended --separate "
        "--sandbox --unbuffered --binary --help --version"
    )
}
_SED_FLAGS = frozenset("nsEruzb")


@dataclass(frozen=True)
class _Context:
    text: str  # the source the current bashlex positions refer to
    origin: str
    depth: int
    stdin: str | None = None  # "pipe" when fed by a pipeline


def _crude_fragments(text: str) -> list[list[Word]]:
    """Best-effort split of text bashlex rejected, used only to let a deny rule still win.
    Invisible characters are dropped (``cu\u200brl`` is judged as ``curl``), control
    characters and odd spaces become word breaks."""
    hidden = set(hidden_characters(text))
    cleaned = "".join(
        (" " if unicodedata.category(char) in {"Cc", "Zs", "Zl", "Zp"} else "")
        if char in hidden
        else char
        for char in text
    )
    fragments = re.split(r"\$\(|<\(|>\(|[;&|\n(){}`]", cleaned)
    result = []
    for fragment in fragments:
        words = [literal(word) for word in re.sub(r"['\"\\]", "", fragment).split()]
        if words:
            result.append(words)
    return result


class _Walker:
    def __init__(self, workspace: str, expand: dict[str, str]) -> None:
        self.workspace = workspace
        self.expand = expand
        self.cwd: Cwd = frozenset({workspace})
        self.out: list[Invocation] = []
        # The workspace (its .venv/bin included) is the agent's to write: never trusted.
        self.trusted_dirs = TRUSTED_BIN_DIRS

    # -- entry points --

    def run_text(self, text: str, origin: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.out.append(
                Invocation(text=sanitise(text), problems=("nested too deeply to judge",))
            )
            self.fallback(text, "nested too deeply to judge", origin)
            return
        try:
            trees, parsed = _parse(text)
        except Exception as error:  # noqa: BLE001 - bashlex raises many types; all mean "cannot parse"
            reason = f"unparseable: {_error_message(error)}"
            self.out.append(Invocation(text=sanitise(text), problems=(reason,), origin=origin))
            self.fallback(text, reason, origin)
            return
        context = _Context(text=parsed, origin=origin, depth=depth)
        for tree in trees:
            self.node(tree, context)

    def fallback(self, text: str, reason: str, origin: str) -> None:
        """Judge crude fragments of text that could not be parsed, so that an obvious deny
        still wins; nothing from a fallback can ever be allowed."""
        start = len(self.out)
        saved_cwd = self.cwd
        for words in _crude_fragments(text):
            context = _Context(text=text, origin="best-effort split", depth=MAX_NESTING)
            self.simple(words, [], [], context, render(words), [])
        self.cwd = saved_cwd
        self.out[start:] = [
            replace(
                item,
                effective=None,
                transparent=False,
                problems=(*item.problems, reason),
                fallback=True,
            )
            for item in self.out[start:]
        ]

    # -- tree walking --

    def in_subshell(self, node: Any, context: _Context) -> None:
        """Walk ``node`` as bash runs it in a child process: a ``cd`` inside stays inside."""
        saved = self.cwd
        self.node(node, context)
        self.cwd = saved

    def node(self, node: Any, context: _Context) -> None:
        kind = node.kind
        if kind in {"while", "until", "for"} and _CHANGES_DIRECTORY.search(
            context.text[node.pos[0] : node.pos[1]]
        ):
            # Each iteration starts where the previous one left off: give up on the cwd.
            self.cwd = None
        if kind in {"list", "if", "while", "until"}:
            parts = node.parts
            for index, part in enumerate(parts):
                following = parts[index + 1] if index + 1 < len(parts) else None
                if part.kind in {"operator", "reservedword"}:
                    continue
                if following is not None and getattr(following, "op", None) == "&":
                    self.in_subshell(part, context)  # a background job is a child process
                else:
                    self.node(part, context)
        elif kind == "pipeline":
            piped = False
            commands = [part for part in node.parts if part.kind not in {"pipe", "reservedword"}]
            for part in node.parts:
                if part.kind == "pipe":
                    piped = True
                elif part.kind != "reservedword":
                    part_context = replace(context, stdin="pipe" if piped else context.stdin)
                    if len(commands) > 1:
                        self.in_subshell(part, part_context)  # each element is a child process
                    else:
                        self.node(part, part_context)
        elif kind == "compound":
            self.compound(node, context)
        elif kind == "for":
            self.for_loop(node, context)
        elif kind == "function":
            source = sanitise(context.text[node.pos[0] : node.pos[1]])
            self.out.append(
                Invocation(
                    text=source,
                    problems=("defines a shell function; calls to it cannot be judged",),
                    origin=context.origin,
                )
            )
            for part in node.parts:
                if part.kind == "compound":
                    self.compound(part, context)
        elif kind == "command":
            self.command(node, context)
        elif kind in {"operator", "reservedword", "pipe"}:
            return
        else:
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=(f"unsupported shell construct ({kind})",),
                    origin=context.origin,
                )
            )

    def compound(self, node: Any, context: _Context) -> None:
        items = node.list
        redirects = getattr(node, "redirects", None) or []
        if redirects:
            # Opened before the group runs, so relative to the directory it starts in.
            problems: list[str] = []
            parsed = [self.redirect(item, context, problems) for item in redirects]
            text = sanitise(context.text[node.pos[0] : node.pos[1]])
            self.out.append(self.invocation_without_command(text, [], parsed, context, problems))
        subshell = bool(items) and items[0].kind == "reservedword" and items[0].word == "("
        saved = self.cwd
        if (
            len(items) > 1
            and items[0].kind == "reservedword"
            and items[0].word == "("
            and items[1].kind == "compound"
            and items[1].list
            and items[1].list[0].kind == "reservedword"
            and items[1].list[0].word == "("
        ):
            # bashlex reads the arithmetic command ((…)) as two nested subshells.
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=("arithmetic command ((…)) is not judged",),
                    origin=context.origin,
                )
            )
        for item in items:
            if item.kind != "reservedword":
                self.node(item, context)
        if subshell:
            self.cwd = saved

    def for_loop(self, node: Any, context: _Context) -> None:
        problems: list[str] = []
        seen_in = False
        for part in node.parts:
            if part.kind == "reservedword":
                seen_in = seen_in or part.word == "in"
            elif part.kind == "word":
                word = self.word(part, context, problems)
                if not seen_in and _dangerous_variable(word.value):
                    problems.append(f"the loop assigns {word.value}, which changes what runs")
            else:
                self.node(part, context)
        if problems:
            self.out.append(
                Invocation(
                    text=sanitise(context.text[node.pos[0] : node.pos[1]]),
                    problems=tuple(problems),
                    origin=context.origin,
                )
            )

    # -- words --

    def word(self, node: Any, context: _Context, problems: list[str]) -> Word:
        """The word's value comes from our own quote removal (``scan_word``); bashlex only
        supplies the structure and the substitutions, which are judged as commands."""
        raw = context.text[node.pos[0] : node.pos[1]]
        reported = 0
        whole_process_substitution = False
        for part in node.parts:
            if part.kind in {"commandsubstitution", "processsubstitution"}:
                reported += 1
                origin = part.kind.replace("substitution", " substitution")
                self.in_subshell(part.command, replace(context, origin=origin, stdin=None))
                whole_process_substitution = (
                    part.kind == "processsubstitution" and part.pos == node.pos
                )
        scanned = scan_word(raw, self.expand)
        if scanned.problem:
            problems.append(scanned.problem)
        if scanned.substitutions > reported:
            problems.append(f"a command substitution in {sanitise(raw)} could not be judged")
        if whole_process_substitution and reported == 1:
            return literal("/dev/fd/63")  # what the command really receives: a pipe
        if scanned.value is None:
            return unknown(sanitise(raw))
        kind = WordKind.GLOB if _unquoted_glob(raw) else WordKind.LITERAL
        brace = kind is WordKind.GLOB and "{" in raw and brace_expand(raw) != [raw]
        if brace and re.search(r"['\"\\]", raw):
            # Quoted parts mixed with brace expansion: the expansion of the quote-removed
            # value would differ from bash's. Only known at run time, as far as paths go.
            return unknown(sanitise(raw))
        return Word(scanned.value, kind, scanned.tilde, brace)

    def redirect(self, node: Any, context: _Context, problems: list[str]) -> tuple[str, Any]:
        """(operator, target) where target is a Word, a here-document body (str), or None
        for descriptor duplication/closing."""
        operator = node.type
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            body = heredoc.value.rsplit("\n", 1)[0] if "\n" in heredoc.value else ""
            if "$(" in body or "`" in body:
                problems.append("here-document with command substitution is not judged")
            return operator, body
        target = node.output
        if isinstance(target, int | str):
            return operator, None
        word = self.word(target, context, problems)
        if operator in {">&", "<&"} and re.fullmatch(r"\d+-?|-", word.value):
            return operator, None
        return operator, word

    # -- commands --

    def command(self, node: Any, context: _Context) -> None:
        slot = len(self.out)
        problems: list[str] = []
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[tuple[str, Any]] = []
        for part in node.parts:
            if part.kind in {"word", "assignment"}:
                word = self.word(part, context, problems)
                # bash reads NAME=value before the program as an assignment wherever it is
                # (bashlex does not after a redirection): "> f X=1 curl" runs curl.
                name = _ASSIGNMENT_WORD.match(context.text, part.pos[0], part.pos[1])
                if name and not words:
                    assignments.append(
                        (name.group(1), replace(word, value=word.value[name.end() - part.pos[0] :]))
                    )
                else:
                    words.append(word)
            elif part.kind == "redirect":
                redirects.append(self.redirect(part, context, problems))
            else:
                problems.append(f"unsupported part of a command ({part.kind})")
        text = sanitise(context.text[node.pos[0] : node.pos[1]])
        self.simple(words, assignments, redirects, context, text, problems, slot)

    def invocation_without_command(
        self,
        text: str,
        assignments: list[tuple[str, Word]],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
    ) -> Invocation:
        files, network = self.redirect_accesses(redirects)
        for name, value in assignments:
            problems.extend(self.assignment_problems(name, value, exported=False))
        return Invocation(
            text=text,
            transparent=True,
            problems=tuple(problems),
            files=tuple(files),
            network=tuple(network),
            origin=context.origin,
        )

    def simple(
        self,
        words: list[Word],
        assignments: list[tuple[str, Word]],
        redirects: list[tuple[str, Any]],
        context: _Context,
        text: str,
        problems: list[str],
        slot: int | None = None,
    ) -> None:
        slot = len(self.out) if slot is None else slot
        # An empty quoted word ('' or "") is a real argument (grep -r '' /etc: the pattern
        # is '', /etc a path); only leading ones are dropped, as before, to find the program.
        start = 0
        while (
            start < len(words) and not words[start].value and words[start].kind is WordKind.LITERAL
        ):
            start += 1
        words = words[start:]
        if not words:
            item = self.invocation_without_command(text, assignments, redirects, context, problems)
            self.out.insert(slot, item)
            return
        files, network = self.redirect_accesses(redirects)
        for name, value in assignments:
            problems.extend(self.assignment_problems(name, value, exported=True))
        views: list[View] = []
        current = words
        chdir: Word | None = None
        while True:
            head = current[0]
            if head.kind is WordKind.UNKNOWN:
                problems.append(f"the program name {head.display} is not known before run time")
                break
            if head.kind is WordKind.GLOB or head.tilde:
                problems.append(f"the program name {head.display} is expanded by the shell")
                break
            views.append(self.view(current))
            name = program_name(head)
            unwrap = WRAPPERS.get(name)
            if unwrap is None and PYTHON_NAME.match(name):
                unwrap = _python_module
            elif unwrap is None and PIP_NAME.match(name):
                unwrap = _hoist(_PIP_GLOBAL)
            if unwrap is None:
                break
            result = unwrap(current)
            problems.extend(result.problems)
            for wrapper_name, value in result.assignments:
                problems.extend(self.assignment_problems(wrapper_name, value, exported=True))
            files.extend(self.accesses_of(result.files, "wrapper option", self.cwd))
            for code in result.code:
                problems.extend(self.code_problems(program_name(head), code, self.cwd))
            chdir = result.chdir or chdir
            if result.rest is None:
                break
            current = result.rest
        effective = views[-1] if views and views[-1].words == tuple(current) else None
        cwd = self.cwd
        if chdir is not None:
            chdir_paths = resolve_paths(chdir, self.cwd)
            cwd = frozenset(chdir_paths) if chdir_paths else None
        inner: list[tuple[list[Word], str, Cwd]] = []
        transparent = False
        if effective is not None:
            transparent = self.inspect(
                effective, views, redirects, context, problems, files, inner, network, cwd
            )
        item = Invocation(
            text=text,
            views=tuple(views),
            effective=effective,
            transparent=transparent,
            problems=tuple(dict.fromkeys(problems)),
            files=tuple(files),
            network=tuple(network),
            origin=context.origin,
        )
        self.out.insert(slot, item)
        for inner_words, origin, inner_cwd in inner:
            saved = self.cwd
            self.cwd = inner_cwd
            self.simple(
                inner_words, [], [], replace(context, origin=origin), render(inner_words), []
            )
            self.cwd = saved  # a command run by another one cannot move this shell

    def view(self, words: list[Word]) -> View:
        head = words[0]
        name = program_name(head)
        if "/" not in head.value:
            trusted = True
        else:
            directory = normalise_path(posixpath.dirname(head.value) or ".")
            trusted = directory in self.trusted_dirs
        return View(words=tuple(words), program=name, trusted=trusted)

    def assignment_problems(self, name: str, value: Word, *, exported: bool) -> list[str]:
        """``exported``: the command's environment gets it (a prefix, env's, export's),
        so only harmless variables pass; a plain shell assignment reaches a child only
        when the variable is already exported, so there the known-bad list decides."""
        if name == "PATH":
            return self.path_problems(value)
        if exported:
            problem = environment_problem(name, value)
            return [problem] if problem else []
        if _dangerous_variable(name):
            return [f"assigning {name} changes what runs or what it contacts"]
        return []

    def path_problems(self, value: Word) -> list[str]:
        """PATH may only be extended with trusted directories (the seed's per-context
        virtualenv: PATH=/workspace/<ctx>/.venv/bin:$PATH)."""
        raw = value.value
        if len(raw) > 1 and raw[0] == raw[-1] == '"':
            raw = raw[1:-1]
        for entry in raw.split(":"):
            if entry in {"$PATH", "${PATH}"}:
                continue
            expanded = _KNOWN_REFERENCE.sub(
                lambda m: self.expand.get(m.group(1) or m.group(2), "$"), entry
            )
            if "$" in expanded or normalise_path(expanded or ".") not in self.trusted_dirs:
                return [f"PATH entry {entry!r} is not a trusted bin directory"]
        return []

    def redirect_accesses(
        self, redirects: list[tuple[str, Any]]
    ) -> tuple[list[FileAccess], list[NetworkAccess]]:
        files: list[FileAccess] = []
        network: list[NetworkAccess] = []
        for operator, target in redirects:
            if not isinstance(target, Word) or operator == "<<<":
                continue  # descriptors, here-documents and here-strings are not paths
            source = f"{operator} {target.display}"
            paths = resolve_paths(target, self.cwd)
            if paths is not None and len(paths) == 1:
                path = paths[0]
                if path in HARMLESS_DEVICES or re.fullmatch(r"/dev/fd/\d+", path):
                    continue
                if re.match(r"^/dev/(tcp|udp)/", path):
                    host = path.split("/")[3] if len(path.split("/")) > 3 else ""
                    network.append(NetworkAccess(host=host.lower(), source=source))
                    continue
            actions = {
                "<": [FileAction.READ],
                "<>": [FileAction.READ, FileAction.WRITE],
            }.get(operator, [FileAction.WRITE])
            for action in actions:
                files.extend(
                    self.accesses_of(
                        [(action, target)], "", self.cwd, require_allow=True, source=source
                    )
                )
        return files, network

    def accesses_of(
        self,
        items: Sequence[tuple[FileAction | None, Word]],
        what: str,
        cwd: Cwd,
        *,
        require_allow: bool | None = None,
        source: str | None = None,
    ) -> list[FileAccess]:
        """Path words as accesses. Writes and deletes need an allow rule, reads do not
        (unless ``require_allow`` says otherwise, as for redirections)."""
        result = []
        for action, word in items:
            needs_allow = (
                action in {FileAction.WRITE, FileAction.DELETE}
                if require_allow is None
                else require_allow
            )
            resolved = resolve_paths(word, cwd)
            paths: list[str | None] = [None] if resolved is None else list(resolved)
            for path in paths:
                result.append(
                    FileAccess(
                        action=action,
                        path=path,
                        source=source or f"{what} {word.display}",
                        glob=word.kind is WordKind.GLOB,
                        require_allow=needs_allow,
                        uncertain=len(paths) > 1,
                    )
                )
        return result

    def stdin_text(self, redirects: list[tuple[str, Any]], context: _Context) -> str | None:
        """The commands a shell would read on stdin when we can see them, else None."""
        for operator, target in reversed(redirects):
            if operator in {"<<", "<<-"} and isinstance(target, str):
                return target
            if operator == "<<<" and isinstance(target, Word):
                return target.value if target.kind is WordKind.LITERAL else None
            if operator == "<":
                return None
        return None

    def inspect(
        self,
        view: View,
        views: Sequence[View],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
        files: list[FileAccess],
        inner: list[tuple[list[Word], str, Cwd]],
        network: list[NetworkAccess],
        cwd: Cwd,
    ) -> bool:
        """Program-specific knowledge about the effective command. Returns True when the
        command has nothing of its own to allow (eval: its inner commands decide)."""
        words = list(view.words)
        name = view.program
        if name in ALWAYS_ASK:
            problems.append(ALWAYS_ASK[name])
        if name == "exec" and len(words) == 1 and redirects:
            problems.append("exec with only redirections changes the shell's descriptors")
        if name == "eval":
            if any(word.kind is WordKind.UNKNOWN for word in words[1:]):
                problems.append("eval of text that is only known at run time")
            else:
                text = " ".join(word.value for word in words[1:])
                self.run_text(text, "eval", context.depth + 1)
            return True
        if name == "trap" and len(words) > 2 and not words[1].value.startswith("-"):
            # The handler runs later, but it runs: judge it so a deny inside still wins.
            self.command_string(words[1], "trap", context, problems)
        if name == "watch":
            scan = scan_options(words, 1, _WATCH, "watch")
            problems.extend(scan.problems)
            if scan.end < len(words):
                joined = " ".join(word.value for word in words[scan.end :])
                arguments = words[scan.end :]
                if any(word.kind is WordKind.UNKNOWN for word in arguments):
                    problems.append("watch runs a command only known at run time")
                elif scan.has("-x", "--exec"):
                    inner.append((list(arguments), "watch", self.cwd))
                else:
                    self.command_string(literal(joined), "watch", context, problems)  # sh -c
        # What is structural — commands run by this one — is the walker's; everything the
        # command itself does with its words is its program module's (programs/).
        structural = STRUCTURAL.get(name)
        if structural is not None:
            structural(self, words, redirects, context, problems, inner, cwd)
        elif name in INLINE_CODE:
            self.interpreter(words, name, problems)
        elif name in ASSIGNING_BUILTINS:
            self.assigning_builtin(words, name, problems)
        if name in {"sudo", "doas"}:
            return False  # their command is judged as a part of its own
        self.understood(view, views, redirects, problems, files, network, cwd)
        return False

    def understood(
        self,
        view: View,
        views: Sequence[View],
        redirects: list[tuple[str, Any]],
        problems: list[str],
        files: list[FileAccess],
        network: list[NetworkAccess],
        cwd: Cwd,
    ) -> None:
        """Read the command against its program's table (programs.understand): what it
        cannot understand is a problem; the paths it uses become file accesses; the code it
        runs must not be code the agent can write."""
        words = list(view.words)
        name = view.program
        found = understand(as_written(view, views))
        problems.extend(found.problems)
        if "/" in words[0].value:
            # A program run by its path: from the workspace (its .venv/bin too) it is a
            # file the agent can write.
            problems.extend(self.code_problems(name, words[0], cwd))
        if found.chdir is not None and name in {"cd", "pushd"}:
            targets = resolve_paths(found.chdir, self.cwd) if found.chdir.value != "-" else None
            union = None if targets is None or self.cwd is None else self.cwd | set(targets)
            self.cwd = union if union is not None and len(union) <= MAX_CWDS else None
            return
        if name == "popd":
            self.cwd = None  # the directory stack is not tracked
            return
        if found.chdir is not None:
            chdir_paths = resolve_paths(found.chdir, cwd)
            cwd = frozenset(chdir_paths) if chdir_paths else None
        if not found.modelled:
            # What an unknown program does with a path is unknown: any path-looking word a
            # deny or ask rule covers makes it ask (relative ones too, from the cwd).
            for word in unmodelled_paths(words[1:]):
                files.extend(self.accesses_of([(None, word)], f"argument of {name}:", cwd))
            return
        for use in found.uses:
            action = ROLE_ACTIONS[use.role]
            files.extend(self.accesses_of([(action, use.word)], use.source, cwd))
            if use.recursive and use.word.kind is not WordKind.UNKNOWN and action is not None:
                # grep -r D, cp -r D …: every file below D. Judged as "D/…" so a deny rule
                # for any path below D applies, and an allow must cover it all.
                below = replace(use.word, value=use.word.value.rstrip("/") + "/" + SENTINEL)
                files.extend(
                    replace(access, recursive=True)
                    for access in self.accesses_of(
                        [(action, below)], use.source, cwd, require_allow=True
                    )
                )
        for created in found.creates:
            for path in resolve_paths(created, cwd) or []:
                reason = configures(path)
                if reason:
                    problems.append(f"{name} may write {sanitise(path)}, which {reason}")
        code = list(found.code)
        if name in SHELLS or PYTHON_NAME.match(name):
            code += [
                target
                for operator, target in redirects
                if operator == "<" and isinstance(target, Word)
            ]
        for word in code:
            problems.extend(self.code_problems(name, word, cwd))

    def code_problems(self, name: str, word: Word, cwd: Cwd) -> list[str]:
        """The agent's writable places are never a source of trusted code: a script, module
        or program file there (or only known at run time) may be the agent's own."""
        paths = resolve_paths(word, cwd)
        if paths is None:
            return [f"{name} runs {word.display}, which is only known at run time"]
        for path in paths:
            if path.startswith(("/dev/", "/proc/")) or path in {"/dev", "/proc"}:
                return [f"{name} runs code from {path}, which the engine cannot see"]
            if self.agent_writable(path):
                return [
                    f"{name} runs code from {sanitise(path)}, which the agent can write "
                    "(agent-written code is never allowed by a rule)"
                ]
        return []

    def agent_writable(self, path: str) -> bool:
        return any(
            path == root or path.startswith(root.rstrip("/") + "/")
            for root in (self.workspace, *WRITABLE_ROOTS)
        )

    def command_string(
        self, word: Word, origin: str, context: _Context, problems: list[str]
    ) -> None:
        """Judge a word that another shell runs as a command line (``bash -c``, ``trap``)."""
        if word.kind is not WordKind.LITERAL:
            problems.append(f"{origin}: the command string is not known before run time")
        else:
            saved = self.cwd
            self.run_text(word.value, origin, context.depth + 1)
            self.cwd = saved

    def runner(
        self,
        words: list[Word],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
        inner: list[tuple[list[Word], str, Cwd]],
        cwd: Cwd,
    ) -> None:
        name = program_name(words[0])
        spec = (
            options(
                "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir "
                "-R --chroot -T --command-timeout -r --role -t --type -U --other-user",
                "-A --askpass -b --background -E --preserve-env -e --edit -H --set-home -i "
                "--login -K --remove-timestamp -k --reset-timestamp -l --list -n "
                "--non-interactive -P --preserve-groups -S --stdin -s --shell -V --version -v "
                "--validate -B --bell -N --no-update",
            )
            if name == "sudo"
            else options("-u -C", "-n -s -L")
        )
        scan = scan_options(words, 1, spec, name)
        problems.extend(scan.problems)
        index = scan.end
        while index < len(words) and _ASSIGNMENT_WORD.match(words[index].value):
            variable = _ASSIGNMENT_WORD.match(words[index].value)
            assert variable is not None
            value = replace(words[index], value=words[index].value[variable.end() :])
            problems.extend(self.assignment_problems(variable.group(1), value, exported=True))
            index += 1
        if index < len(words):
            inner.append((words[index:], name, self.cwd))
        elif scan.has("-i", "--login", "-s", "--shell"):
            problems.append(f"{name} opens an interactive shell")

    def shell(
        self,
        words: list[Word],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
        inner: list[tuple[list[Word], str, Cwd]],
        cwd: Cwd,
    ) -> None:
        """The command string of ``-c`` and the commands a shell reads from a here-document
        are judged like any line; a script file is the shell module's (code the agent may
        have written)."""
        name = program_name(words[0])
        index = 1
        command_mode = stdin_mode = interactive = False
        while index < len(words):
            word = words[index]
            value = word.value
            if word.kind is WordKind.UNKNOWN:
                problems.append(f"{name}: argument {value} is not known before run time")
                return
            if value == "--" or value == "-":
                index += 1
                break
            if value in {"--rcfile", "--init-file"}:
                problems.append(f"{name} {value} runs a start-up file")
                index += 2
                continue
            if value.startswith("--"):
                index += 1
                continue
            if len(value) > 1 and value[0] in "-+":
                letters = value[1:]
                if "o" in letters or "O" in letters:
                    index += 1  # -o pipefail: the option name follows
                command_mode = command_mode or (value[0] == "-" and "c" in letters)
                stdin_mode = stdin_mode or "s" in letters
                interactive = interactive or "i" in letters
                index += 1
                continue
            break
        if interactive:
            problems.append(f"{name} -i starts an interactive shell")
        if command_mode:
            if index >= len(words):
                problems.append(f"{name} -c without a command string")
            else:
                self.command_string(words[index], f"{name} -c", context, problems)
            return
        if stdin_mode or index >= len(words):
            script = self.stdin_text(redirects, context)
            if script is not None:
                self.command_string(
                    literal(script), f"{name} reading a here-document", context, problems
                )
            elif any(operator == "<" for operator, _ in redirects):
                return  # like "bash script.sh": the file is code (see understood())
            else:
                problems.append(f"{name} reads commands from standard input, which is not seen")
            return

    def interpreter(self, words: list[Word], name: str, problems: list[str]) -> None:
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
                return
        positional = [w for w in words[1:] if not w.value.startswith("-")]
        if not positional:
            problems.append(f"{name} reads its program from standard input, which is not judged")

    def find(
        self,
        words: list[Word],
        redirects: list[tuple[str, Any]],
        context: _Context,
        problems: list[str],
        inner: list[tuple[list[Word], str, Cwd]],
        cwd: Cwd,
    ) -> None:
        """The commands find runs (-exec, -execdir, -ok, -okdir) are judged as commands of
        their own; what find itself reads, writes and deletes is its program module's."""
        index = 1
        starts: list[Word] = []
        while index < len(words) and not re.match(r"^[-(!),]", words[index].value):
            starts.append(words[index])
            index += 1
        starts = starts or [literal(".")]
        while index < len(words):
            value = words[index].value
            if value in {"-exec", "-execdir", "-ok", "-okdir"}:
                end = index + 1
                while end < len(words) and words[end].value not in {";", "+"}:
                    end += 1
                command = [
                    self.found_path(word, starts) if "{}" in word.value else word
                    for word in words[index + 1 : end]
                ]
                if end >= len(words) or not command:
                    self.out.append(
                        Invocation(
                            text=render(words),
                            problems=(f"find {value} without a terminated command",),
                        )
                    )
                else:
                    # -execdir runs in each match's directory: the cwd is unknown there.
                    inner_cwd = None if value.endswith("dir") else cwd
                    inner.append((command, f"find {value}", inner_cwd))
                index = end + 1
                continue
            index += 1

    @staticmethod
    def found_path(word: Word, starts: list[Word]) -> Word:
        """``{}`` in ``find START -exec cmd {} ;`` is a path below START: ``START/…``."""
        if len(starts) != 1 or starts[0].kind is not WordKind.LITERAL:
            return unknown(word.value)
        below = starts[0].value.rstrip("/") + "/" + SENTINEL
        return Word(word.value.replace("{}", below), WordKind.GLOB)

    def assigning_builtin(self, words: list[Word], name: str, problems: list[str]) -> None:
        """printf -v, read, mapfile, declare … assign variables without an '=' prefix. A
        name with a subscript (``printf -v 'a[$(id)]'``, ``read 'a[y]'``) has it evaluated
        as arithmetic, which runs command substitutions: only integer subscripts pass."""
        targets: list[Word] = []
        rest = words[1:]
        exported = False
        if name == "printf":
            targets = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w.value == "-v"]
        elif name in {"read", "mapfile", "readarray", "getopts", "unset"}:
            valued = _NAME_BUILTIN_VALUED.get(name, frozenset())
            index = 0
            while index < len(rest):
                word = rest[index]
                index += 1
                if word.kind is not WordKind.UNKNOWN and word.value.startswith("-"):
                    letters = word.value[1:]
                    for position, letter in enumerate(letters):
                        if letter in valued:
                            index += not letters[position + 1 :]  # the value is the next word
                            break
                    continue
                targets.append(word)
            if name == "getopts":
                targets = targets[1:2]  # getopts OPTSTRING NAME [ARGS]
        else:
            options_given = [w.value for w in rest if w.value.startswith(("-", "+"))]
            exported = name == "export" or any(
                v.startswith("-") and "x" in v for v in options_given
            )
            if any(v.startswith("-") and "n" in v for v in options_given):
                problems.append(f"{name} -n creates a name reference")
            if name != "export" and any("i" in v[1:] for v in options_given):
                problems.append(f"{name} -i makes assignments evaluate arithmetic; not judged")
            for w in rest:
                if w.value.startswith(("-", "+")):
                    continue
                # NAME=$VALUE: the value is unknown, the name before "=" is not.
                written = w.value.split("=", 1)[0].rstrip("+")
                plain = _ASSIGNED_NAME.fullmatch(written) and not re.search(r"[$`'\"\\]", written)
                targets.append(Word(written, WordKind.LITERAL if plain else w.kind))
        for target in targets:
            if target.kind is WordKind.UNKNOWN:
                problems.append(f"{name} assigns a variable named at run time ({target.display})")
                continue
            value = target.value
            if value == "PATH" or _dangerous_variable(value):
                problems.append(f"{name} assigns {value}, which changes what runs")
            elif exported and value.split("[", 1)[0] not in HARMLESS_ENVIRONMENT:
                problems.append(
                    f"{name} exports {value}, which is not an environment variable the engine "
                    "knows to be harmless"
                )
            subscript = re.fullmatch(r"[^\[]*\[(.*)\]", value, re.DOTALL)
            if "[" in value and (subscript is None or not integer_literal(subscript.group(1))):
                problems.append(
                    f"{name}: the subscript in {target.display} is evaluated as arithmetic"
                )


HARMLESS_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/fd/0",
        "/dev/fd/1",
        "/dev/fd/2",
    }
)


def as_written(effective: View, views: Sequence[View]) -> list[Word]:
    """The effective command as it was written: ``git -C repo status`` is also judged as
    ``git status -C repo`` (so a subcommand deny cannot be dodged), but git reads it the
    first way."""
    for view in views:
        if view.program == effective.program:
            return list(view.words)
    return list(effective.words)


Structural = Callable[
    [
        "_Walker",
        list[Word],
        list[tuple[str, Any]],
        _Context,
        list[str],
        list[tuple[list[Word], str, Cwd]],
        Cwd,
    ],
    None,
]
# Programs that run other commands: the walker judges those commands as parts of their own.
STRUCTURAL: dict[str, Structural] = {
    "sudo": _Walker.runner,
    "doas": _Walker.runner,
    "find": _Walker.find,
    **dict.fromkeys(SHELLS, _Walker.shell),
}
ROLE_ACTIONS: dict[Role, FileAction | None] = {
    Role.READ: FileAction.READ,
    Role.WRITE: FileAction.WRITE,
    Role.DELETE: FileAction.DELETE,
    Role.UNKNOWN: None,
}
# Besides the workspace, where the agent can write in a hardened sandbox (the root file
# system is read-only): code found there may be the agent's own.
WRITABLE_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")  # noqa: S108 — paths judged


def _error_message(error: Exception) -> str:
    message = str(error).strip() or type(error).__name__
    if isinstance(error, NotImplementedError) and "arithmetic" in message:
        return "arithmetic expansion $((…)) is not supported"
    return sanitise(message.splitlines()[0][:200])


def _parse(text: str) -> tuple[list[Any], str]:
    """Trees for ``text`` and the text their positions refer to. Plain leading list items are
    read by ``fastparse``; bashlex reads the rest (its positions shifted to match)."""
    trees, offset = fastparse.parse_prefix(text)
    if offset == len(text):
        return trees, text
    rest_trees, rest_text = _parse_with_bashlex(text[offset:])
    for tree in rest_trees:
        bashlex.ast.posshifter(offset).visit(tree)
    return trees + rest_trees, text[:offset] + rest_text


_bashlex_paramexpand = bashlex.subst._paramexpand


def _paramexpand_or_fail(parserobj: Any, string: str, sindex: int) -> Any:
    # bashlex 0.18 loops forever on "${" without a closing "}" inside a word (find() returns
    # -1 and the scan restarts at 0), which a single command could use to hang a worker.
    if string.startswith("${", sindex) and string.find("}", sindex + 2) == -1:
        raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, sindex)
    return _bashlex_paramexpand(parserobj, string, sindex)


bashlex.subst._paramexpand = _paramexpand_or_fail


def _heredoc_delimiter(text: str, index: int) -> tuple[str, int, bool]:
    """The delimiter word starting at ``index`` after quote removal, where it ends, and
    whether any of it was quoted. bash removes every quote and backslash from the word
    (``E\\OF``, ``E''OF``, ``"EO"F`` all mean ``EOF``) and expands nothing in it."""
    value: list[str] = []
    quoted = False
    length = len(text)
    while index < length and text[index] not in " \t\n;&|<>()":
        char = text[index]
        if char == "'":
            close = text.find("'", index + 1)
            if close == -1:
                raise bashlex.errors.ParsingError("unterminated quote in a delimiter", text, index)
            value.append(text[index + 1 : close])
            index, quoted = close + 1, True
        elif char == '"':
            index += 1
            while index < length and text[index] != '"':
                if text[index] == "\\" and text[index + 1 : index + 2] in {"$", "`", '"', "\\"}:
                    index += 1
                value.append(text[index : index + 1])
                index += 1
            if index >= length:
                raise bashlex.errors.ParsingError("unterminated quote in a delimiter", text, index)
            index, quoted = index + 1, True
        elif char == "\\":
            value.append(text[index + 1 : index + 2])
            index, quoted = index + 2, True
        else:
            value.append(char)
            index += 1
    return "".join(value), index, quoted


def unquote_heredoc_delimiters(text: str) -> str:
    """Rewrite every quoted here-document delimiter to the word bash compares body lines
    with, so that bashlex and ``fastparse`` (which only read unquoted names) end the body
    where bash does. Left quoted, ``<<E\\OF`` ended at a line ``E\\OF`` for bashlex while
    bash ended it at ``EOF`` and ran the lines after as commands. A delimiter that is quoted
    and does not come out as a plain name (spaces, ``$``, empty …) is refused: the line is
    then unparseable, which is asked about."""
    pieces: list[str] = []
    position = 0
    for match in _HEREDOC_START.finditer(text):
        if match.start() < position:
            continue  # inside a delimiter already rewritten
        name, end, quoted = _heredoc_delimiter(text, match.end())
        if not quoted:
            continue
        if not _HEREDOC_NAME.fullmatch(name):
            raise bashlex.errors.ParsingError(
                "a quoted here-document delimiter that is not a plain name is not judged",
                text,
                match.start(),
            )
        pieces.append(text[position : match.start()])
        pieces.append(f"<<{match.group(1)}{name}")
        position = end
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _parse_with_bashlex(text: str) -> tuple[list[Any], str]:
    """bashlex.parse, working around two of its gaps: the ``time`` keyword and quoted
    here-document delimiters (``<<'EOF'``). Removing the quotes around a delimiter never
    changes which characters are quoted elsewhere (each rewrite drops a matched pair), and the
    body of every here-document is treated as if it were expanded anyway. A text with a
    here-document goes to ``fastparse`` first, which builds the same trees (or raises the same
    error for a missing delimiter) when it can."""
    if "<<" in text:
        text = unquote_heredoc_delimiters(text)
        fast = fastparse.parse_or_raise(text)  # bashlex's trees or error, when it can tell
        if fast is not None:
            return fast, text
    try:
        return bashlex.parse(text), text
    except NotImplementedError as error:
        if "time" not in str(error):
            raise
        rewritten = _TIME_KEYWORD.sub(lambda m: f"{m.group(1)}\\time", text)
        return bashlex.parse(rewritten), rewritten


def _expandable(command: str) -> bool:
    """May ``$WORKSPACE``/``$CONTEXT_ID`` be replaced by their values? Not if the line could
    assign them in any way (``WORKSPACE=…``, ``read WORKSPACE``, ``for WORKSPACE in``,
    ``declare -n r=WORKSPACE`` …): any mention other than a plain reference blocks it."""
    stripped = re.sub(r"['\"\\]", "", _KNOWN_REFERENCE.sub("", command))
    return not any(name in stripped for name in KNOWN_VARIABLES)


def decompose(command: str, *, workspace: str, context_id: str) -> Decomposition:
    """Every simple command of ``command``; see the module docstring."""
    walker = _Walker(workspace, {})
    hidden = hidden_characters(command)
    if hidden:
        names = ", ".join(describe(char) for char in hidden[:3])
        reason = f"contains hidden or control characters ({names})"
        walker.out.append(Invocation(text=sanitise(command), problems=(reason,)))
        walker.fallback(command[: MAX_COMMAND_LENGTH * 4], reason, "")
        return Decomposition(tuple(walker.out))
    if len(command) > MAX_COMMAND_LENGTH:
        reason = f"longer than {MAX_COMMAND_LENGTH} characters"
        walker.out.append(Invocation(text=sanitise(command[:200]) + "…", problems=(reason,)))
        walker.fallback(command[: MAX_COMMAND_LENGTH * 4], reason, "")
        return Decomposition(tuple(walker.out))
    if not command.strip():
        return Decomposition((Invocation(text="", problems=("empty command",)),))
    if _expandable(command):
        walker.expand = {"WORKSPACE": workspace, "CONTEXT_ID": context_id}
    walker.run_text(command, "", 0)
    return Decomposition(tuple(walker.out))

"""What the walker finds in a command line: each simple command as an :class:`Invocation`
(its views, problems, file and network accesses), and the paths its words name."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from rules.model import FileAction
from rules.words import (
    Word,
    WordKind,
    brace_expand,
)

TRUSTED_BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)


@dataclass(frozen=True, slots=True)
class View:
    """A simple command as rules see it. ``trusted``: the program is a bare name (found on
    PATH) or lives in a trusted bin directory, so an allow rule may match its basename;
    ``./ls`` or ``/workspace/x/ls`` is not ``ls`` for an allow rule (but is for a deny)."""

    words: tuple[Word, ...]
    program: str
    trusted: bool


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class NetworkAccess:
    """``host`` None: only known at run time. ``by_program``: a destination an allowed
    program contacts (git clone's URL): judged by sources.json when there is one, else by
    the network rules' deny and ask lists only — like a read, it needs no allow rule."""

    host: str | None
    source: str
    by_program: bool = False


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Decomposition:
    invocations: tuple[Invocation, ...]


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
    paths = set()
    for value in values:
        for directory in cwd or ("/",):
            path = value if value.startswith("/") else directory + "/" + value
            if _NOT_NORMAL.search(path):
                path = normalise_path(path)  # the working directories are normal already
            if path.startswith("/proc/"):
                through = _through_proc(path)
                if through is None:
                    return None
                path = through
            paths.add(path)
    return sorted(paths)


# What normpath would change in an absolute path: "//", "." or ".." components, a trailing
# "/". Most paths have none, and joining them to a (normal) directory is enough.
_NOT_NORMAL = re.compile(r"//|/\.\.?(?:/|$)|/$")


# /proc/self/root (and every process's) is a link to "/"; cwd, fd/N and exe are links to
# places only known at run time.
_PROC_LINK = re.compile(
    r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/(root|cwd|fd/\d+|exe|map_files)(?=/|$)"
)


_PROC_ROOTS = re.compile(r"(?:/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/root(?=/|$))+")


def _through_proc(path: str) -> str | None:
    """The path a ``/proc/<pid>/root/…`` path names; None for links only known at run time."""
    match = _PROC_LINK.match(path)
    while match:
        if match.group(1) != "root":
            return None
        # A run of ".../root" links in a row is "/" as many times: one step for all of them
        # (the path is normal, so nothing between them needs normalising).
        chain = _PROC_ROOTS.match(path)
        end = chain.end() if chain else match.end()
        path = normalise_path("/" + path[end:])
        match = _PROC_LINK.match(path)
    return path


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

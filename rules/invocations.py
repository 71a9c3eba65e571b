"""What the walker finds in a command line: each simple command as an :class:`Invocation`
(its views, problems, file and network accesses), and the paths its words name."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
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


class Contained(str):
    """A problem an enforcing executor contains: an interpreter (python, a shell) runs code
    the engine cannot read — a script, a module, inline code, its standard input. It is
    asked about like any other problem, unless the evaluation is contained
    (``evaluate(contained=True)``: the agent type's executor holds a command to its judged
    effects) and a rule explicitly allows the interpreter (rules.engine)."""

    __slots__ = ()


class HeldFiles(Contained):
    """A contained problem about files only: a word only known at run time where a program
    whose every option only reads or writes files (head, wc, cp) could take it as an option
    or a path, or a file that lists what a package manager installs. The executor holds the
    run's reads to the image and the context and its writes to the context; unlike code, it
    needs no network for it."""

    __slots__ = ()


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
    # From the second reading, with the values the line certainly assigns (rules.shell):
    # only a deny found in it is reported, and it is no effect of its own.
    second: bool = False

    @property
    def contained_only(self) -> bool:
        """Every problem is one an enforcing executor contains (programs.base.Contained):
        an interpreter runs code the engine cannot read, and nothing else is wrong."""
        return bool(self.problems) and all(isinstance(p, Contained) for p in self.problems)


@dataclass(frozen=True, slots=True)
class Decomposition:
    invocations: tuple[Invocation, ...]


def normalise_path(path: str) -> str:
    """``path`` with "." and ".." resolved — through the links every image has first
    (:func:`resolve_links`): ``/dev/fd/../environ`` is ``/proc/self/environ``, not the
    ``/dev/environ`` a lexical normpath makes of it. Where a link leads only at run time
    (``/proc/self/cwd/..``) this falls back to the lexical path; :func:`resolve_paths`
    treats such a path as unknown instead."""
    if ".." in path or _MAGIC.search(path):
        path = resolve_links(path) or path
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


MAGIC_LINKS = {
    "/dev/fd": "/proc/self/fd",
    "/dev/stdin": "/proc/self/fd/0",
    "/dev/stdout": "/proc/self/fd/1",
    "/dev/stderr": "/proc/self/fd/2",
    "/etc/mtab": "/proc/self/mounts",
    "/dev/core": "/proc/kcore",
}
_FINAL_LINKS = frozenset({"/etc/mtab", "/dev/core"})
_MAGIC = re.compile(r"/(?:dev|etc)/+(?:fd|std(?:in|out|err)|mtab|core)(?:/|$)")


def resolve_links(path: str) -> str | None:
    """``path`` resolved component by component through :data:`MAGIC_LINKS` and /proc's
    links (``/proc/<pid>/root`` is "/"); None when a link only known at run time
    (``/proc/self/cwd``, ``fd/3``, ``exe``) has more components after it."""
    parts = [part for part in path.split("/") if part and part != "."]
    resolved: list[str] = []
    for index, part in enumerate(parts):
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        resolved.append(part)
        rest = parts[index + 1 :]
        if resolved[0] == "proc" and 3 <= len(resolved) <= 5:
            link = _PROC_LINK.match("/" + "/".join(resolved))
            if link and link.end() == len("/" + "/".join(resolved)):
                if link.group(1) == "root":
                    resolved = []
                elif rest:
                    return None
                continue
        here = "/" + "/".join(resolved)
        target = MAGIC_LINKS.get(here)
        device = not rest or (here == "/dev/fd" and len(rest) == 1 and rest[0].isdigit())
        if target is not None and (not device or here in _FINAL_LINKS):
            resolved = target.strip("/").split("/")
    return "/" + "/".join(resolved) if path.startswith("/") else "/".join(resolved)


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
            if _NOT_NORMAL.search(path) or _MAGIC.search(path):
                # (the working directories are normal already)
                resolved = resolve_links(path)
                if resolved is None:
                    return None  # through /proc/<pid>/cwd and the like: only known then
                path = normalise_path(resolved)
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


def as_written(effective: View, views: Sequence[View]) -> list[Word]:
    """The effective command as it was written: ``git -C repo status`` is also judged as
    ``git status -C repo`` (so a subcommand deny cannot be dodged), but git reads it the
    first way."""
    for view in views:
        if view.program == effective.program:
            return list(view.words)
    return list(effective.words)

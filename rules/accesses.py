"""What a command does, as its program's model reads it: the paths it reads, writes and
deletes (its words and its redirections) as file accesses, the hosts it contacts, the
code it runs that the agent may have written, and where it moves the shell."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rules.budget import spend
from rules.fileargs import unmodelled_paths
from rules.invocations import (
    HARMLESS_DEVICES,
    MAX_CWDS,
    Contained,
    Cwd,
    FileAccess,
    NetworkAccess,
    View,
    as_written,
    resolve_paths,
)
from rules.model import FileAction, host_of_url
from rules.patterns import SENTINEL
from rules.programs import Role, interprets, understand
from rules.programs.base import ShellDirectory
from rules.programs.configuration import configures
from rules.text import sanitise
from rules.words import Word, WordKind, unknown

MAX_PATHS = 40  # path words judged per line (each costs a match against every file rule)


def destination_host(word: Word) -> str | None:
    """The host of a URL a program contacts (``git@host:repo`` and a bare ``host/path``
    too); None when only known at run time or not readable."""
    if word.kind is not WordKind.LITERAL:
        return None
    value = word.value
    if "://" not in value:
        scp = re.match(r"^[^/\s@]+@([^/\s:]+):", value)
        if scp:
            return scp.group(1).lower()
        value = "http://" + value
    return host_of_url(value)


ROLE_ACTIONS: dict[Role, FileAction | None] = {
    Role.READ: FileAction.READ,
    Role.WRITE: FileAction.WRITE,
    Role.DELETE: FileAction.DELETE,
    Role.UNKNOWN: None,
}


# Besides the workspace, where the agent can write in a hardened sandbox (the root file
# system is read-only): code found there may be the agent's own.
WRITABLE_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")  # noqa: S108 — paths judged


class Accesses:
    """The walker's accounting of what each command touches (rules.walker.Walker)."""

    workspace: str
    cwd: Cwd  # the shell's working directory as far as it is known
    paths: int  # path words judged so far on this line
    paths_left_out: int  # and those past MAX_PATHS

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
            if self.paths >= MAX_PATHS:
                self.paths_left_out += 1  # reported once by finish(): the line is asked about
                continue
            self.paths += 1
            needs_allow = (
                action in {FileAction.WRITE, FileAction.DELETE}
                if require_allow is None
                else require_allow
            )
            resolved = resolve_paths(word, cwd)
            paths: list[str | None] = [None] if resolved is None else list(resolved)
            spend(len(paths))
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
        spend(len(words))
        name = view.program
        found = understand(as_written(view, views))
        first = len(problems)  # code the agent can write is the first reason given
        problems.extend(found.problems)
        if "/" in words[0].value:
            # A program run by its path: from the workspace (its .venv/bin too) it is a
            # file the agent can write.
            problems.extend(self.code_problems(name, words[0], cwd))
        if found.chdir is not None and found.chdir.kind is WordKind.GLOB:
            # cd /et? goes wherever the pattern matches first: not a place known here.
            found.chdir = unknown(found.chdir.value)
        moves = found.shell_directory
        if found.chdir is not None and moves is ShellDirectory.MOVED:
            targets = resolve_paths(found.chdir, self.cwd) if found.chdir.value != "-" else None
            union = None if targets is None or self.cwd is None else self.cwd | set(targets)
            self.cwd = union if union is not None and len(union) <= MAX_CWDS else None
            return
        if moves is ShellDirectory.FORGOTTEN:
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
            spend()
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
                spend()
                reason = configures(path)
                if reason:
                    problems.append(f"{name} may write {sanitise(path)}, which {reason}")
        for destination in found.destinations:
            network.append(
                NetworkAccess(destination_host(destination), f"{name} {destination.display}", True)
            )
        interpreter = interprets(name)
        for word in found.code:
            # Before "what the script does is not modelled": the sharper reason.
            written = self.code_problems(name, word, cwd, contained=interpreter)
            problems[first:first] = written
            first += len(written)
        if interpreter:
            for operator, target in redirects:
                if operator == "<" and isinstance(target, Word):
                    problems.extend(self.code_problems(name, target, cwd, contained=True))

    def code_problems(
        self, name: str, word: Word, cwd: Cwd, *, contained: bool = False
    ) -> list[str]:
        """The agent's writable places are never a source of trusted code: a script, module
        or program file there (or only known at run time) may be the agent's own.
        ``contained``: an interpreter runs it, which an enforcing executor can contain
        (programs.base.Contained); a program file run by its path is never contained."""
        mark = Contained if contained else str
        paths = resolve_paths(word, cwd)
        if paths is None:
            return [mark(f"{name} runs {word.display}, which is only known at run time")]
        for path in paths:
            if path.startswith(("/dev/", "/proc/")) or path in {"/dev", "/proc"}:
                return [mark(f"{name} runs code from {path}, which the engine cannot see")]
            if self.agent_writable(path):
                return [
                    mark(
                        f"{name} runs code from {sanitise(path)}, which the agent can write "
                        "(agent-written code is never allowed by a rule)"
                    )
                ]
        return []

    def agent_writable(self, path: str) -> bool:
        return any(
            path == root or path.startswith(root.rstrip("/") + "/")
            for root in (self.workspace, *WRITABLE_ROOTS)
        )

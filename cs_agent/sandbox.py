"""The executor's sandbox: bubblewrap for where a command runs, Landlock for what it may do
there, a cgroup (or rlimits) for how much.

Layers, from the outside in (docs/agent-client.md has what each one gives and does not):

1. **bubblewrap** (``bwrap``): new user, mount, PID, IPC, UTS and cgroup namespaces;
   ``pivot_root`` into a tmpfs that is remounted read-only once it is set up; the image's
   system directories bound read-only *recursively* (every sub-mount too); a ``/proc`` of
   the new PID namespace only; a minimal ``/dev``; a private ``/tmp`` of bounded size; the
   context's directory — opened without following any symbolic link, and bound by its file
   descriptor — at its own path and nothing else of the workspace; no capabilities, a new
   session, no-new-privs, killed with its parent; an empty environment but for what the
   executor sets; optionally no network at all (a namespace with loopback only).
2. **Landlock** (``cs_agent/landlock.py``, applied inside after the mounts): the command
   may read, write, create and delete only what the rules judged it to (``grants``), plus
   what every program needs (the system directories to read and run, ``/tmp``, ``/dev``).
   A misreading by the parser then fails at run time with "Permission denied".
3. **Limits**: memory and process count in a cgroup of the run's own when the executor may
   make one, else ``RLIMIT_AS``/``RLIMIT_NPROC`` inherited by every process; the time limit
   kills the whole process group.

This module knows how to build and start that; ``cs_agent.executor`` decides what to ask.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cs_agent import landlock
from cs_agent.egress import BRIDGE_PORT

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The image's programs, libraries and configuration: read-only inside, readable and
# runnable. A merged-/usr image has /bin, /lib… as links into /usr: they stay links.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
LANDLOCK_SCRIPT = Path(landlock.__file__).resolve()

# Inside the sandbox: the executor's files, read-only.
INSIDE = "/.cs-executor"
RUN_INSIDE = f"{INSIDE}/run"
RUN_BIN = f"{RUN_INSIDE}/bin"  # first on PATH
PROXY_SOCKET = f"{RUN_INSIDE}/proxy.sock"
HOME = "/tmp/home"  # noqa: S108 - the sandbox's own tmpfs: a run's home is its own
HELPERS = {
    f"{INSIDE}/launcher.py": Path(__file__).with_name("launcher.py").resolve(),
    f"{INSIDE}/landlock.py": LANDLOCK_SCRIPT,
    f"{INSIDE}/gitguard.py": Path(__file__).with_name("gitguard.py").resolve(),
}
REAL_GIT = f"{INSIDE}/git"
READ = ("read_file", "read_dir")
RUN = ("read_file", "read_dir", "execute")
# Everything below a directory: what "anywhere in the context" and /tmp get.
EVERYTHING = tuple(landlock.RIGHTS)
CREATE = ("make_reg", "make_dir", "make_sym", "make_fifo", "make_sock", "write_file", "truncate")
REMOVE = ("remove_file", "remove_dir")


class SandboxError(Exception):
    """The sandbox cannot be set up here; the message says what is missing or refused."""


# --- The context directory, opened without following links ------------------------------------


def open_context(root: Path, context_id: str) -> int:
    """An ``O_PATH`` descriptor of ``root/context_id``, created when missing. Every
    component from ``/`` down is opened relative to its parent with ``O_NOFOLLOW``, so a
    context directory that is — or whose parents are — a symbolic link is refused, and a
    swap after this call cannot redirect what is bound (bwrap binds the descriptor)."""
    if not root.is_absolute():
        raise SandboxError(f"the workspace root must be an absolute path, got {root}")
    parts = [*root.parts[1:], context_id]
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    walked = Path("/")
    try:
        for index, name in enumerate(parts):
            walked = walked / name
            try:
                child = os.open(
                    name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
            except FileNotFoundError:
                if index != len(parts) - 1:
                    raise SandboxError(f"the workspace root {root} does not exist") from None
                os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(
                    name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
                )
            except NotADirectoryError:
                kind = (
                    "a symbolic link"
                    if stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
                    else "not a directory"
                )
                raise SandboxError(f"{walked} is {kind}: the agent does not follow it") from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


# --- What the command may touch ---------------------------------------------------------------


def _tree(path: str) -> tuple[str, bool]:
    """("/a/b", True) for "/a/b/**" (everything below), ("/a/b", False) otherwise."""
    if path.endswith("/**"):
        return path[:-3] or "/", True
    return path, False


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _existing_parent(path: str) -> str:
    parent = os.path.dirname(path) or "/"
    while parent != "/" and not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    return parent


def grants_for(effects: Mapping[str, Any], context: Path) -> list[tuple[str, list[str]]]:
    """Landlock grants for the judged ``effects`` (``execution.effects`` of the service's
    answer: absolute paths read, written and deleted, ``/**`` meaning everything below).

    Reads are held exactly: a file, a directory's listing, or a tree. Writes are held to
    the directories written in: Landlock grants on files and whole directory trees, a file
    that does not exist yet has nothing to grant on, and programs write by replacing a file
    (a temporary one renamed over it); so writing or deleting P is granted as creating,
    writing and removing below P's nearest existing directory (not reading there), and an
    existing P may also be read. Only paths inside the context are granted anything but
    reads: the rest of the filesystem is read-only inside the sandbox anyway."""
    ctx = str(context)
    grants: list[tuple[str, list[str]]] = [
        *((directory, list(RUN)) for directory in SYSTEM_DIRS),
        ("/proc", list(READ)),
        ("/dev", ["read_file", "write_file", "ioctl_dev"]),
        ("/tmp", list(EVERYTHING)),  # noqa: S108 - the sandbox's own tmpfs
        # POSIX shared memory and semaphores (multiprocessing's locks): a tmpfs of its own.
        ("/dev/shm", list(EVERYTHING)),  # noqa: S108 - the sandbox's own tmpfs
        # The context's virtualenv is the executor's (seed 001): its programs run.
        (f"{ctx}/.venv", list(RUN)),
        # The executor's own: the launcher, git's guard, the run's PATH entries and the
        # egress proxy's socket (read-only mounts).
        (INSIDE, list(RUN)),
    ]
    for raw in effects.get("read") or ():
        path, tree = _tree(str(raw))
        if os.path.isdir(path):
            grants.append((path, list(READ) if tree else ["read_dir"]))
        else:
            grants.append((path, ["read_file"]))
    for action in ("write", "delete"):
        for raw in effects.get(action) or ():
            path, tree = _tree(str(raw))
            if not _inside(path, ctx):
                continue  # read-only inside: the write fails as it would anyway
            if tree:
                grants.append((path, list(EVERYTHING)))
                continue
            # Programs write by replacing (a temporary file renamed over the old one, as
            # sed -i and editors do) and read what they edit in place.
            grants.append((_existing_parent(path), [*CREATE, *REMOVE, "refer"]))
            if os.path.isfile(path):
                grants.append((path, ["read_file", "write_file", "truncate"]))
            elif action == "delete" and os.path.isdir(path):
                grants.append((path, [*REMOVE, *READ]))
    hidden = [_tree(str(raw))[0] for raw in effects.get("hidden") or ()]
    return _without(grants, hidden) if hidden else grants


def _without(
    grants: list[tuple[str, list[str]]], hidden: Sequence[str]
) -> list[tuple[str, list[str]]]:
    """``grants`` with the hidden paths (what the deny rules forbid reading) left out.
    Landlock only adds rights, so a grant on a directory that holds a hidden path becomes
    grants on each of its entries but the one leading there, and the directory keeps only
    its listing: /etc without /etc/shadow is every other entry of /etc. A hidden path
    inside a grant that creates files is left to the engine."""
    kept: list[tuple[str, list[str]]] = []
    for path, rights in grants:
        kept.extend(_split(path, rights, hidden))
    return kept


def _split(path: str, rights: list[str], hidden: Sequence[str]) -> list[tuple[str, list[str]]]:
    below = [h for h in hidden if _inside(h, path)]
    if not below or any(right.startswith("make_") for right in rights):
        # Where the command may create files (the context, /tmp), splitting would leave
        # the new ones unreadable: a deny there is the engine's to hold (docs/rules.md).
        return [(path, rights)]
    if path in below or os.path.islink(path) or not os.path.isdir(path):
        return []  # hidden itself (a path inside a file cannot exist)
    split = [(path, ["read_dir"])] if "read_dir" in rights else []
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return split
    for entry in entries:
        split.extend(_split(os.path.join(path, entry), rights, below))
    return split


def grants_cover(grants: Iterable[tuple[str, Sequence[str]]], path: str, rights: set[str]) -> bool:
    """Whether some grant gives one of ``rights`` on ``path`` (itself, or below it): by
    the paths' words alone, nothing is looked up."""
    return any(rights & set(names) and _inside(path, granted) for granted, names in grants)


# --- The agent's own imports ----------------------------------------------------------------


def refuse_importable_workspace(root: Path) -> None:
    """Refuse to work when Python could import from the workspace root: an agent started
    there (or with it on ``sys.path``) would import a context named ``cs_agent``, ``json``
    or ``os`` — a directory any contained run may fill — as its own code. The agent's
    image starts it elsewhere, with ``PYTHONSAFEPATH=1`` (deploy/agent/Dockerfile)."""
    where = os.path.realpath(root)
    for entry in sys.path:
        if os.path.realpath(entry or os.getcwd()) == where:
            shown = entry or f"the working directory ({os.getcwd()})"
            raise SandboxError(
                f"the agent imports Python code from the workspace root {root} ({shown} is "
                "on sys.path), where a context could stand in for one of its modules: start "
                "it from another directory, with PYTHONSAFEPATH=1"
            )


# --- Availability -----------------------------------------------------------------------------


@functools.cache
def bwrap_path() -> str:
    """bwrap, after checking that it can make its namespaces here (cached: the answer does
    not change while the agent runs)."""
    found = shutil.which("bwrap", path=SYSTEM_PATH)
    if found is None:
        raise SandboxError(
            "namespaces isolation needs bubblewrap (bwrap), which is not installed: install "
            "the bubblewrap package in the agent image"
        )
    probe = subprocess.run(
        [found, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--", "/bin/true"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        raise SandboxError(
            "bubblewrap cannot create its namespaces here (the Pod must allow user "
            "namespaces and mounting a new /proc; see docs/agent-client.md): "
            + probe.stderr.strip()
        )
    if landlock.abi() < 1:
        raise SandboxError(
            "namespaces isolation needs Landlock (Linux 5.13 or later, with landlock in "
            "the kernel's lsm= list) to hold commands to what was judged"
        )
    return found


@functools.cache
def sandbox_python() -> str:
    """The image's Python, which runs the Landlock launcher inside (it must be in a
    system directory: nothing else of the agent's filesystem is there)."""
    for directory in SYSTEM_PATH.split(":"):
        candidate = Path(directory) / "python3"
        if candidate.exists():
            real = os.path.realpath(candidate)
            if any(_inside(real, system) for system in SYSTEM_DIRS):
                return real
    raise SandboxError("namespaces isolation needs python3 in the image's /usr (for Landlock)")


# --- The run's own directory -------------------------------------------------------------------

# The virtualenv's entries a command may start by name: its interpreter and pip. Anything
# else in .venv/bin (a console script, or a program a run wrote there) is not on PATH.
_VENV_PROGRAM = re.compile(r"^(?:python|pip)(?:3(?:\.[0-9]+)?)?$")


def venv_programs(context_fd: int) -> list[str]:
    """The context's virtualenv's interpreter and pip (``.venv/bin/python3``…), looked up
    below the context's descriptor without following links: a ``.venv`` or ``bin`` that is
    a link is no virtualenv, and an entry that is not the venv's own is never listed."""
    try:
        venv = os.open(".venv", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=context_fd)
    except OSError:
        return []
    try:
        binaries = os.open("bin", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=venv)
    except OSError:
        return []
    finally:
        os.close(venv)
    try:
        return sorted(name for name in os.listdir(binaries) if _VENV_PROGRAM.match(name))
    finally:
        os.close(binaries)


def has_venv(context_fd: int) -> bool:
    """Whether the context has a ``.venv`` directory (a link is not one)."""
    try:
        found = os.stat(".venv", dir_fd=context_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode)


class RunDirectory:
    """The run's directory outside the sandbox (private to the agent's user), bound
    read-only at ``/.cs-executor/run``: the programs first on ``PATH`` — git's guard
    (``cs_agent/gitguard.py``) and, once the context has a virtualenv, its interpreter and
    pip, each a two-line script that starts the venv's own by its absolute path — and the
    egress proxy's socket. Removed when the run ends."""

    def __init__(self, context: Path, venv: list[str], git: str | None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="cs-run-"))
        self.git = git
        binaries = self.path / "bin"
        binaries.mkdir()
        scripts = {name: f'exec {context}/.venv/bin/{name} "$@"' for name in venv}
        if git is not None:
            scripts["git"] = f'exec {sandbox_python()} -I -S {INSIDE}/gitguard.py {REAL_GIT} "$@"'
        for name, line in scripts.items():
            script = binaries / name
            script.write_text(f"#!/bin/sh\n{line}\n")
            script.chmod(0o755)

    @property
    def socket(self) -> str:
        return str(self.path / "proxy.sock")

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def image_git() -> str | None:
    """The image's git (a regular file in a system directory), which the guard stands in
    for; None when the image has none."""
    found = shutil.which("git", path=SYSTEM_PATH)
    if found is None:
        return None
    real = os.path.realpath(found)
    return real if any(_inside(real, system) for system in SYSTEM_DIRS) else None


# --- The command line -------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    context: Path  # the path the context has inside (and outside)
    context_fd: int  # opened by open_context
    grants: list[tuple[str, list[str]]]
    run_directory: RunDirectory
    seccomp_fd: int  # the filter (cs_agent.seccomp), for bwrap to read
    bridge: bool  # the run has a network: through the egress proxy
    tmp_bytes: int  # the size of /tmp (and half of it, of /dev/shm)
    environment: Mapping[str, str] = field(default_factory=dict)
    system_dirs: tuple[str, ...] = SYSTEM_DIRS


def bwrap_argv(plan: Plan, command: str) -> list[str]:
    argv = [
        bwrap_path(),
        "--unshare-user",
        # No nested user namespace (bwrap's own, below the seccomp filter's refusal).
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        # Always a network namespace of its own, with loopback only: what leaves, leaves
        # through the egress proxy's socket (cs_agent/egress.py).
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for name, value in plan.environment.items():
        argv += ["--setenv", name, value]
    for directory in plan.system_dirs:
        if os.path.islink(directory):
            argv += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            # --ro-bind binds recursively and makes every sub-mount read-only too.
            argv += ["--ro-bind", directory, directory]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(plan.tmp_bytes // 2), "--tmpfs", "/dev/shm"]  # noqa: S108 - its own
    argv += ["--size", str(plan.tmp_bytes), "--tmpfs", "/tmp", "--dir", HOME]  # noqa: S108
    argv += ["--dir", str(plan.context.parent)]
    argv += ["--bind-fd", str(plan.context_fd), str(plan.context)]
    for inside, outside in HELPERS.items():
        argv += ["--ro-bind", str(outside), inside]
    argv += ["--ro-bind", str(plan.run_directory.path), RUN_INSIDE]
    git = plan.run_directory.git
    if git is not None:
        # The image's git by its own path is the guard too; the real one is beside it.
        argv += ["--ro-bind", git, REAL_GIT, "--ro-bind", f"{plan.run_directory.path}/bin/git", git]
    argv += ["--seccomp", str(plan.seccomp_fd)]
    # After this, nothing but the context, /tmp and /dev is writable: a stray write fails
    # ("Read-only file system") instead of landing on a tmpfs nobody sees.
    argv += ["--remount-ro", "/", "--chdir", str(plan.context), "--"]
    config = {
        "grants": plan.grants,
        "bridge": {"port": BRIDGE_PORT, "socket": PROXY_SOCKET} if plan.bridge else None,
    }
    argv += [sandbox_python(), "-I", "-S", f"{INSIDE}/launcher.py", json.dumps(config)]
    argv += ["/bin/bash", "-c", command]
    return argv


# --- What was refused -------------------------------------------------------------------------

_ERRORS = ("Permission denied", "Read-only file system", "Operation not permitted")
# A path outside every place the sandbox mounts does not exist inside it: a refusal too,
# but only there (inside a mounted place, a missing file is just missing).
_ABSENT = "No such file or directory"
NOT_MOUNTED = f"{_ABSENT} (not in the sandbox)"


def refused_effects(stderr: bytes, plan: Plan, *, limit: int = 20) -> list[dict[str, str]]:
    """The file accesses the sandbox refused, as the program's own error output names
    them: one ``{"action": read|write, "path": …, "error": …, "reportedBy": "program"}``
    per distinct one.

    The kernel does not tell a process's parent what Landlock refused, so this reads what
    the program printed: a program that swallows its errors leaves only its exit status,
    and one that prints such a line without a refusal is believed — hence "reported by the
    program". Nothing the program names is looked up outside the sandbox. (Network
    refusals are the egress proxy's own record, not read from here.)"""
    text = stderr.decode(errors="replace")
    found: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for line in text.splitlines():
        for error in (*_ERRORS, _ABSENT):
            if error not in line:
                continue
            match = _refused_in(line)
            if match is None:
                continue
            verb, path = match
            absolute = os.path.normpath(os.path.join(str(plan.context), path))
            if error == _ABSENT:
                if mounted(plan, absolute):
                    break
                error = NOT_MOUNTED
            action = _action(verb, absolute, plan, error)
            key = (action, absolute)
            if key not in seen:
                seen.add(key)
                found.append(
                    {"action": action, "path": absolute, "error": error, "reportedBy": "program"}
                )
            break
        if len(found) >= limit:
            break
    return found


_PY_ERROR = re.compile(r"\[Errno \d+\] [^:]+: '(?P<path>(?:[^'\\]|\\.)*)'")
_TOOL_ERROR = re.compile(
    r"^(?:[\w./-]+: )?(?:line \d+: )?(?P<verb>cannot [a-z ]+?|failed to [a-z ]+?)?\s*"
    r"['‘]?(?P<path>[^'’:]+?)['’]?(?: for (?P<purpose>reading|writing))?: "
    r"(?:Permission denied|Read-only file system|Operation not permitted|No such file or directory)"
)


def mounted(plan: Plan, path: str) -> bool:
    """Whether ``path`` (absolute, normalised) lies in a place the sandbox mounts: the
    system's directories, its own /proc, /dev and /tmp, the context and the executor's."""
    places = (*plan.system_dirs, "/proc", "/dev", "/tmp", str(plan.context), INSIDE)  # noqa: S108
    return any(_inside(path, place) for place in places)


def _refused_in(line: str) -> tuple[str, str] | None:
    """(the verb, the path) of one line reporting a refusal."""
    python = _PY_ERROR.search(line)
    if python:
        return "", python.group("path")
    tool = _TOOL_ERROR.search(line)
    if tool and tool.group("path").strip():
        verb = " ".join(filter(None, (tool.group("verb"), tool.group("purpose"))))
        return verb, tool.group("path").strip()
    return None


def _action(verb: str, path: str, plan: Plan, error: str) -> str:
    """Which effect a refusal was: what the message says ("for reading", "cannot create");
    else a write when the file system is read-only; else a write where the path was
    granted to be read (so reading it was not what failed), a read elsewhere. Decided
    from the words and the grants alone."""
    if verb.endswith("reading"):
        return "read"
    if error == "Read-only file system" or any(
        word in verb for word in ("create", "touch", "remove", "writ", "move")
    ):
        return "write"
    return "write" if grants_cover(plan.grants, path, {"read_file", "read_dir"}) else "read"

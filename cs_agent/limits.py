"""The limits one command runs under, and how they are applied before it starts.

``Limits`` (time, memory, output) come from the verdict's ``execution``; memory and the
process count are held by a cgroup of the run's own when the executor may create one
(``Cgroups``: the kernel then holds the limit for the whole process tree and says when it
killed), by ``RLIMIT_AS``/``RLIMIT_NPROC`` otherwise. ``limited_argv`` wraps the command so
that a shell joins the cgroups (or lowers its own rlimits) and then becomes the sandbox:
nothing of the command runs before the limits hold.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIME_LIMIT = 300.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_OUTPUT_LIMIT = 1024 * 1024
DEFAULT_MAX_PROCESSES = 256
# The first process: joins the run's cgroups (or lowers its own limits, which everything
# it starts inherits), then becomes the sandbox. $1 cgroup.procs files (space-separated),
# $2 the address-space limit (KiB, "" when a memory cgroup holds), $3 the process limit
# ("" when a pids cgroup holds). Bash, not sh: dash has no "ulimit -u". A limit that
# cannot be set stops the run before anything of the command starts.
_LIMIT_SCRIPT = r"""
for procs in $1; do echo $$ > "$procs" || exit 122; done
if [ -n "$2" ]; then ulimit -v "$2" || exit 122; fi
if [ -n "$3" ]; then ulimit -u "$3" || exit 122; fi
shift 3
exec "$@"
"""


@dataclass(frozen=True)
class Limits:
    time_seconds: float = DEFAULT_TIME_LIMIT
    memory_mb: int = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_LIMIT

    @classmethod
    def from_execution(cls, execution: Mapping[str, Any], output_bytes: int) -> Limits:
        return cls(
            time_seconds=float(execution.get("timeLimitSeconds") or DEFAULT_TIME_LIMIT),
            memory_mb=int(execution.get("memoryLimitMb") or DEFAULT_MEMORY_MB),
            output_bytes=output_bytes,
        )


VENV_LIMITS = Limits(time_seconds=120, memory_mb=1024)


class Cgroup:
    """A cgroup of the run's own under the executor's, when the executor may create one:
    the kernel then holds the limit for every process in it, and says when it killed."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    @classmethod
    def create(cls, version: int, base: Path, settings: Mapping[str, str]) -> Cgroup | None:
        own = _own_cgroup(version, base.name)
        if own is None:
            return None
        parent = base / own.lstrip("/")
        first = next(iter(settings))  # the limit itself; the others where the kernel has them
        if not (parent / "cgroup.procs").exists():
            return None
        path = parent / f"cs-executor-{os.getpid()}-{time.monotonic_ns()}"
        try:
            path.mkdir()
        except OSError:
            return None  # not ours to divide (the usual case in a Pod)
        try:
            for name, value in settings.items():
                if name == first or (path / name).exists():
                    (path / name).write_text(value)
        except OSError:
            path.rmdir()
            return None
        return cls(path, version)

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_killed(self) -> bool:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        if not (self.path / name).exists():
            return False
        for line in (self.path / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and int(value or 0) > 0:
                return True
        return False

    def remove(self) -> None:
        # The last processes may still be leaving (EBUSY): try again soon, then less often,
        # for about a second (a fixed 20 ms sleep cost every run that much).
        delay = 0.001
        for _ in range(60):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(delay)
                delay = min(delay * 2, 0.02)


@dataclass
class Cgroups:
    """The run's memory and process-count cgroups: one directory on cgroup v2, one per
    controller's hierarchy on v1; either may be missing (rlimits then hold instead)."""

    memory: Cgroup | None = None
    pids: Cgroup | None = None

    @classmethod
    def create(cls, memory_bytes: int, processes: int) -> Cgroups:
        memory = {"memory.max": str(memory_bytes), "memory.swap.max": "0"}
        pids = {"pids.max": str(processes)}
        unified = Cgroup.create(2, Path("/sys/fs/cgroup"), {**memory, **pids})
        if unified is not None:
            if (unified.path / "pids.max").exists():
                return cls(unified, unified)
            return cls(unified, Cgroup.create(1, Path("/sys/fs/cgroup/pids"), pids))
        return cls(
            # Swap would let it run on past the limit instead of being stopped.
            Cgroup.create(
                1,
                Path("/sys/fs/cgroup/memory"),
                {
                    "memory.limit_in_bytes": str(memory_bytes),
                    "memory.memsw.limit_in_bytes": str(memory_bytes),
                },
            ),
            Cgroup.create(1, Path("/sys/fs/cgroup/pids"), pids),
        )

    @property
    def all(self) -> list[Cgroup]:
        return list({id(c): c for c in (self.memory, self.pids) if c is not None}.values())

    def remove(self) -> None:
        for cgroup in self.all:
            cgroup.remove()


def _own_cgroup(version: int, controller: str) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if version == 2 and controllers == "":
            return path
        if version == 1 and controller in controllers.split(","):
            return path
    return None


def limited_argv(
    cgroups: Cgroups, memory_bytes: int, max_processes: int, inner: Sequence[str]
) -> list[str]:
    """``inner`` behind the shell that applies the limits: the cgroups that hold, the
    rlimits for those that do not."""
    return [
        "/bin/bash",
        "-c",
        _LIMIT_SCRIPT,
        "cs-limit",
        " ".join(str(cgroup.procs) for cgroup in cgroups.all),
        "" if cgroups.memory is not None else str(memory_bytes // 1024),
        "" if cgroups.pids is not None else str(max_processes),
        *inner,
    ]

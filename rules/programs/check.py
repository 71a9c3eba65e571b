"""Compare the option tables with the programs installed here: every option a program's
``--help`` (``git SUB -h``, ``pip SUB --help``) lists that its table lacks. A table marked
complete must show nothing (abbreviations are resolved only against complete tables); for the
others a missing option only means "ask". Run: ``python -m rules.programs.check``.

This runs the real programs with ``--help`` and nothing else — never a command from the
corpus or the tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from rules.programs import REGISTRY
from rules.programs.base import Program, Table

_LONG = re.compile(r"(?<![\w-])(--(?:\[no-\])?[a-z][a-z0-9-]*[a-z0-9])")
_SHORT = re.compile(r"(?<![\w-])-([A-Za-z0-9])\b")
_ENVIRONMENT = {"LANG": "C", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
# bash runs its builtin, not the program of the same name, whose --help says nothing of it.
_BUILTINS = {"cd", "popd", "pushd", "pwd", "echo", "printf", "test", "[", "true", "false", ":"}
_NOT_OPTIONS = {"cut": {"-M"}}  # "-M  from first to M'th field": a range, not an option


def listed(command: list[str]) -> tuple[set[str], set[str]]:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=20,
        env=_ENVIRONMENT,
        stdin=subprocess.DEVNULL,
        cwd="/",
        check=False,
    )
    text = result.stdout + result.stderr
    longs = set()
    for name in _LONG.findall(text):
        longs.add(name.replace("[no-]", ""))
        if "[no-]" in name:
            longs.add(name.replace("[no-]", "no-"))
    return longs, set(_SHORT.findall(text))


def missing(command: list[str], spec: Table, *also: Table) -> str | None:
    longs, shorts = listed(command)
    known_long = set(spec.long_names).union(*(t.long_names for t in also))
    known_short = set(spec.short_names).union(*(t.short_names for t in also))
    lacking = sorted(longs - known_long) + sorted(f"-{s}" for s in shorts - known_short)
    lacking = [name for name in lacking if name not in _NOT_OPTIONS.get(command[0], set())]
    if not lacking:
        return None
    mark = "COMPLETE TABLE " if spec.complete else ""
    return f"{mark}{' '.join(command[:-1])}: {' '.join(lacking)}"


def main() -> int:
    seen: set[int] = set()
    findings = []
    for name, program in sorted(REGISTRY.items()):
        if name in _BUILTINS or shutil.which(name, path=_ENVIRONMENT["PATH"]) is None:
            continue
        if id(program) in seen:
            continue
        seen.add(id(program))
        if program.table.parse_options:
            findings.append(missing([name, "--help"], program.table))
        findings.extend(_subcommands(name, program))
    for finding in filter(None, findings):
        print(finding)
    return 1 if any(f and f.startswith("COMPLETE") for f in findings) else 0


def _subcommands(name: str, program: Program) -> list[str | None]:
    flag = "-h" if name == "git" else "--help"
    return [
        missing([name, sub, flag], spec.table, program.table if name != "git" else spec.table)
        for sub, spec in sorted((program.subcommands or {}).items())
    ]


if __name__ == "__main__":
    sys.exit(main())

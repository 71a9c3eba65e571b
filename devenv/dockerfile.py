"""The Dockerfiles read as data, for ``make image`` (devenv/image.py) and the test that
holds a built image to them: the stages, each instruction with its arguments, and what the
final stage declares (user, entrypoint, command, ports, environment, working directory,
the Debian packages it pins).

Only the instructions our Dockerfiles use are known; any other is refused by name, so a
Dockerfile change that the image builder would not follow fails here instead of building
something else."""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

KNOWN = frozenset({"FROM", "RUN", "COPY", "ENV", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD"})
# What a Debian image's configuration starts with (the official images' PATH).
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


class DockerfileError(ValueError):
    """The Dockerfile says something the builder does not do."""


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


@dataclass
class Stage:
    base: str  # the FROM image, or an earlier stage's name
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def each(self, keyword: str) -> list[Instruction]:
        return [item for item in self.instructions if item.keyword == keyword]

    def environment(self, *, before: int | None = None) -> dict[str, str]:
        """The stage's ENV (above line ``before``, if given), in order, each value expanded
        against the ones before it, over a Debian image's PATH."""
        env = {"PATH": DEBIAN_PATH}
        for item in self.each("ENV"):
            if before is not None and item.line >= before:
                break
            for pair in shlex.split(item.arguments):
                key, _, value = pair.partition("=")
                env[key] = re.sub(
                    r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m[1] or m[2], ""), value
                )
        return env

    def workdir(self, *, before: int | None = None) -> str:
        """The working directory its WORKDIRs make (above line ``before``, if given)."""
        path = "/"
        for item in self.each("WORKDIR"):
            if before is not None and item.line >= before:
                break
            path = os.path.join(path, item.arguments)
        return path

    def last(self, keyword: str, default: str = "") -> str:
        found = self.each(keyword)
        return found[-1].arguments if found else default

    def exec_form(self, keyword: str) -> list[str]:
        text = self.last(keyword)
        if not text:
            return []
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not (isinstance(value, list) and all(isinstance(part, str) for part in value)):
            raise DockerfileError(f"{keyword} must be a JSON list of strings (exec form)")
        return value

    def pinned_packages(self) -> dict[str, str]:
        """The Debian packages this stage installs, each pinned to its version
        (``apt-get install name=version``); an unpinned one is refused."""
        packages: dict[str, str] = {}
        for item in self.each("RUN"):
            for command in re.split(r"&&|;", item.arguments):
                words = shlex.split(command)
                if words[:2] != ["apt-get", "install"]:
                    continue
                for word in words[2:]:
                    if word.startswith("-"):
                        continue
                    name, equals, version = word.partition("=")
                    if not equals:
                        raise DockerfileError(
                            f"line {item.line}: {name} is not pinned to a version"
                        )
                    packages[name] = version
        return packages

    def ports(self) -> list[str]:
        return [
            port if "/" in port else f"{port}/tcp"
            for item in self.each("EXPOSE")
            for port in item.arguments.split()
        ]


def read(path: Path) -> list[Stage]:
    """The Dockerfile's stages in order."""
    stages: list[Stage] = []
    for instruction in _instructions(path.read_text()):
        if instruction.keyword not in KNOWN:
            raise DockerfileError(
                f"{path.name} line {instruction.line}: {instruction.keyword} is not "
                "something the image builder does"
            )
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(words[0], name or str(len(stages))))
        elif not stages:
            raise DockerfileError(f"{path.name}: {instruction.keyword} before FROM")
        else:
            stages[-1].instructions.append(instruction)
    if not stages:
        raise DockerfileError(f"{path.name}: no FROM")
    return stages


def _instructions(text: str) -> list[Instruction]:
    found: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction is no part of it
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1].strip())
            continue
        pending.append(line)
        keyword, _, arguments = " ".join(part for part in pending if part).partition(" ")
        found.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = []
    if pending:
        raise DockerfileError("the last instruction ends with a line continuation")
    return found

"""sources.json: what an agent type's image can reach — package registries, web domains, git
remotes, runtimes. settings.json says what is allowed; sources.json narrows it.

Validation is strict (keys starting with "_" are comments): a misspelt ``blocked_domain``
must fail loudly instead of silently widening access. Each error names the entry, e.g.
``package_managers.pip.blocked_packages[1]: expected a string, got number``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rules.model import SourcesError, json_type
from rules.patterns import host_pattern_problem


@dataclass(frozen=True)
class Registry:
    name: str
    url: str
    trusted: bool | None = None


@dataclass(frozen=True)
class PackageManager:
    name: str
    enabled: bool
    registries: tuple[Registry, ...] = ()
    blocked_packages: tuple[str, ...] = ()
    max_install_size_mb: int | None = None


@dataclass(frozen=True)
class WebAccess:
    enabled: bool
    allowed_domains: tuple[str, ...] = ()  # empty: no allow-list, only blocked_domains apply
    blocked_domains: tuple[str, ...] = ()


@dataclass(frozen=True)
class GitAccess:
    enabled: bool
    allowed_remotes: tuple[str, ...] = ()  # globs; "*" matches any string
    max_clone_size_mb: int | None = None


@dataclass(frozen=True)
class Runtime:
    languages: tuple[str, ...] | None = None
    interpreters: tuple[tuple[str, str], ...] | None = None
    max_execution_time_seconds: int | None = None
    max_memory_mb: int | None = None


@dataclass(frozen=True)
class Sources:
    """A section that is None was not declared: the resource does not exist for this agent
    type (a network operation with no ``web_access`` is denied)."""

    agent_type: str | None = None
    package_managers: tuple[PackageManager, ...] = ()
    web_access: WebAccess | None = None
    git: GitAccess | None = None
    runtime: Runtime | None = None
    comments: tuple[tuple[str, str], ...] = ()

    def manager(self, name: str) -> PackageManager | None:
        return next((m for m in self.package_managers if m.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The sources.json form this was parsed from (optional keys that were absent, and
        empty lists, are left out)."""
        data: dict[str, Any] = dict(self.comments)
        if self.agent_type is not None:
            data["agent_type"] = self.agent_type
        if self.package_managers:
            data["package_managers"] = {m.name: _manager_json(m) for m in self.package_managers}
        if self.web_access is not None:
            data["web_access"] = _drop_empty(
                {
                    "enabled": self.web_access.enabled,
                    "allowed_domains": list(self.web_access.allowed_domains),
                    "blocked_domains": list(self.web_access.blocked_domains),
                }
            )
        if self.git is not None:
            data["git"] = _drop_empty(
                {
                    "enabled": self.git.enabled,
                    "allowed_remotes": list(self.git.allowed_remotes),
                    "max_clone_size_mb": self.git.max_clone_size_mb,
                }
            )
        if self.runtime is not None:
            runtime = self.runtime
            data["runtime"] = _drop_empty(
                {
                    "languages": None if runtime.languages is None else list(runtime.languages),
                    "interpreters": None
                    if runtime.interpreters is None
                    else dict(runtime.interpreters),
                    "max_execution_time_seconds": runtime.max_execution_time_seconds,
                    "max_memory_mb": runtime.max_memory_mb,
                }
            )
        return data


def _drop_empty(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None and value != []}


def _manager_json(manager: PackageManager) -> dict[str, Any]:
    registries = []
    for registry in manager.registries:
        entry: dict[str, Any] = {"name": registry.name, "url": registry.url}
        if registry.trusted is not None:
            entry["trusted"] = registry.trusted
        registries.append(entry)
    return _drop_empty(
        {
            "enabled": manager.enabled,
            "registries": registries,
            "max_install_size_mb": manager.max_install_size_mb,
            "blocked_packages": list(manager.blocked_packages),
        }
    )


# --- parsing --------------------------------------------------------------------------------


def _object(value: object, where: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SourcesError(f"{where}: expected an object, got {json_type(value)}")
    for key in value:
        if not key.startswith("_") and key not in known:
            raise SourcesError(f'{where}: unknown key "{key}" (expected {", ".join(known)})')
    return value


def _required(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise SourcesError(f'{where}: missing required key "{key}"')
    return data[key]


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise SourcesError(f"{where}: expected true or false, got {json_type(value)}")
    return value


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise SourcesError(f"{where}: expected a string, got {json_type(value)}")
    if not value.strip():
        raise SourcesError(f"{where}: must not be empty")
    return value


def _positive_int(value: object, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SourcesError(f"{where}: expected a positive integer, got {json.dumps(value)}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SourcesError(f"{where}: expected a list of strings, got {json_type(value)}")
    return tuple(_string(item, f"{where}[{index}]") for index, item in enumerate(value))


def _url(value: object, where: str) -> str:
    url = _string(value, where)
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.username:
        raise SourcesError(f"{where}: {json.dumps(url)} is not an http(s) URL with a host")
    return url


def _domains(value: object, where: str) -> tuple[str, ...]:
    domains = _strings(value, where)
    for index, domain in enumerate(domains):
        problem = host_pattern_problem(domain)
        if problem:
            raise SourcesError(f"{where}[{index}]: {json.dumps(domain)} {problem}")
    return domains


_PACKAGE = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9._/@-]*\Z")


def _manager(name: str, value: object) -> PackageManager:
    where = f"package_managers.{name}"
    data = _object(
        value, where, ("enabled", "registries", "max_install_size_mb", "blocked_packages")
    )
    registries = data.get("registries", [])
    if not isinstance(registries, list):
        raise SourcesError(f"{where}.registries: expected a list, got {json_type(registries)}")
    parsed = []
    for index, item in enumerate(registries):
        at = f"{where}.registries[{index}]"
        entry = _object(item, at, ("name", "url", "trusted"))
        trusted = entry.get("trusted")
        parsed.append(
            Registry(
                name=_string(_required(entry, "name", at), f"{at}.name"),
                url=_url(_required(entry, "url", at), f"{at}.url"),
                trusted=None if trusted is None else _bool(trusted, f"{at}.trusted"),
            )
        )
    blocked = _strings(data.get("blocked_packages"), f"{where}.blocked_packages")
    for index, package in enumerate(blocked):
        if not _PACKAGE.match(package):
            raise SourcesError(
                f"{where}.blocked_packages[{index}]: {json.dumps(package)} is not a package name"
            )
    return PackageManager(
        name=name,
        enabled=_bool(_required(data, "enabled", where), f"{where}.enabled"),
        registries=tuple(parsed),
        blocked_packages=blocked,
        max_install_size_mb=_positive_int(
            data.get("max_install_size_mb"), f"{where}.max_install_size_mb"
        ),
    )


def _comments(data: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    comments = []
    for key, value in data.items():
        if key.startswith("_"):
            if not isinstance(value, str):
                raise SourcesError(f"sources.json.{key}: expected a string, got {json_type(value)}")
            comments.append((key, value))
    return tuple(comments)


# The keys of sources.json (besides "_" comments); the OpenAPI document lists them too.
SOURCES_KEYS = ("agent_type", "package_managers", "web_access", "git", "runtime")


def parse_sources(data: object) -> Sources:
    """The decoded sources.json."""
    top = _object(data, "sources.json", SOURCES_KEYS)
    agent_type = top.get("agent_type")
    managers: list[PackageManager] = []
    if "package_managers" in top:
        declared = top["package_managers"]
        if not isinstance(declared, Mapping):
            raise SourcesError(f"package_managers: expected an object, got {json_type(declared)}")
        managers = [_manager(name, value) for name, value in declared.items()]
    web_access = None
    if "web_access" in top:
        web = _object(
            top["web_access"], "web_access", ("enabled", "allowed_domains", "blocked_domains")
        )
        web_access = WebAccess(
            enabled=_bool(_required(web, "enabled", "web_access"), "web_access.enabled"),
            allowed_domains=_domains(web.get("allowed_domains"), "web_access.allowed_domains"),
            blocked_domains=_domains(web.get("blocked_domains"), "web_access.blocked_domains"),
        )
    git = None
    if "git" in top:
        raw_git = _object(top["git"], "git", ("enabled", "allowed_remotes", "max_clone_size_mb"))
        git = GitAccess(
            enabled=_bool(_required(raw_git, "enabled", "git"), "git.enabled"),
            allowed_remotes=_strings(raw_git.get("allowed_remotes"), "git.allowed_remotes"),
            max_clone_size_mb=_positive_int(
                raw_git.get("max_clone_size_mb"), "git.max_clone_size_mb"
            ),
        )
    runtime = None
    if "runtime" in top:
        raw = _object(
            top["runtime"],
            "runtime",
            ("languages", "interpreters", "max_execution_time_seconds", "max_memory_mb"),
        )
        interpreters = None
        if "interpreters" in raw:
            table = raw["interpreters"]
            if not isinstance(table, Mapping):
                raise SourcesError(
                    f"runtime.interpreters: expected an object, got {json_type(table)}"
                )
            interpreters = tuple(
                (name, _string(path, f"runtime.interpreters.{name}"))
                for name, path in table.items()
            )
        runtime = Runtime(
            languages=_strings(raw["languages"], "runtime.languages")
            if "languages" in raw
            else None,
            interpreters=interpreters,
            max_execution_time_seconds=_positive_int(
                raw.get("max_execution_time_seconds"), "runtime.max_execution_time_seconds"
            ),
            max_memory_mb=_positive_int(raw.get("max_memory_mb"), "runtime.max_memory_mb"),
        )
    return Sources(
        agent_type=None if agent_type is None else _string(agent_type, "agent_type"),
        package_managers=tuple(managers),
        web_access=web_access,
        git=git,
        runtime=runtime,
        comments=_comments(top),
    )

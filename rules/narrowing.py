"""sources.json narrowing: an operation that settings.json allows (or would ask about)
becomes **deny** when it needs a resource sources.json does not declare — a blocked package,
an unlisted registry, a git remote outside ``allowed_remotes``, a blocked or unlisted domain,
a disabled package manager. When the resource is only known at run time (``pip install $P``)
the answer is ask. Each verdict names the sources.json entry that decided.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from rules.model import Decision, host_of_url
from rules.patterns import compile_url_glob, host_matches, normalise_host
from rules.programs import npm, read
from rules.programs.base import parse
from rules.programs.python import ARCHIVE
from rules.sources import PackageManager, Registry, Sources
from rules.words import PIP_NAME, Word, WordKind, names, split_arguments


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision  # DENY or ASK
    entry: str | None  # the sources.json entry, e.g. package_managers.pip.blocked_packages[1]
    reason: str


def strongest(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    """The first deny among them, else the first ask: a package only known at run time
    before a blocked one must not hide the block."""
    first: Verdict | None = None
    for verdict in verdicts:
        if verdict is None:
            continue
        if verdict.decision is Decision.DENY:
            return verdict
        first = first or verdict
    return first


def _deny(entry: str, reason: str) -> Verdict:
    return Verdict(Decision.DENY, entry, reason)


def _ask(reason: str, entry: str | None = None) -> Verdict:
    return Verdict(Decision.ASK, entry, reason)


# --- hosts ----------------------------------------------------------------------------------


def check_host(host: str, sources: Sources, what: str) -> Verdict | None:
    web = sources.web_access
    if web is None:
        return _deny("web_access", f"{what}: sources.json declares no web_access")
    if not web.enabled:
        return _deny("web_access.enabled", f"{what}: web access is disabled")
    host = normalise_host(host)
    for index, pattern in enumerate(web.blocked_domains):
        if host_matches(pattern, host):
            return _deny(
                f"web_access.blocked_domains[{index}]", f"{what}: {host} is blocked ({pattern})"
            )
    if web.allowed_domains and not any(host_matches(p, host) for p in web.allowed_domains):
        return _deny("web_access.allowed_domains", f"{what}: {host} is not an allowed domain")
    return None


# --- registries and remotes ---------------------------------------------------------------


def _url_key(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.username or parts.password:
        return None
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return parts.scheme.lower(), parts.hostname.lower(), port, path


def registry_for(url: str, registries: Sequence[Registry]) -> Registry | None:
    """The registry whose URL is a prefix of ``url`` (scheme, host and port equal, path
    under the registry's path; a user@ part never matches)."""
    key = _url_key(url)
    if key is None:
        return None
    for registry in registries:
        registry_key = _url_key(registry.url)
        if registry_key and key[:3] == registry_key[:3] and key[3].startswith(registry_key[3]):
            return registry
    return None


def _manager(
    sources: Sources, name: str, what: str
) -> tuple[PackageManager | None, Verdict | None]:
    manager = sources.manager(name)
    if manager is None:
        return None, _deny("package_managers", f"{what}: sources.json declares no {name}")
    if not manager.enabled:
        return None, _deny(f"package_managers.{name}.enabled", f"{what}: {name} is disabled")
    return manager, None


def _registry_verdict(manager: PackageManager, url: Word, what: str) -> Verdict | None:
    if url.kind is WordKind.UNKNOWN:
        return _ask(f"{what}: index {url.value} is only known at run time")
    if registry_for(url.value, manager.registries) is None:
        return _deny(
            f"package_managers.{manager.name}.registries",
            f"{what}: {url.value} is not a registry listed for {manager.name}",
        )
    return None


def _blocked(manager: PackageManager, name: str) -> int:
    wanted = _normalise_python(name) if manager.name == "pip" else name.lower()
    for index, blocked in enumerate(manager.blocked_packages):
        candidate = _normalise_python(blocked) if manager.name == "pip" else blocked.lower()
        if candidate == wanted:
            return index
    return -1


def remote_verdict(url: Word, sources: Sources, what: str) -> Verdict | None:
    git = sources.git
    if git is None:
        return _deny("git", f"{what}: sources.json declares no git")
    if not git.enabled:
        return _deny("git.enabled", f"{what}: git is disabled")
    if url.kind is WordKind.UNKNOWN:
        return _ask(f"{what}: remote {url.value} is only known at run time")
    value = url.value
    if any(compile_url_glob(glob).fullmatch(value) for glob in git.allowed_remotes):
        return None
    if value.startswith(("/", "./", "../", "~", "file:")) or value in {".", ".."}:
        # A local repository (file:///etc, /some/path): it reads files outside the rules'
        # view and is not an allowed remote, but it is no network access either.
        return _ask(f"{what}: the local repository {value} is not an allowed remote")
    return _deny("git.allowed_remotes", f"{what}: {value} is not an allowed remote")


# --- pip ----------------------------------------------------------------------------------
# Options and operands are read with pip's own tables (programs/python.py), abbreviations
# resolved the way optparse would: narrowing only ever makes a verdict stricter.

_PIP_FETCHING = {"install", "download", "wheel"}
# pip list --outdated asks the index too: its index options are judged the same way.
_PIP_INDEXED = {*_PIP_FETCHING, "list"}
_REQUIREMENT = re.compile(
    r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*"
    r"((?:(?:===|==|!=|~=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*)\s*(;.*)?$",
    re.DOTALL,
)


def _normalise_python(name: str) -> str:
    """PEP 503: case-insensitive, runs of -, _ and . are the same."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _local(value: str) -> bool:
    return (
        value.startswith(("/", "./", "../", "~"))
        or value in {".", ".."}
        or ("/" not in value and ARCHIVE.search(value) is not None)
    )


def check_pip(words: Sequence[Word], sources: Sources) -> Verdict | None:
    return strongest(_pip(words, sources))


def _pip(words: Sequence[Word], sources: Sources) -> Iterator[Verdict | None]:
    found = read(words, guess=True)
    if found is None or found[0].partition(" ")[2] not in _PIP_INDEXED:
        return
    what, parsed = found
    fetching = what.partition(" ")[2] in _PIP_FETCHING
    if not fetching and not parsed.values("--index-url", "--extra-index-url", "--find-links"):
        return
    manager, verdict = _manager(sources, "pip", what)
    if manager is None:
        yield verdict
        return
    for given in parsed.given:
        value, option = given.value, set(given.option.names)
        if value is None:
            continue
        if option & {"--index-url", "--extra-index-url"} or (
            "--find-links" in option and not _local(value.value)
        ):
            verdict = _registry_verdict(manager, value, what)
        elif option & {"--requirement", "--constraint"} and "://" in value.value:
            # A list fetched from a URL is web access first (the engine asks about the list).
            host = host_of_url(value.value)
            verdict = check_host(host, sources, what) if host else None
        elif "--editable" in option and not _local(value.value):
            verdict = _package_url(manager, value, sources, what)
        yield verdict
    for operand in parsed.operands if fetching else ():
        yield _pip_requirement(manager, operand, sources, what)


def _package_url(manager: PackageManager, url: Word, sources: Sources, what: str) -> Verdict:
    value = url.value.split("@", 1)[1].strip() if " @ " in url.value else url.value
    if value.startswith("git+"):
        return remote_verdict(Word(value[4:].split("#")[0], url.kind), sources, what) or _ask(
            f"{what}: installing from a git URL ({value}) is not judged by registries"
        )
    found = registry_for(value, manager.registries)
    if found is None:
        return _deny(
            f"package_managers.{manager.name}.registries",
            f"{what}: {value} is not under a registry listed for {manager.name}",
        )
    return _ask(f"{what}: direct URL {value} is not checked against blocked_packages")


def _pip_requirement(
    manager: PackageManager, operand: Word, sources: Sources, what: str
) -> Verdict | None:
    if operand.kind is WordKind.UNKNOWN:
        return _ask(f"{what}: package {operand.value} is only known at run time")
    value = operand.value
    if "://" in value or value.startswith("git+") or " @ " in value:
        return _package_url(manager, operand, sources, what)
    if _local(value):
        return None
    match = _REQUIREMENT.match(value)
    if not match:
        return _ask(f"{what}: cannot read the requirement {value!r}")
    index = _blocked(manager, match.group(1))
    if index >= 0:
        return _deny(
            f"package_managers.pip.blocked_packages[{index}]",
            f"{what}: package {match.group(1)} is blocked",
        )
    return None


# --- npm / conda ------------------------------------------------------------------------------

_NPM_INSTALL = {
    "install", "i", "add", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal",
    "isntall", "ci", "clean-install", "install-test", "it", "install-ci-test", "cit",
    "update", "up", "upgrade", "exec", "x",
}  # fmt: skip


def _npm_name(spec: str) -> str:
    if spec.startswith("@"):
        scope, _, rest = spec.partition("/")
        return scope + "/" + rest.split("@", 1)[0]
    return spec.split("@", 1)[0]


def check_npm(words: Sequence[Word], sources: Sources, npx: bool) -> Verdict | None:
    return strongest(_npm(words, sources, npx))


def _npm(words: Sequence[Word], sources: Sources, npx: bool) -> Iterator[Verdict | None]:
    parsed = parse(words[1:], npm.GLOBAL, "npm", guess=True)
    found = [(given.name, given.value) for given in parsed.given]
    operands = parsed.operands
    if not npx:
        if not operands or operands[0].value not in _NPM_INSTALL:
            return
        operands = operands[1:]
    what = "npx" if npx else f"npm {words[1].value if len(words) > 1 else ''}".strip()
    manager, verdict = _manager(sources, "npm", what)
    if manager is None:
        yield verdict
        return
    for name, value in found:
        if name == "--registry" and value is not None:
            yield _registry_verdict(manager, value, what)
    for operand in operands[:1] if npx else operands:
        spec = operand.value
        if operand.kind is WordKind.UNKNOWN:
            yield _ask(f"{what}: package {operand.value} is only known at run time")
        elif ":" in spec and not spec.startswith("@") and not _local(spec):
            yield _ask(f"{what}: {spec} is not a registry package")
        elif not _local(spec) and (index := _blocked(manager, _npm_name(spec))) >= 0:
            yield _deny(
                f"package_managers.npm.blocked_packages[{index}]",
                f"{what}: package {_npm_name(spec)} is blocked",
            )


_CONDA_VALUED = names("-c --channel -n --name -p --prefix --file")


def check_conda(words: Sequence[Word], sources: Sources) -> Verdict | None:
    return strongest(_conda(words, sources))


def _conda(words: Sequence[Word], sources: Sources) -> Iterator[Verdict | None]:
    found, operands = split_arguments(words[1:], _CONDA_VALUED)
    if not operands or operands[0].value not in {"install", "create", "update", "upgrade"}:
        return
    what = f"{words[0].value} {operands[0].value}"
    manager, verdict = _manager(sources, "conda", what)
    if manager is None:
        yield verdict
        return
    for name, value in found:
        if name in {"-c", "--channel"} and value is not None:
            listed = any(value.value == registry.name for registry in manager.registries)
            if not listed:
                yield _registry_verdict(manager, value, what)
        if name == "--file":
            yield _ask(f"{what}: the environment file is not checked")
    for operand in operands[1:]:
        if operand.kind is WordKind.UNKNOWN:
            yield _ask(f"{what}: package {operand.value} is only known at run time")
            continue
        name = re.split(r"[=<>!~ ]", operand.value.split("::")[-1], maxsplit=1)[0]
        index = _blocked(manager, name)
        if index >= 0:
            yield _deny(
                f"package_managers.conda.blocked_packages[{index}]",
                f"{what}: package {name} is blocked",
            )


# --- git --------------------------------------------------------------------------------------
# Read with git's tables (programs/git.py); the remote is the first operand.

_GIT_REMOTE_FIRST = {"git clone", "git fetch", "git pull", "git push", "git ls-remote"}


def _remote_like(value: str) -> bool:
    return (
        "://" in value
        or "::" in value
        or bool(re.match(r"^[^/\s]+@[^/\s:]+:", value))
        or bool(re.match(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}:", value))
        or value.startswith(("/", "./", "../"))
    )


def _git_remotes(words: Sequence[Word]) -> tuple[str, list[Word]] | None:
    found = read(words, guess=True)
    if found is not None and found[0] in _GIT_REMOTE_FIRST:
        what, parsed = found
        first = parsed.operands[:1]
        if what != "git clone":  # "origin" names a configured remote, not a URL
            first = [w for w in first if w.kind is WordKind.UNKNOWN or _remote_like(w.value)]
        return what, first + parsed.values("--repo")
    # Not modelled (so never allowed), but a deny still applies: the URL after "add".
    operands = [w for w in words[1:] if not w.value.startswith("-")]
    verbs = [w.value for w in operands[:2]]
    if verbs in (["remote", "add"], ["remote", "set-url"]):
        return "git remote", operands[3:4]
    if verbs == ["submodule", "add"]:
        return "git submodule", operands[2:3]
    return None


def check_git(words: Sequence[Word], sources: Sources) -> Verdict | None:
    """``words`` is the git command as written."""
    found = _git_remotes(words)
    if found is None:
        return None
    what, remotes = found
    if sources.git is None or not sources.git.enabled:
        return remote_verdict(Word(""), sources, what)
    return strongest(remote_verdict(remote, sources, what) for remote in remotes)


# --- fetchers ---------------------------------------------------------------------------------
# curl and wget are read with their tables (programs/network.py); the others are not
# modelled, so never allowed, and every word that is not an option is taken for a URL.

FETCHERS = {"curl", "wget", "aria2c", "http", "https", "xh"}
_HTTP_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}


def _url_host(value: str) -> str | None:
    if "://" in value:
        return host_of_url(value)
    # curl and wget accept "example.com/path" and default to http.
    return host_of_url("http://" + value)


def _urls(program: str, words: Sequence[Word]) -> list[Word]:
    found = read(words, guess=True)
    if found is not None:
        parsed = found[1]
        return [*parsed.operands, *parsed.values("--url")]
    urls = [word for word in words[1:] if not word.value.startswith("-")]
    if program in {"http", "https", "xh"}:
        skip = 1 if urls and urls[0].value.upper() in _HTTP_METHODS else 0
        urls = urls[skip : skip + 1]
    return urls


def check_fetch(program: str, words: Sequence[Word], sources: Sources) -> Verdict | None:
    return strongest(_fetch(program, words, sources))


def _fetch(program: str, words: Sequence[Word], sources: Sources) -> Iterator[Verdict | None]:
    for url in _urls(program, words):
        host = None if url.kind is WordKind.UNKNOWN else _url_host(url.value)
        if url.kind is WordKind.UNKNOWN:
            yield _ask(f"{program}: URL {url.value} is only known at run time")
        elif host is None:
            yield _ask(f"{program}: cannot find the host in {url.value!r}")
        else:
            yield check_host(host, sources, program)


def check_command(words: Sequence[Word], sources: Sources) -> Verdict | None:
    """The sources.json verdict on one simple command (its effective words)."""
    if not words:
        return None
    program = words[0].value.rsplit("/", 1)[-1]
    if PIP_NAME.match(program):
        return check_pip(words, sources)
    if program in {"npm", "npx", "pnpm", "yarn"}:
        if program in {"pnpm", "yarn"}:
            return _manager(sources, "npm", program)[1]
        return check_npm(words, sources, npx=program == "npx")
    if program in {"conda", "mamba", "micromamba"}:
        return check_conda(words, sources)
    if program == "git":
        return check_git(words, sources)
    if program in FETCHERS:
        return check_fetch(program, words, sources)
    return None

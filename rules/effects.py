"""What a shell command was judged to do, for the executor to hold it to (Landlock).

The engine decides from the paths and hosts the walker found; ``effects_of`` turns the same
decomposition into the list the executor enforces, so that a misreading — a glob, a brace,
an expansion the walker did not evaluate — fails at run time instead of succeeding:

    {"read": [...], "write": [...], "delete": [...], "network": [...], "programs": [...]}

Paths are absolute; ``D/**`` means everything below D. A path only known at run time, a
glob, or a recursive access is widened to the directory it certainly lies in (the whole
context when nothing more is known). A command the engine could not model (it has
problems: a person approved it, the rules never did) may read and write anywhere in the
context and reach the network; so may a package manager (it writes the context's
virtualenv and fetches from its registries); git reads and writes the repository it finds
around the working directory (the context). ``network`` holds the hosts judged, ``*`` for
one only known at run time: empty means the command runs with no network at all.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any
from urllib.parse import urlsplit

from rules.invocations import Decomposition, FileAccess, HeldFiles, Invocation
from rules.model import Direction, FileAction, Kind, Rule, RuleSet, host_of_url
from rules.narrowing import FETCHERS
from rules.patterns import SENTINEL
from rules.sources import Sources
from rules.words import PIP_NAME

ANYWHERE = "*"
_PACKAGE_MANAGERS = frozenset({"npm", "npx", "pnpm", "yarn", "conda", "mamba", "micromamba"})
_GLOB = re.compile(r"[*?\[]")


def _tree(directory: str) -> str:
    return directory.rstrip("/") + "/**" if directory != "/" else "/**"


def target_of(access: FileAccess, workspace: str) -> str:
    """Where the executor lets ``access`` happen: its path, or the tree it lies in."""
    path = access.path
    if path is None:
        return _tree(workspace)
    if SENTINEL in path or access.glob or _GLOB.search(path):
        # Everything below the last directory the path names before the unknown part.
        literal = path.split(SENTINEL, 1)[0]
        if access.glob:
            literal = _GLOB.split(literal, 1)[0]
        return _tree(posixpath.dirname(literal) if not literal.endswith("/") else literal)
    return path


def effects_of(
    decomposition: Decomposition,
    workspace: str,
    *,
    contained_network: list[str] | None = None,
    hidden: list[str] | None = None,
) -> dict[str, list[str]]:
    """``contained_network``: the hosts a contained run (an interpreter running code the
    engine cannot read, evaluated with an enforcing executor) may reach, instead of any;
    ``hidden``: what the deny rules forbid reading, which the executor leaves out of even
    the image it grants (:func:`hidden_paths`)."""
    effects: dict[str, set[str]] = {
        key: set() for key in ("read", "write", "delete", "network", "programs")
    }
    context = _tree(workspace)
    for invocation in decomposition.invocations:
        if invocation.second:
            continue  # the same commands, read again only so that a deny may win
        program = invocation.effective.program if invocation.effective else None
        if program:
            effects["programs"].add(program)
        name = (program or "").rsplit("/", 1)[-1]
        opaque = invocation.problems or invocation.fallback or invocation.effective is None
        if opaque and not invocation.transparent:
            effects["read"].add(context)
            effects["write"].add(context)
            if contained_network is None or not invocation.contained_only:
                effects["network"].add(ANYWHERE)
            elif not all(isinstance(p, HeldFiles) for p in invocation.problems):
                # Code runs: it may connect where the agent type may. A word about files
                # (head "$F") needs no network.
                effects["network"].update(contained_network)
        if _installs(invocation, name):
            effects["write"].add(context)
        effects["network"].update(_contacts(invocation, name))
        if name == "git":
            # Every git command reads the repository around the working directory, and most
            # write its index or refs (even status refreshes the index).
            effects["read"].add(context)
            effects["write"].add(context)
        for access in invocation.files:
            target = target_of(access, workspace)
            if access.action is None:
                effects["read"].add(target)
                effects["write"].add(target)
            elif access.action is FileAction.READ:
                effects["read"].add(target)
            else:
                effects[access.action.value].add(target)
    result = {key: sorted(values) for key, values in effects.items()}
    result["hidden"] = list(hidden or ())
    return result


def _installs(invocation: Invocation, name: str) -> bool:
    return bool(PIP_NAME.match(name) or name in _PACKAGE_MANAGERS or _runs_pip(invocation))


def _contacts(invocation: Invocation, name: str) -> set[str]:
    """The hosts an invocation contacts by what its program is (an installer, a fetcher)
    and by the destinations it names (a URL, a remote the repository names: ANYWHERE when
    only known at run time), as opposed to what an unknown program may do."""
    hosts = {network.host or ANYWHERE for network in invocation.network}
    if _installs(invocation, name) or name in FETCHERS:
        hosts.add(ANYWHERE)
    return hosts


def reaches_network(decomposition: Decomposition) -> bool:
    """Whether a command of the line contacts a host of its own (``_contacts``)."""
    return any(
        _contacts(item, (item.effective.program if item.effective else "").rsplit("/", 1)[-1])
        for item in decomposition.invocations
        if not item.second
    )


def opaque_effects(workspace: str, hidden: list[str] | None = None) -> dict[str, list[str]]:
    """A command nothing could be read of: anywhere in the context, and the network."""
    context = _tree(workspace)
    return {"read": [context], "write": [context], "delete": [], "network": [ANYWHERE],
            "programs": [], "hidden": list(hidden or ())}  # fmt: skip


_LITERAL_TREE = re.compile(r"^(/[^*?\[\]{}\\]*?)(/\*\*)?$")


def hidden_paths(rules: RuleSet, workspace: str) -> list[str]:
    """The paths the deny rules forbid reading that Landlock can leave out of a grant: a
    literal path (``/etc/shadow``) or a literal directory's tree (``/proc/**``), with
    ``${WORKSPACE}`` expanded. Globs elsewhere (``**/.ssh/**``, ``*.pem``) name no fixed
    place; they are left to the engine (docs/rules.md, "Contained allow")."""
    return sorted({path for rule in rules.deny if (path := hidden_path(rule, workspace))})


def hidden_path(rule: Rule, workspace: str) -> str | None:
    """What of :func:`hidden_paths` the deny rule ``rule`` hides; None: nothing."""
    if rule.kind is not Kind.FILE or rule.action not in (None, FileAction.READ):
        return None
    pattern = (rule.pattern or "").replace("${WORKSPACE}", workspace)
    match = _LITERAL_TREE.match(pattern)
    if not match or "${" in pattern:
        return None
    path = posixpath.normpath(match.group(1)) if match.group(1) else "/"
    return path + "/**" if match.group(2) else path


def refuses(access: FileAccess, rule: Rule, workspace: str) -> bool:
    """Does an enforcing executor refuse what the deny rule ``rule`` may forbid of
    ``access`` (a path only known at run time)? A read, when the rule's path is hidden
    outside the context; a
    write or a delete held to the context (what :func:`target_of` grants) when the rule
    names no place in the context or the sandbox's /tmp, where the run may write."""
    if access.action is FileAction.READ:
        # The executor hides a path in every grant but one that creates files (a hidden
        # path in the context, which the run may write, stays readable there).
        hidden = hidden_path(rule, workspace)
        return hidden is not None and not any(
            hidden == place or hidden.startswith(place + "/")
            for place in (workspace, "/tmp")  # noqa: S108 - the sandbox's own tmpfs
        )
    if access.action not in (FileAction.WRITE, FileAction.DELETE):
        return False
    target = target_of(access, workspace).removesuffix("/**")
    if target != workspace and not target.startswith(workspace + "/"):
        return False
    pattern = (rule.pattern or "").replace("${WORKSPACE}", workspace)
    # The rule's literal start: "/etc/" of /etc/**, "/work" of /work*/** (which covers
    # /workspace): it names a place the run may write when either starts the other.
    start = _GLOB.split(pattern, 1)[0]
    if not start.startswith("/") or "${" in pattern:
        return False
    return not any(
        writable.startswith(start) or start.startswith(writable + "/") or start == writable
        for writable in (workspace, "/tmp")  # noqa: S108 - the sandbox's own tmpfs
    )


def contained_hosts(rules: RuleSet, sources: Sources | None) -> list[str]:
    """Where a contained run may connect: what sources.json lets the agent type reach —
    its web domains (any host for web access without a list), its enabled package
    managers' registries and its git remotes — or, without a sources.json, the hosts the
    network allow rules name. The executor gives the run the Pod's network when this is
    not empty; the Pod's egress policy holds it to these hosts."""
    hosts: set[str] = set()
    if sources is None:
        for rule in rules.allow:
            if rule.kind is Kind.NETWORK and rule.direction in (None, Direction.OUTBOUND):
                hosts.add(rule.pattern or ANYWHERE)
        return sorted(hosts)
    web = sources.web_access
    if web is not None and web.enabled:
        hosts.update(web.allowed_domains or (ANYWHERE,))
    for manager in sources.package_managers:
        if manager.enabled:
            hosts.update(h for r in manager.registries if (h := host_of_url(r.url)))
    if sources.git is not None and sources.git.enabled:
        hosts.update(h for remote in sources.git.allowed_remotes if (h := host_of_url(remote)))
    return sorted(hosts)


# Registries whose index links to files on another host of theirs: pip, told the index is
# pypi.org, downloads from files.pythonhosted.org.
REGISTRY_FILE_HOSTS = {"pypi.org": ("files.pythonhosted.org",)}
DEFAULT_PORTS = (80, 443)


def egress_ceiling(rules: RuleSet, sources: Sources | None) -> dict[str, list[Any]]:
    """Where any run of the agent type may connect, for the executor's egress proxy
    (``execution.egress``; cs_agent/egress.py): the hosts a contained run may reach
    (:func:`contained_hosts`, with the file hosts of a known registry), the domains that are
    never reached (sources.json's ``blocked_domains``; without a sources.json, the network
    deny rules' hosts) and the ports: 80, 443 and any a registry or git remote names. A
    run reaches a host only when it is also one judged for it (``effects.network``)."""
    hosts = set(contained_hosts(rules, sources))
    ports = set(DEFAULT_PORTS)
    blocked: set[str] = set()
    if sources is None:
        blocked.update(
            rule.pattern or ANYWHERE
            for rule in rules.deny
            if rule.kind is Kind.NETWORK and rule.direction in (None, Direction.OUTBOUND)
        )
    else:
        if sources.web_access is not None:
            blocked.update(sources.web_access.blocked_domains)
        urls = [r.url for m in sources.package_managers if m.enabled for r in m.registries]
        for url in urls:
            hosts.update(REGISTRY_FILE_HOSTS.get(host_of_url(url) or "", ()))
        if sources.git is not None and sources.git.enabled:
            urls.extend(sources.git.allowed_remotes)
        ports.update(port for url in urls if (port := _port_of(url)) is not None)
    return {"hosts": sorted(hosts), "blocked": sorted(blocked), "ports": sorted(ports)}


def _port_of(url: str) -> int | None:
    try:
        return urlsplit(url.replace("*", "x")).port
    except ValueError:
        return None


def _runs_pip(invocation: Any) -> bool:
    """``python3 -m pip …``: the module, not the program, is the package manager."""
    words = [word.value for word in invocation.effective.words] if invocation.effective else []
    return words[1:3] == ["-m", "pip"]

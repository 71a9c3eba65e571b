"""Decompose a shell command line into every simple command it can run.

``decompose()`` parses the line (plain lines with ``fastparse``, the rest with bashlex) and
walks the tree: lists, pipelines, subshells, brace groups, loops and conditionals, ``$(…)``,
backticks and ``<(…)``/``>(…)``, and it re-parses command strings handed to ``bash -c``/
``sh -c``, ``eval`` and to a shell reading a here-document. Each simple command becomes an
:class:`Invocation`:

* ``views`` — the command as written and again after each harmless wrapper is stripped
  (``timeout 5 nice curl x`` → ``nice curl x`` → ``curl x``). Deny and ask rules are checked
  against every view, so a wrapper can neither hide a denied command nor be denied itself;
* ``effective`` — the innermost view, the only one an allow rule may match;
* ``problems`` — reasons the command cannot be judged (a variable as the program name,
  inline Python, a here-document with ``$(…)`` …): such a command is never allowed;
* ``files`` / ``network`` — paths it reads, writes or deletes (redirections, arguments of
  known commands) and raw sockets (``/dev/tcp/host/port``).

Commands run *by* another command (``sudo X``, ``find -exec X``, ``bash -c X``) are separate
invocations after their runner.

Nothing here knows the rules; ``engine`` judges the invocations.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rules.environment import KNOWN_REFERENCE, KNOWN_VARIABLES
from rules.invocations import Decomposition, Invocation
from rules.text import describe, hidden_characters, sanitise
from rules.walker import Walker

MAX_COMMAND_LENGTH = 4096


def _expandable(command: str) -> bool:
    """May ``$WORKSPACE``/``$CONTEXT_ID`` be replaced by their values? Not if the line could
    assign them in any way (``WORKSPACE=…``, ``read WORKSPACE``, ``for WORKSPACE in``,
    ``declare -n r=WORKSPACE`` …): any mention other than a plain reference blocks it."""
    if "$" in command:
        command = KNOWN_REFERENCE.sub("", command)  # every reference starts with "$"
    stripped = command.translate(_NO_QUOTES)
    return not any(name in stripped for name in KNOWN_VARIABLES)


_NO_QUOTES = str.maketrans("", "", "'\"\\")


def decompose(command: str, *, workspace: str, context_id: str) -> Decomposition:
    """Every simple command of ``command``; see the module docstring."""
    walker = Walker(workspace, {})
    hidden = hidden_characters(command)
    if hidden:
        names = ", ".join(describe(char) for char in hidden[:3])
        reason = f"contains hidden or control characters ({names})"
        walker.out.append(Invocation(text=sanitise(command), problems=(reason,)))
        walker.crude(command[: MAX_COMMAND_LENGTH * 4], reason, "")
        return Decomposition(tuple(walker.out))
    if len(command) > MAX_COMMAND_LENGTH:
        reason = f"longer than {MAX_COMMAND_LENGTH} characters"
        walker.out.append(Invocation(text=sanitise(command[:200]) + "…", problems=(reason,)))
        walker.deny_scan(command[: MAX_COMMAND_LENGTH * 4], reason, "")
        return Decomposition(tuple(walker.out))
    if not command.strip():
        return Decomposition((Invocation(text="", problems=("empty command",)),))
    if _expandable(command):
        walker.expand = {"WORKSPACE": workspace, "CONTEXT_ID": context_id}
    walker.run_text(command, "", 0)
    walker.finish()
    assigned = _assigned_literals(command, walker.literals)
    if assigned:
        # A second reading with the values the line itself certainly assigns: what a deny
        # rule finds there is certain too (F=/etc/shadow; head "$F"). Only its denies
        # count, so it never allows what the first reading did not.
        second = Walker(workspace, {**walker.expand, **assigned}, frozenset(assigned))
        shown = ", ".join(f"{name}={sanitise(value)}" for name, value in assigned.items())
        second.run_text(command, f"with {shown} as this line assigns it", 0)
        walker.out.extend(replace(item, second=True) for item in second.out)
    return Decomposition(tuple(walker.out))


# Variables bash itself sets or changes as it runs: an assignment does not fix their value.
_DYNAMIC = frozenset(
    [
        "BASHPID",
        "BASH_COMMAND",
        "BASH_SUBSHELL",
        "EPOCHREALTIME",
        "EPOCHSECONDS",
        "FUNCNAME",
        "GROUPS",
        "HISTCMD",
        "IFS",
        "LINENO",
        "OLDPWD",
        "OPTARG",
        "OPTIND",
        "PPID",
        "PWD",
        "RANDOM",
        "REPLY",
        "SECONDS",
        "SHLVL",
        "SRANDOM",
        "UID",
        "EUID",
        "_",
    ]
)
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_\-./:,+@%^=]+")


def _assigned_literals(command: str, literals: dict[str, str | None]) -> dict[str, str]:
    """The variables whose value at every later reference is certain: assigned a plain
    literal once, by a statement that certainly runs in the line's own shell, and
    mentioned nowhere else but in plain references (``$F``, ``${F}``) — ``read F``,
    ``for F in``, ``declare F``, ``${F:=…}`` all block it, as for ``_expandable``."""
    found = {}
    for name, value in literals.items():
        if value is None or name in _DYNAMIC or name in KNOWN_VARIABLES:
            continue
        if not _PLAIN_VALUE.fullmatch(value):
            continue  # spaces split and globs expand where it is unquoted
        references = re.compile(rf"\$\{{{name}\}}|\${name}(?![A-Za-z0-9_])")
        stripped = references.sub("", command).translate(_NO_QUOTES)
        if len(re.findall(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", stripped)) != 1:
            continue
        # Every reference comes after the assignment (before it, the value is another).
        assignment = re.search(rf"(?<![A-Za-z0-9_$]){name}=", command)
        first = references.search(command)
        if assignment is not None and (first is None or first.start() > assignment.start()):
            found[name] = value
    return found


def deny_scan(command: str, reason: str) -> Decomposition:
    """Only the deny scan of ``command`` (``Walker.deny_scan``): every word that may be a
    program, checked against deny rules alone, for a line the engine will not judge."""
    walker = Walker("/", {})
    walker.deny_scan(command[: MAX_COMMAND_LENGTH * 4], reason, "")
    return Decomposition(tuple(walker.out))

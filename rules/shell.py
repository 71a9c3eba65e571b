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
    return Decomposition(tuple(walker.out))


def deny_scan(command: str, reason: str) -> Decomposition:
    """Only the deny scan of ``command`` (``Walker.deny_scan``): every word that may be a
    program, checked against deny rules alone, for a line the engine will not judge."""
    walker = Walker("/", {})
    walker.deny_scan(command[: MAX_COMMAND_LENGTH * 4], reason, "")
    return Decomposition(tuple(walker.out))

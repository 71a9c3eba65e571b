"""git as the executor runs it: the git that was judged, never a program a repository's
configuration names.

Inside the sandbox, ``git`` (first on ``PATH``, and bound over the image's git) is a stub
that runs this script with the real program's path:

    python3 -I -S gitguard.py REAL_GIT ARGS...

It lists the configuration git would read for these arguments (``git [-C…/-c…/--git-dir…]
config --list --show-scope -z``: the repository's, its worktree's, the user's, and the
system's when the command chose that file with ``GIT_CONFIG_SYSTEM``; the image's own
system file and the executor's ``-c``/``GIT_CONFIG_*`` settings are trusted) and refuses
to start git, exit 128, naming the setting, when one of them makes git start a program:
filter, diff and merge drivers, textconv, pagers, editors, ``gpg.program``,
``core.sshCommand``, credential helpers, ``uploadpack``/``receivepack``, ``!`` aliases…
(:data:`COMMAND_KEYS`). A repository cloned from a remote carries no configuration of its
own: what is refused is what a run wrote into a context for a later run to obey. ``git
config`` itself is let through, so the setting can be removed.

Otherwise it becomes git (``exec``). Standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

# Settings that make git start a program (the <name> of a driver, remote, alias… is ".+").
COMMAND_KEYS = re.compile(
    r"^(?:"
    r"core\.(?:pager|editor|sshcommand|askpass|gitproxy|alternaterefscommand|fsmonitor"
    r"|hookspath)"
    r"|sequence\.editor|diff\.external|interactive\.difffilter|imap\.tunnel|web\.browser"
    r"|gpg\.(?:[^.]+\.)?program|gpg\.ssh\.defaultkeycommand"
    r"|credential\.(?:.+\.)?helper|pager\..+|uploadpack\.packobjectshook"
    r"|filter\..+\.(?:clean|smudge|process)|diff\..+\.(?:command|textconv)"
    r"|merge\..+\.driver|remote\..+\.(?:uploadpack|receivepack|vcs)"
    r"|(?:diff|merge)tool\..+\.(?:cmd|path)|trailer\..+\.(?:command|cmd)"
    r"|(?:man|browser|guitool)\..+\.(?:cmd|path)|sendemail\..+|instaweb\..+"
    r")$"
)
# Settings that start a program only when their value starts with "!".
SHELL_VALUE_KEYS = re.compile(r"^(?:alias\..+|submodule\..+\.update)$")
# Options before the subcommand that change which configuration git reads (and take a
# value: attached with "=" for the long ones, or the next word).
_SCOPING = ("-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace")
_FLAGS = ("--bare",)


def _scoping_options(args: list[str]) -> tuple[list[str], str | None]:
    """The options before the subcommand that ``git config`` must also get, and the
    subcommand (None: none found)."""
    kept: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if not word.startswith("-"):
            return kept, word
        name = word.split("=", 1)[0]
        if name in _SCOPING:
            if "=" in word and name.startswith("--"):
                kept.append(word)
            elif index + 1 < len(args):
                kept += [word, args[index + 1]]
                index += 1
        elif name in _FLAGS:
            kept.append(word)
        index += 1
    return kept, None


def refusal(listing: bytes, environ: dict[str, str]) -> str | None:
    """Why the configuration in ``listing`` (``--show-scope -z``) may not be obeyed."""
    items = listing.split(b"\0")
    checked = {"local", "worktree", "global"}
    if "GIT_CONFIG_SYSTEM" in environ:
        checked.add("system")
    found = []
    for scope, entry in zip(items[0::2], items[1::2], strict=False):
        key, _, value = entry.decode(errors="replace").partition("\n")
        if scope.decode() not in checked:
            continue
        key = key.lower()
        if COMMAND_KEYS.match(key) or (SHELL_VALUE_KEYS.match(key) and value.startswith("!")):
            found.append(f"{key} ({scope.decode()})")
    if not found:
        return None
    return (
        "cs-executor: git refused: this repository's configuration sets "
        + ", ".join(found)
        + ", which would make git start a program nobody judged. Remove the setting "
        "(git config --unset KEY) to use git in this context."
    )


def main(argv: list[str]) -> None:
    real, args = argv[1], argv[2:]
    scoping, subcommand = _scoping_options(args)
    if subcommand != "config":
        # The real git, listing configuration only.
        listed = subprocess.run(
            [real, *scoping, "config", "--list", "--show-scope", "-z"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        # A failure here (a -C directory that is not there) is git's to report below.
        reason = refusal(listed.stdout, dict(os.environ)) if listed.returncode == 0 else None
        if reason is not None:
            print(reason, file=sys.stderr)
            sys.exit(128)
    os.execv(real, ["git", *args])  # noqa: S606 - the image's git


if __name__ == "__main__":
    main(sys.argv)

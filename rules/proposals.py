"""The narrow allow rule "approve and allow similar" offers for a part that is asked about."""

from __future__ import annotations

import posixpath
import re

from rules.invocations import View
from rules.model import FileAction
from rules.patterns import SENTINEL
from rules.words import WordKind

_SIMPLE_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


def propose_shell_rule(view: View) -> str | None:
    """Program + subcommand + first argument, as far as they are plain words:
    ``pip install pandas`` → ``shell(pip install pandas:*)``, ``pip install pandas==2`` →
    ``shell(pip install:*)``, ``ls -la`` → ``shell(ls:*)``."""
    program = view.program if view.trusted else view.words[0].value
    if re.search(r"[\s()*]", program):
        return None
    words = [program]
    for word in view.words[1:3]:
        if word.kind is not WordKind.LITERAL or not _SIMPLE_TOKEN.match(word.value):
            break
        words.append(word.value)
    return f"shell({' '.join(words)}:*)"


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def propose_file_rule(action: FileAction | None, path: str | None, workspace: str) -> str | None:
    """The path's directory: ``/workspace/c1/data/a.csv`` → ``file(read:${WORKSPACE}/data/*)``."""
    if action is None or path is None or SENTINEL in path or "\n" in path:
        return None
    directory = posixpath.dirname(path)
    escaped = _GLOB_SPECIAL.sub(r"\\\1", directory)
    if directory == workspace or directory.startswith(workspace + "/"):
        escaped = "${WORKSPACE}" + _GLOB_SPECIAL.sub(r"\\\1", directory[len(workspace) :])
    if ")" in escaped or "(" in escaped or "${" in escaped.replace("${WORKSPACE}", ""):
        return None
    return f"file({action.value}:{escaped.rstrip('/')}/*)"

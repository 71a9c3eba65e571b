"""How much an operation the rules did not decide could do, read from the engine's own
evaluation: the reviewer's first hint, and what a profile's two-person rule keys on.

High: anything that reaches the network, any write or delete that is not certainly inside
the context's directory, and any text with hidden characters (shown escaped). Low: a read
inside the context's directory. Everything else is medium.
"""

from __future__ import annotations

import posixpath
from enum import StrEnum

from rules.model import Evaluation, FileAction, FileOperation, Kind, NetworkOperation, Operation

# What the engine writes for a path only known at run time (rules.words.SENTINEL, shown).
UNKNOWN = "…"
CHANGES = ("write", "delete", "access")  # "access": a path argument whose use is unknown


class Risk(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


def inside(path: str, directory: str) -> bool:
    """Is the absolute ``path`` the directory itself or below it, as written? A part only
    known at run time ("data/…": whatever a recursion or a glob finds there) is inside
    when what comes before it is a directory strictly below ``directory``: even a ``..``
    it may turn out to hold stays inside then."""
    if UNKNOWN in path:
        known, _, _ = path.partition(UNKNOWN)
        if not known.endswith("/"):
            return False
        parent = posixpath.normpath(known)
        return parent.startswith(directory + "/") and ".." not in parent.split("/")
    normal = posixpath.normpath(path)
    return normal == directory or normal.startswith(directory + "/")


def changed_paths(evaluation: Evaluation) -> list[tuple[str, str]]:
    """(action, path) of every part that writes, deletes or may change a file."""
    found = []
    for part in evaluation.parts:
        if part.kind is not Kind.FILE:
            continue
        action, _, path = part.text.partition(" ")
        if action in CHANGES:
            found.append((action, path))
    return found


def assess(operation: Operation, evaluation: Evaluation, workspace: str) -> Risk:
    if isinstance(operation, NetworkOperation) or "\\u" in evaluation.normalised:
        return Risk.HIGH
    if any(part.kind is Kind.NETWORK for part in evaluation.parts):
        return Risk.HIGH
    if evaluation.reaches_network:
        # A host a program contacts that sources.json judged (no part of its own), or
        # one only known at run time (git push origin: the remote's URL).
        return Risk.HIGH
    if any(not inside(path, workspace) for _, path in changed_paths(evaluation)):
        return Risk.HIGH
    if isinstance(operation, FileOperation):
        path = posixpath.normpath(posixpath.join(workspace, operation.path))
        if not inside(path, workspace):
            return Risk.HIGH
        return Risk.LOW if operation.action is FileAction.READ else Risk.MEDIUM
    return Risk.MEDIUM

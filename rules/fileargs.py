"""Paths in the arguments of a program the engine does not model.

What such a program does with a path is unknown, so no rule can allow it anyway (it is at
most asked about); its words are still checked against the deny and ask rules of every
action, relative ones resolved from the working directory, so the reason a reviewer sees
names the protected path it touches.
"""

from __future__ import annotations

from collections.abc import Sequence

from rules.words import Word, WordKind


def unmodelled_paths(words: Sequence[Word]) -> list[Word]:
    """Every word that could name a path: not an option, not only known at run time."""
    return [
        word
        for word in words
        if word.kind is not WordKind.UNKNOWN and word.value and not word.value.startswith("-")
    ]

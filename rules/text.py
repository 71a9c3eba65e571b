"""Characters a reviewer cannot see, and how to show them.

A command that contains a zero-width space, a bidi override or a raw control character can
look harmless on screen while the shell runs something else, so such input never gets past
``ask`` and is always displayed with the hidden characters spelled out.
"""

from __future__ import annotations

import re
import unicodedata

# Ranges that are invisible or reorder text but are not all in a "format" category.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # arabic letter mark
    (0x115F, 0x1160),  # hangul fillers
    (0x17B4, 0x17B5),  # khmer inherent vowels
    (0x180B, 0x180F),  # mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space/joiners, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x2069),  # bidi isolates
    (0x3164, 0x3164),  # hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # byte order mark / zero-width no-break space
    (0xFFA0, 0xFFA0),  # halfwidth hangul filler
    (0xE0000, 0xE007F),  # tag characters
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Anything but printable ASCII, newline, tab and the ellipsis the engine itself writes.
_MAYBE_HIDDEN = re.compile("[^\x20-\x7e\n\t\u2026]")


def is_hidden(char: str) -> bool:
    """True for control characters (other than newline and tab), invisible or bidi
    characters, unassigned/private code points and non-ASCII spaces."""
    code = ord(char)
    if code < 0x80:
        return (code < 0x20 and char not in "\n\t") or code == 0x7F
    if any(low <= code <= high for low, high in _INVISIBLE_RANGES):
        return True
    # Cc/Cf/Co/Cs/Cn: control, format, private use, surrogate, unassigned. Zs/Zl/Zp: a
    # non-ASCII space looks like a word boundary but is part of the word for the shell.
    return unicodedata.category(char) in {"Cc", "Cf", "Co", "Cs", "Cn", "Zs", "Zl", "Zp"}


def hidden_characters(text: str) -> list[str]:
    """The hidden characters in ``text``, in order of appearance, without duplicates."""
    if text.isascii():
        return list(dict.fromkeys(_ASCII_CONTROL.findall(text)))
    return list(dict.fromkeys(char for char in text if is_hidden(char)))


def describe(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}".rstrip()


def escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def sanitise(text: str) -> str:
    """``text`` with every hidden character replaced by its escape (``\\u200b``), so what a
    reviewer reads is what the shell gets. Newlines and tabs stay as they are."""
    if not _MAYBE_HIDDEN.search(text):
        return text
    return "".join(escape(char) if is_hidden(char) else char for char in text)

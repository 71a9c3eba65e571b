"""Kubernetes resource quantities ("5Gi", "500M", "1.5e3"), parsed once at the edge."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL: dict[str, Decimal | int] = {
    "m": Decimal("0.001"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?\d+))?$"
)
MAX_LENGTH = 64


def parse_quantity(text: str) -> Decimal:
    """The quantity's value in base units; ``ValueError`` when it is not a quantity."""
    if not isinstance(text, str) or len(text) > MAX_LENGTH:
        raise ValueError("not a Kubernetes quantity")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError("not a Kubernetes quantity")
    try:
        number = Decimal(match["number"])
        if match["exponent"] is not None:
            exponent = int(match["exponent"])
            if abs(exponent) > 30:
                raise ValueError("quantity exponent out of range")
            return number.scaleb(exponent)
        suffix = match["suffix"] or ""
        return number * (_BINARY.get(suffix) or _DECIMAL[suffix])
    except InvalidOperation:
        raise ValueError("not a Kubernetes quantity") from None


def is_positive_quantity(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return parse_quantity(text) > 0
    except ValueError:
        return False


def format_bytes(value: int) -> str:
    """The largest binary unit that represents ``value`` exactly (10Gi, 1536Mi, 7)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if value >= unit and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)

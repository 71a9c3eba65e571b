from __future__ import annotations

from decimal import Decimal

import pytest

from contextsvc.quantity import format_bytes, is_positive_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5Gi", Decimal(5 * 2**30)),
        ("500M", Decimal(500 * 10**6)),
        ("1.5Ki", Decimal(1536)),
        ("100m", Decimal("0.1")),
        ("1e3", Decimal(1000)),
        ("12", Decimal(12)),
        (".5", Decimal("0.5")),
    ],
)
def test_parse(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "5 Gi", "5GB", "five", "5Gi ", "1e", "0x10", "5" * 70])
def test_not_quantities(text: str) -> None:
    with pytest.raises(ValueError, match=r"^not a Kubernetes quantity$"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "positive"), [("1", True), ("0", False), ("-1Gi", False), (5, False)]
)
def test_positive(text: object, positive: bool) -> None:
    assert is_positive_quantity(text) is positive


def test_format_bytes_picks_the_largest_exact_unit() -> None:
    assert format_bytes(10 * 2**30) == "10Gi"
    assert format_bytes(1536 * 2**20) == "1536Mi"
    assert format_bytes(7) == "7"

"""Quantities parse exactly, with every suffix kind apimachinery accepts, and round up."""

from fractions import Fraction

import pytest
from clusternet_nats.api.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        (3, Fraction(3)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("100n", Fraction(1, 10**7)),
        ("250u", Fraction(1, 4000)),
        ("1k", Fraction(1000)),
        ("2M", Fraction(2 * 10**6)),
        ("1G", Fraction(10**9)),
        ("1Ki", Fraction(1024)),
        ("128Mi", Fraction(128 * 2**20)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("2Ti", Fraction(2 * 2**40)),
        ("1e3", Fraction(1000)),
        ("12E-1", Fraction(6, 5)),
        ("-1", Fraction(-1)),
        ("+2k", Fraction(2000)),
    ],
)
def test_parses_exactly(text: str | int, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "m", "1.2.3", "1Mb", "1 Gi", "1ki", "1e", "e3", "1e1.5", "1\n"])
def test_rejects_what_kubernetes_rejects(text: str) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(text)


def test_rounds_up_like_apimachinery() -> None:
    assert milli_value("0.1") == 100
    assert milli_value("1n") == 1, "a positive fraction of a milli is one milli"
    assert value("1500m") == 2
    assert value("128Mi") == 134217728

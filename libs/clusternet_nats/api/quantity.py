"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3") as exact numbers.

Counting how many replicas fit divides allocatable resources by requests; on floats, 0.1 CPU is
0.1000000000000000055 and a division landing exactly on a boundary can lose a replica. So a
quantity parses to a Fraction, and rounds up to an integer the way apimachinery's Value() and
MilliValue() do, which is what Clusternet's predictor divides.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>[KMGTPE]i|[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?"
)

_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


class QuantityError(ValueError):
    def __init__(self, text: str) -> None:
        super().__init__(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)"
        )


def parse_quantity(text: str | int) -> Fraction:
    """The exact value of a quantity: "500m" is 1/2, "1Ki" is 1024, 3 is 3."""
    if isinstance(text, int):
        return Fraction(text)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(text)
    value = Fraction(match["number"])
    if match["suffix"]:
        return value * _SUFFIXES[match["suffix"]]
    if match["exponent"]:
        return value * Fraction(10) ** int(match["exponent"])
    return value


QUANTITIES_CACHED = 4096
"""Texts whose values are kept: a fleet's inventories repeat a handful ("4", "16Gi", "110"), and
the scheduler and predictor read every node of every inventory that changes. A text refused is
not kept (the cache keeps answers, not errors), so it is refused every time, naming it."""


@functools.lru_cache(maxsize=QUANTITIES_CACHED)
def value(text: str | int) -> int:
    """apimachinery's Quantity.Value(): the quantity in units, rounded up."""
    return math.ceil(parse_quantity(text))


@functools.lru_cache(maxsize=QUANTITIES_CACHED)
def milli_value(text: str | int) -> int:
    """apimachinery's Quantity.MilliValue(): the quantity in thousandths, rounded up."""
    return math.ceil(parse_quantity(text) * 1000)


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def cpu_text(millicores: int) -> str:
    """As Kubernetes prints CPU: whole cores when exact ("12"), else millicores ("1500m")."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_text(size: int) -> str:
    """The largest binary suffix that divides the size exactly ("24Gi", "1536Mi", "100")."""
    for suffix, unit in _BINARY:
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)

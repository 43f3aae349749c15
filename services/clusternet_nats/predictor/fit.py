"""How many replicas fit in allocatable resources, counted as Clusternet's predictor counts.

Each requested resource bounds the count by allocatable // request, CPU in millicores and
everything else in units, both rounded up first as apimachinery's MilliValue() and Value() do;
a requested resource the cluster does not report fits zero times. Reported `pods` cap the count
too; Clusternet assumes every cluster reports them, which ours may not yet, so an absent `pods`
caps nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusternet_nats.api.quantity import milli_value, value

MAX_REPLICAS = 2**31 - 1
"""The answer when nothing bounds the count (Clusternet's math.MaxInt32)."""


def _amount(name: str, quantity: str) -> int:
    return milli_value(quantity) if name == "cpu" else value(quantity)


def max_acceptable_replicas(allocatable: Mapping[str, str], requests: Mapping[str, str]) -> int:
    fits = MAX_REPLICAS
    for name, quantity in requests.items():
        needed = _amount(name, quantity)
        if needed > 0:
            fits = min(fits, _amount(name, allocatable.get(name, "0")) // needed)
    if "pods" in allocatable:
        fits = min(fits, value(allocatable["pods"]))
    return max(fits, 0)

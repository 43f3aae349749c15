"""How a controller puts a taint on a ManagedCluster and takes it off (Clusternet's pkg/utils/taints).

Two taints are the same taint when key and effect agree (Kubernetes' MatchTaint); the value is
what the taint says. Adding a taint that is there with another value replaces it in its place,
so the order of a cluster's taints never changes with a condition's reason; taking one off takes
every taint of that key and effect. Both say whether the list changed, so a controller writes the
ManagedCluster only then.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusternet_nats.api.meta import Taint


def same_taint(a: Taint, b: Taint) -> bool:
    """Whether `a` and `b` are one taint (key and effect), whatever their values."""
    return a.key == b.key and a.effect == b.effect


def taint_exists(taints: Sequence[Taint], taint: Taint) -> bool:
    return any(same_taint(t, taint) for t in taints)


def add_or_update_taint(taints: Sequence[Taint], taint: Taint) -> tuple[list[Taint], bool]:
    """`taints` with `taint` added at the end, or in place of the same taint; and whether that changed them."""
    out: list[Taint] = []
    replaced = False
    for existing in taints:
        if same_taint(existing, taint):
            if existing == taint:
                return list(taints), False
            out.append(taint)
            replaced = True
        else:
            out.append(existing)
    return (out if replaced else [*out, taint]), True


def remove_taint(taints: Sequence[Taint], taint: Taint) -> tuple[list[Taint], bool]:
    """`taints` without any of the same taint as `taint`; and whether one was there."""
    out = [t for t in taints if not same_taint(t, taint)]
    return out, len(out) != len(taints)

"""Clusternet's `--feature-gates` flag: `Name=true,Other=false`, each gate with its default.

Only the gates this implementation honours are accepted; a misspelt or unknown one is an error
naming it (Kubernetes' component-base does the same), never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

KNOWN: Mapping[str, bool] = {"ClusterInit": False}
"""Gate name to default, as Clusternet's pkg/features (the hub's; a service may name its own set)."""


def parse_feature_gates(value: str, known: Mapping[str, bool] = KNOWN) -> dict[str, bool]:
    """Every known gate's state from a flag value; raises ValueError naming the bad entry."""
    gates = dict(known)
    for entry in filter(None, (part.strip() for part in value.split(","))):
        name, sep, state = entry.partition("=")
        name, state = name.strip(), state.strip().lower()
        if name not in known:
            raise ValueError(f"unrecognized feature gate {name!r} (known: {', '.join(sorted(known))})")
        if not sep or state not in ("true", "false"):
            raise ValueError(f"feature gate {name!r} needs =true or =false, not {entry!r}")
        gates[name] = state == "true"
    return gates

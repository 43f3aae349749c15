"""The scheduler's extension points, as in the Kubernetes scheduling framework.

A plugin is a small type with a name that implements one or more extension points; a profile
(`Framework`) runs them. A new scheduling rule is a new plugin, testable with nothing but a
Subscription and a ManagedCluster, never an edit to the loop that runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster

MAX_SCORE = 100
"""What a score plugin gives its best cluster (Clusternet's MaxClusterScore)."""


@dataclass(frozen=True)
class Status:
    """A plugin's verdict on one cluster: success, or the reasons it cannot take the Subscription."""

    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return not self.reasons

    @classmethod
    def unschedulable(cls, plugin: str, reason: str) -> Status:
        return cls((reason,), plugin)


class FilterPlugin(Protocol):
    """Rules a cluster out for a Subscription; a cluster every filter passes is feasible."""

    @property
    def name(self) -> str: ...

    def filter(self, sub: Subscription, cluster: ManagedCluster) -> Status: ...


class ScorePlugin(Protocol):
    """Ranks feasible clusters: 0..MAX_SCORE per cluster's namespaced name, higher is better."""

    @property
    def name(self) -> str: ...

    def score(self, sub: Subscription, clusters: Sequence[ManagedCluster]) -> dict[str, int]: ...

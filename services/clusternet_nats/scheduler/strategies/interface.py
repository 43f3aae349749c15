"""What a placement strategy is: given the feasible clusters, the replicas each feed gets there.

Strategies ask for a feed's desired replicas through a callable only when they divide, so
replicating a Subscription never depends on its workloads' Manifests having arrived.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.api.meta import Feed

DesiredReplicas = Callable[[Feed], "int | None"]
"""A feed's desired replicas, None when it is not a workload with replicas to divide."""


class Strategy(Protocol):
    def assign(
        self, sub: Subscription, clusters: Sequence[ManagedCluster], desired: DesiredReplicas
    ) -> dict[str, list[int]]:
        """Replicas per feed key, one entry per cluster in `clusters` order; {} when not dividing."""
        ...

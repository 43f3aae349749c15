"""Replication: every feasible cluster gets each feed whole, so there are no replicas to divide."""

from __future__ import annotations

from collections.abc import Sequence

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.scheduler.strategies.interface import DesiredReplicas


class Replication:
    def assign(
        self, sub: Subscription, clusters: Sequence[ManagedCluster], desired: DesiredReplicas
    ) -> dict[str, list[int]]:
        return {}

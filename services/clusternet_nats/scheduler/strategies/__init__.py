"""Placement strategies, and which one a Subscription's spec asks for."""

from __future__ import annotations

from clusternet_nats.api.apps import DividingType, SchedulingStrategy, SubscriptionSpec
from clusternet_nats.scheduler.strategies.interface import DesiredReplicas, Strategy
from clusternet_nats.scheduler.strategies.replication import Replication
from clusternet_nats.scheduler.strategies.static_dividing import StaticDividing


class UnsupportedStrategyError(Exception):
    """A strategy Clusternet has that this scheduler does not implement yet."""


def strategy_for(spec: SubscriptionSpec) -> Strategy:
    if spec.scheduling_by_sub_group:
        raise UnsupportedStrategyError("schedulingBySubGroup is not supported yet")
    if spec.scheduling_strategy == SchedulingStrategy.REPLICATION:
        return Replication()
    dividing = spec.dividing_scheduling
    if dividing is None or dividing.type == DividingType.STATIC:
        return StaticDividing()
    raise UnsupportedStrategyError(
        f"scheduling strategy {spec.scheduling_strategy}/{dividing.type} is not supported yet"
    )


__all__ = ["DesiredReplicas", "Replication", "StaticDividing", "Strategy", "UnsupportedStrategyError", "strategy_for"]

"""The scheduler service: one reconciler over Subscriptions, with the configured profiles."""

from collections.abc import Iterable

from clusternet_nats.runtime.service import Builder, ServiceContext
from clusternet_nats.scheduler.config import SchedulerConfiguration
from clusternet_nats.scheduler.framework.interfaces import EMPTY_HANDLE, BoundSubscription, Handle
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.scheduler.profiles import build_profiles
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler


class _ReconcilerHandle:
    """The plugins' Handle is the reconciler's caches, which exist only once the profiles it runs
    have been built: this stands in until then."""

    def __init__(self) -> None:
        self.target: Handle = EMPTY_HANDLE

    def bound_subscriptions(self) -> Iterable[BoundSubscription]:
        return self.target.bound_subscriptions()


def builder(config: SchedulerConfiguration, source: str) -> Builder:
    async def build(ctx: ServiceContext) -> None:
        handle = _ReconcilerHandle()
        profiles = build_profiles(config, context=PluginContext(handle=handle, service=ctx), source=source)
        handle.target = SubscriptionScheduler(ctx, profiles)

    return build


build = builder(SchedulerConfiguration(), "default configuration")
"""Clusternet's default profile, for in-process tests and tools."""

"""The scheduler service: one reconciler over Subscriptions, with the configured profiles."""

from clusternet_nats.runtime.service import Builder, ServiceContext
from clusternet_nats.scheduler.config import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.scheduler.profiles import build_profiles
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler


def builder(config: SchedulerConfiguration, source: str) -> Builder:
    async def build(ctx: ServiceContext) -> None:
        profiles = build_profiles(config, context=PluginContext(service=ctx), source=source)
        SubscriptionScheduler(ctx, profiles.frameworks[DEFAULT_SCHEDULER_NAME])

    return build


build = builder(SchedulerConfiguration(), "default configuration")
"""Clusternet's default profile, for in-process tests and tools."""

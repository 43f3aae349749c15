"""The scheduler service: one reconciler over Subscriptions, with Clusternet's default profile."""

from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.algorithm import default_framework
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler


async def build(ctx: ServiceContext) -> None:
    SubscriptionScheduler(ctx, default_framework())

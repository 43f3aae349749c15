"""DefaultBinder: writes the decision through the reconciler's binder, as Clusternet's writes
the Subscription's status."""

from __future__ import annotations

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, Binder, Status


class DefaultBinder:
    name = "DefaultBinder"

    async def bind(self, sub: Subscription, binding: SubscriptionBinding, binder: Binder) -> Status:
        await binder.write_binding(sub, binding)
        return SUCCESS

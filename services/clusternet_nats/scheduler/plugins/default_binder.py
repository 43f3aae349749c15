"""DefaultBinder: writes the decision through the reconciler's binder, as Clusternet's writes
the Subscription's status: its clusters in name order (replicas following), and a write that
fails is the bind's failure, so the framework unreserves and the reconciler retries."""

from __future__ import annotations

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.binding import SubscriptionBinding
from clusternet_nats.domain.subscriptions import in_cluster_order
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, Binder, Status


class DefaultBinder:
    name = "DefaultBinder"

    async def bind(self, sub: Subscription, binding: SubscriptionBinding, binder: Binder) -> Status:
        try:
            await binder.write_binding(sub, in_cluster_order(binding))
        except Exception as err:  # any failed write is the bind's failure (Clusternet: AsStatus(err))
            return Status.unschedulable(self.name, f"failed to bind {sub.namespaced_name()}: {err}")
        return SUCCESS

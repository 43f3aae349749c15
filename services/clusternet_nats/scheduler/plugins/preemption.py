"""DefaultPreemption: a Subscription with `priority` may take room from lower-priority ones.

Clusternet declares `priority` and `preemptionPolicy` but never acts on them. Here, as
Kubernetes' DefaultPreemption does for pods, a PostFilter runs when a dynamically divided
Subscription has replicas no cluster has room for and its policy is PreemptLowerPriority
(the default): Subscriptions of strictly lower priority (unset is 0) that hold replicas on its
feasible clusters are chosen, lowest priority first (then by key), until the room they hold
covers what is missing. Their replicas count as room for ours, one for one (the predictor
answers in replicas, not resources, so that is the unit we have); the framework divides again
and the decision names them in `preempted`, for the scheduler to reschedule them and tell
them by an Event.
"""

from __future__ import annotations

from clusternet_nats.api.apps import PreemptionPolicy
from clusternet_nats.domain.feeds import feed_key
from clusternet_nats.scheduler.framework.interfaces import SUCCESS, CycleState, Status

NAME = "DefaultPreemption"
NOT_ELIGIBLE = "preemption: not eligible"
NO_VICTIMS = "preemption: no lower-priority Subscription holds replicas on the feasible clusters"


class DefaultPreemption:
    name = NAME

    def post_filter(self, state: CycleState) -> Status:
        sub = state.sub
        missing = sum(state.unscheduled.values())
        eligible = sub.spec.preemption_policy == PreemptionPolicy.PREEMPT_LOWER_PRIORITY
        if not eligible or missing <= 0 or not state.predictions:
            return Status.unschedulable(self.name, NOT_ELIGIBLE)
        priority = sub.spec.priority or 0
        own = sub.namespaced_name()
        victims = sorted(
            (
                bound
                for bound in state.handle.bound_subscriptions()
                if bound.binding is not None
                and bound.sub.namespaced_name() != own
                and (bound.sub.spec.priority or 0) < priority
            ),
            key=lambda bound: (bound.sub.spec.priority or 0, bound.key),
        )
        feeds = [
            i
            for i, order in enumerate(state.finv.spec.feeds if state.finv else [])
            if state.unscheduled.get(feed_key(order)) is not None
        ]
        for bound in victims:
            assert bound.binding is not None
            freed = {
                cluster: sum(values[i] for values in bound.binding.replicas.values() if len(values) > i)
                for i, cluster in enumerate(bound.binding.binding_clusters)
                if cluster in state.predictions
            }
            if sum(freed.values()) <= 0:
                continue
            state.preempted.append(bound.key)
            for cluster, count in freed.items():
                room = state.predictions[cluster]
                for i in feeds:
                    current = room[i]
                    room[i] = None if current is None else current + count
            missing -= sum(freed.values())
            if missing <= 0:
                break
        return SUCCESS if state.preempted else Status.unschedulable(self.name, NO_VICTIMS)


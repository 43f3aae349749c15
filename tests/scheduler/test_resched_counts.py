"""In the running scheduler, a cluster's label change re-evaluates the Subscriptions whose
selectors chose it before or choose it now, and no other (issue 15, item 3: work grows with
changes, not with the number of Subscriptions)."""

from __future__ import annotations

from collections.abc import Callable

from clusternet_nats.api.apps import Subscription
from clusternet_nats.api.clusters import ManagedCluster
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.scheduler.config import SchedulerConfiguration
from clusternet_nats.scheduler.framework.interfaces import EMPTY_HANDLE
from clusternet_nats.scheduler.framework.registry import PluginContext
from clusternet_nats.scheduler.profiles import build_profiles
from clusternet_nats.scheduler.reconciler import SubscriptionScheduler
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually, holds

from tests.scheduler.conftest import Stores, selecting

ClusterFactory = Callable[..., ManagedCluster]
SubscriptionFactory = Callable[..., Subscription]


async def test_a_relabelled_cluster_re_evaluates_only_the_subscriptions_it_concerns(
    nats_server: NatsServer, hub: Stores, unique_ns: str, make_cluster: ClusterFactory, make_sub: SubscriptionFactory
) -> None:
    prod = await hub.clusters.create(make_cluster(f"{unique_ns}-p", labels={"test": unique_ns, "env": "prod"}))
    dev = await hub.clusters.create(make_cluster(f"{unique_ns}-d", labels={"test": unique_ns, "env": "dev"}))
    subs: dict[str, list[Subscription]] = {}
    for env, count in (("prod", 5), ("dev", 3), ("qa", 2)):
        made = [make_sub(f"{env}-{i}", unique_ns, selecting(unique_ns, env=env)) for i in range(count)]
        subs[env] = [await hub.subs.create(sub) for sub in made]
    reconciled: list[str] = []

    class Counting(SubscriptionScheduler):
        async def reconcile(self, key: str) -> None:
            reconciled.append(key)
            await super().reconcile(key)

    async def build(ctx: ServiceContext) -> None:
        context = PluginContext(handle=EMPTY_HANDLE, service=ctx)
        Counting(ctx, build_profiles(SchedulerConfiguration(), context=context, source="test"))

    async with running_service("clusternet-scheduler", build, nats_server.url):
        for sub in subs["prod"]:
            await hub.wait_bound(sub, [f"{prod.namespace}/mc"])
        for sub in subs["dev"]:
            await hub.wait_bound(sub, [f"{dev.namespace}/mc"])
        for sub in subs["qa"]:
            await eventually(lambda s=sub: hub.unbound_clusters(s), 10, what=f"{sub.name} bound nowhere")
        settled = len(reconciled)
        await holds(lambda: len(reconciled) == settled, 0.5, what="the scheduler idle")

        relabelled = dev.model_copy(deep=True)
        relabelled.metadata.labels = {"test": unique_ns, "env": "qa"}
        await hub.clusters.update(relabelled, dev)
        for sub in subs["qa"]:
            await hub.wait_bound(sub, [f"{dev.namespace}/mc"])
        for sub in subs["dev"]:
            await eventually(lambda s=sub: hub.unbound_clusters(s), 10, what=f"{sub.name} unbound")
        prod_names = {s.name for s in subs["prod"]}

        def prod_untouched() -> bool:
            return not {f"{unique_ns}.{name}" for name in prod_names} & set(reconciled[settled:])

        await holds(prod_untouched, 0.5, what="no prod Subscription re-evaluated")
        # (Subscriptions of other tests on the same NATS, selecting any cluster, may be re-evaluated too.)
        after = {key.rsplit(".", 1)[-1] for key in reconciled[settled:] if key.startswith(f"{unique_ns}.")}
        assert after == {s.name for env in ("dev", "qa") for s in subs[env]}, (
            f"re-evaluated {sorted(after)}: the prod Subscriptions do not select the cluster before or after"
        )

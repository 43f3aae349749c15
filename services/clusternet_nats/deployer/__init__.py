"""The deployer: turns each scheduled Subscription into per-cluster Bases and rendered Descriptions,
and folds what the agents report back into the Subscription's aggregated status.

It is Clusternet's deployer (controllermanager/deployer and its localizer) as one level-triggered
reconciler per Subscription over the NATS KV buckets: every change to a feed, an override, a
cluster, a binding, a Base, a Description or a Description's status re-runs that reconcile, which
derives everything from the informer caches and writes only what differs.
"""

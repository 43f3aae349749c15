"""Cluster lifecycle on the hub: a cluster that stops heartbeating becomes Unknown and tainted."""

from clusternet_nats.hub.clusterhealth.controller import ClusterHealth

__all__ = ["ClusterHealth"]

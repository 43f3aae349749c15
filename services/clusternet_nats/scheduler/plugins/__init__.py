"""The in-tree scheduler plugins, one module each."""

from clusternet_nats.scheduler.plugins.cluster_affinity import ClusterAffinityFilter
from clusternet_nats.scheduler.plugins.taint_toleration import TaintTolerationFilter, TaintTolerationScore

__all__ = ["ClusterAffinityFilter", "TaintTolerationFilter", "TaintTolerationScore"]

"""The simulated cluster backend: a child cluster in memory (optionally on disk), no Kubernetes."""

from clusternet_nats.agent.backends.sim.cluster import SimCluster
from clusternet_nats.agent.backends.sim.nodes import Sizing

__all__ = ["SimCluster", "Sizing"]

"""ClusterInit on the hub: a new cluster is initialised by its init Base before anything else."""

from clusternet_nats.hub.clusterinit.controller import ClusterInitController

__all__ = ["ClusterInitController"]

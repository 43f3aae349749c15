"""clusternet-predictor: answers "how many replicas of this shape fit in cluster X" over NATS
request/reply, so the scheduler's dynamic dividing can ask without a route into any cluster.

For now it counts from the ManagedCluster's reported allocatable resources; node-level
inventory arrives with heartbeats later.
"""

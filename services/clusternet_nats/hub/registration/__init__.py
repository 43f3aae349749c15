"""Cluster registration: bootstrap tokens, ClusterRegistrationRequests and NATS auth callout."""

"""The bridge: Clusternet's CRDs on a parent kube-apiserver, kept in step with the NATS store.

Users who drive Clusternet with plain `kubectl` against a parent cluster keep doing so: the
bridge publishes what they write (specs, and the objects their Subscriptions feed) to NATS, and
writes back what the controllers report (statuses, Descriptions, ManagedClusters). Each side
has one writer per field, so nothing the bridge writes can come back to it as a change to copy.
"""

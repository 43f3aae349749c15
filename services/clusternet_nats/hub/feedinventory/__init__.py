"""The FeedInventory of each Subscription: what its feeds ask of a cluster, for the scheduler."""

from clusternet_nats.hub.feedinventory.controller import FeedInventoryController

__all__ = ["FeedInventoryController"]

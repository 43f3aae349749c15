"""The NATS store: every object in a JetStream KV bucket, informers that list then follow.

Services share no memory and call no one: they read and write state here, and react to
changes of state. See docs/architecture.md, "State and events on NATS".
"""

from clusternet_nats.store.buckets import BINDINGS_BUCKET, EVENTS_STREAM, ensure_buckets
from clusternet_nats.store.errors import AlreadyExistsError, ConflictError, NotFoundError, StoreError
from clusternet_nats.store.events import EventRecorder, list_events
from clusternet_nats.store.informer import Informer
from clusternet_nats.store.keys import object_key, split_key
from clusternet_nats.store.kv import JsonBucket, ObjectStore, StatusStore, Versioned
from clusternet_nats.store.workqueue import WorkQueue

__all__ = [
    "BINDINGS_BUCKET",
    "EVENTS_STREAM",
    "AlreadyExistsError",
    "ConflictError",
    "EventRecorder",
    "Informer",
    "JsonBucket",
    "NotFoundError",
    "ObjectStore",
    "StatusStore",
    "StoreError",
    "Versioned",
    "WorkQueue",
    "ensure_buckets",
    "list_events",
    "object_key",
    "split_key",
]

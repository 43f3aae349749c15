"""The JetStream API prefix a context speaks to: `$JS.API`, or `$JS.<domain>.API` across a leaf.

An agent behind a leaf node reaches the hub's JetStream domain; pull requests and KV writes must
then name that prefix in their subjects. nats-py keeps it only in `JetStreamContext._prefix` (set
from its `prefix` or `domain` argument; nats-py's own PullSubscription reads it the same way) and
offers no public accessor, so this is the one place that reads it. It is read without a default,
so a nats-py that renames it fails here loudly (tests/store/test_nats_py.py) rather than writing
to `$KV.` across a leaf, which the server denies.
"""

from nats.js import JetStreamContext


def api_prefix(js: JetStreamContext) -> str:
    return str(js._prefix)

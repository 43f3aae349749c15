"""The JetStream API prefix a context speaks to: `$JS.API`, or `$JS.<domain>.API` across a leaf.

An agent behind a leaf node reaches the hub's JetStream domain; pull requests and KV writes must
then name that prefix in their subjects. nats-py keeps it on the context without a public
accessor, so this is the one place that reads it.
"""

from nats.js import JetStreamContext

DEFAULT_API = "$JS.API"


def api_prefix(js: JetStreamContext) -> str:
    return str(getattr(js, "_prefix", DEFAULT_API))

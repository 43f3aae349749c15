"""Names derived from a cluster's identity, which the agent and the hub must agree on unasked.

The agent computes its dedicated namespace before it has ever talked to the hub (its credential is
scoped to it), and the registrar computes the same name when it approves the request; so the
formula has exactly one home.
"""

import hashlib

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def short_hash(*parts: str, length: int = 5) -> str:
    """Deterministic lowercase suffix for derived names (Clusternet uses a random one)."""
    n = int(hashlib.sha256("/".join(parts).encode()).hexdigest(), 16)
    out = []
    for _ in range(length):
        n, r = divmod(n, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(out)


def dedicated_namespace(cluster_id: str) -> str:
    """The hub namespace holding one cluster's ManagedCluster, Descriptions and status."""
    return f"clusternet-{short_hash(cluster_id)}"


def registration_request_name(cluster_id: str) -> str:
    """Clusternet names a ClusterRegistrationRequest after the cluster id."""
    return f"clusternet-{cluster_id}"

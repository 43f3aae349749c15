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


NAMESPACE_HASH_LENGTH = 16
"""27^16 (~2^76) names: a fleet of a million clusters shares none by chance (five letters, 27^5,
gave two of 5,000 simulated clusters one namespace), and nobody can search for a cluster id whose
namespace is another cluster's, which would put its credential in that cluster's namespace.
Clusternet's apiserver refuses a taken name instead; here agent and hub derive it unasked."""


def dedicated_namespace(cluster_id: str) -> str:
    """The hub namespace holding one cluster's ManagedCluster, Descriptions and status."""
    return f"clusternet-{short_hash(cluster_id, length=NAMESPACE_HASH_LENGTH)}"


def registration_request_name(cluster_id: str) -> str:
    """Clusternet names a ClusterRegistrationRequest after the cluster id."""
    return f"clusternet-{cluster_id}"

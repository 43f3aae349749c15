"""A cluster's dedicated namespace is derived from its id by agent and hub alike, so it must be
unique without anyone checking: two clusters sharing one would read and write each other's
Descriptions and statuses (found at 5,000 simulated clusters, when it had five letters)."""

from __future__ import annotations

import uuid

from clusternet_nats.agent.identity import id_for
from clusternet_nats.domain.names import dedicated_namespace


def test_a_hundred_thousand_clusters_get_a_hundred_thousand_namespaces() -> None:
    names = {dedicated_namespace(id_for(f"sim-{i}")) for i in range(100_000)}
    assert len(names) == 100_000


def test_the_namespace_is_a_kubernetes_name_derived_from_the_id_alone() -> None:
    cluster_id = str(uuid.uuid4())
    namespace = dedicated_namespace(cluster_id)
    assert namespace == dedicated_namespace(cluster_id)
    assert namespace.startswith("clusternet-") and len(namespace) <= 63
    assert namespace.replace("-", "").isalnum() and namespace.islower()

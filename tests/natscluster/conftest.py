"""A 3-node JetStream cluster per module (the cluster tests restart its servers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from clusternet_nats.testing.natsserver import NatsCluster


@pytest.fixture(scope="module")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    cluster = NatsCluster(tmp_path_factory.mktemp("nats-cluster"), size=3).start()
    yield cluster
    cluster.cleanup()

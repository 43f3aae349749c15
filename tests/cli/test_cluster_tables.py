"""`cnet get clsrr,mcls -o wide` shows Clusternet's columns for both kinds, one table each."""

from __future__ import annotations

import uuid
from pathlib import Path

from .conftest import Cnet


def headers(line: str) -> list[str]:
    return [h.strip() for h in line.split("   ") if h.strip()]


async def test_registration_requests_and_clusters_wide(cnet: Cnet, unique_ns: str, tmp_path: Path) -> None:
    cluster_id = str(uuid.uuid4())
    objects = tmp_path / "clusters.yaml"
    objects.write_text(
        f"""apiVersion: clusters.clusternet.io/v1beta1
kind: ClusterRegistrationRequest
metadata: {{name: clusternet-{cluster_id}}}
spec: {{clusterId: {cluster_id}, clusterName: child, clusterType: EdgeCluster, syncMode: Dual}}
---
apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {{name: child, namespace: {unique_ns}}}
spec: {{clusterId: {cluster_id}, syncMode: Dual, clusterType: EdgeCluster}}
"""
    )
    assert (await cnet("apply", "-f", str(objects))).exit_code == 0
    result = await cnet("get", "clsrr,mcls", "-A", "-o", "wide")
    assert result.exit_code == 0, result.output
    tables = [t.splitlines() for t in result.output.strip().split("\n\n")]
    assert headers(tables[0][0]) == ["NAME", "CLUSTER ID", "STATUS", "AGE"]
    assert any(f"clusternet-{cluster_id}" in line and cluster_id in line for line in tables[0][1:])
    assert headers(tables[1][0]) == [
        "NAMESPACE",
        "NAME",
        "CLUSTER ID",
        "CLUSTER TYPE",
        "SYNC MODE",
        "KUBERNETES",
        "STATUS",
        "AGE",
        "AGENT VERSION",
    ]
    row = next(line.split() for line in tables[1][1:] if line.startswith(unique_ns))
    assert row[2:5] == [cluster_id, "EdgeCluster", "Dual"]

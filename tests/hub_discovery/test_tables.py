"""Table answers: cnet's columns, kubectl's Accept header, one object or a list, v1 and v1beta1."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from clusternet_nats.hub.tables import table, table_version

from tests.hub.objects import subs_path, subscription

KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (KUBECTL_ACCEPT, "v1"),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "v1beta1"),
        ("application/json", None),
        ("application/json;as=Table;v=v2;g=meta.k8s.io", None),
        ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", None),
        ("application/yaml;as=Table;v=v1;g=meta.k8s.io", None),
    ],
)
def test_table_version_from_accept(accept: str, version: str | None) -> None:
    assert table_version(accept) == version


async def test_list_and_get_as_tables(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns)) as resp:
        assert resp.status == 201
    for path, version in ((subs_path(unique_ns), "v1"), (subs_path(unique_ns, "demo"), "v1beta1")):
        accept = KUBECTL_ACCEPT if version == "v1" else "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
        async with http.get(path, headers={"Accept": accept}) as resp:
            assert resp.status == 200
            body = await resp.json()
        assert (body["kind"], body["apiVersion"]) == ("Table", f"meta.k8s.io/{version}")
        columns = [(c["name"], c["priority"]) for c in body["columnDefinitions"]]
        assert columns[:4] == [("Name", 0), ("SCHEDULED", 0), ("REASON", 0), ("AGE", 0)]
        assert ("STRATEGY", 1) in columns  # cnet's -o wide columns: kubectl's -o wide too
        (row,) = body["rows"]
        assert row["cells"][0] == "demo"
        assert row["object"]["metadata"]["namespace"] == unique_ns
    table_of = {"Accept": KUBECTL_ACCEPT}
    for include, carried in (("Object", "Subscription"), ("Metadata", "PartialObjectMetadata"), ("None", None)):
        async with http.get(subs_path(unique_ns), headers=table_of, params={"includeObject": include}) as resp:
            (row,) = (await resp.json())["rows"]
        assert (row["object"]["kind"] if "object" in row else None) == carried
    async with http.get(subs_path(unique_ns), headers=table_of, params={"includeObject": "All"}) as resp:
        assert resp.status == 400
    async with http.get(subs_path(unique_ns)) as resp:  # without asking, the list as it is
        assert (await resp.json())["kind"] == "SubscriptionList"
    async with http.get(subs_path(unique_ns, "absent"), headers={"Accept": KUBECTL_ACCEPT}) as resp:
        assert resp.status == 404
        assert (await resp.json())["kind"] == "Status"


def test_cells_are_cnets_with_ages_rendered() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    created = (now - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    cluster = {
        "apiVersion": "clusters.clusternet.io/v1beta1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1", "namespace": "ns", "creationTimestamp": created},
        "spec": {"clusterId": "id-1", "syncMode": "Pull", "clusterType": "EdgeCluster"},
        "status": {"k8sVersion": "v1.30.0", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    listed = table({"kind": "ManagedClusterList", "metadata": {"resourceVersion": "7"}, "items": [cluster]}, "v1", now)
    names = [c["name"] for c in listed["columnDefinitions"]]
    assert names == ["Name", "CLUSTER ID", "CLUSTER TYPE", "SYNC MODE", "KUBERNETES", "STATUS", "AGE", "AGENT VERSION"]
    assert listed["rows"][0]["cells"] == ["c1", "id-1", "EdgeCluster", "Pull", "v1.30.0", "True", "5m", ""]
    assert listed["metadata"] == {"resourceVersion": "7"}
    other = table({"kind": "Deployment", "metadata": {"name": "web", "creationTimestamp": created}}, "v1", now)
    assert [c["name"] for c in other["columnDefinitions"]] == ["Name", "AGE"]
    assert other["rows"][0]["cells"] == ["web", "5m"]

"""`cnet` driven end to end against an in-process hub: apply, get, describe, delete."""

from __future__ import annotations

import json
from pathlib import Path

from clusternet_nats.api import Subscription
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.meta import Condition, ConditionStatus, utcnow
from clusternet_nats.cli.main import app
from clusternet_nats.store import EventRecorder
from clusternet_nats.testing.clusters import report_cluster_status
from nats.js import JetStreamContext
from typer.testing import CliRunner

from .conftest import Cnet

CLUSTER_ID = "dc91021d-2361-4f6d-a404-7c33b9e01118"


def write_app(directory: Path, namespace: str) -> Path:
    directory.mkdir()
    (directory / "subscription.yaml").write_text(
        f"""apiVersion: apps.clusternet.io/v1alpha1
kind: Subscription
metadata: {{name: app-demo, namespace: {namespace}}}
spec:
  subscribers: [{{clusterAffinity: {{matchLabels: {{env: prod}}}}}}]
  feeds: [{{apiVersion: apps/v1, kind: Deployment, name: web, namespace: {namespace}}}]
"""
    )
    (directory / "deployment.yaml").write_text(
        f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {namespace}}}
spec: {{replicas: 1}}
"""
    )
    return directory


async def test_apply_get_describe_delete(cnet: Cnet, js: JetStreamContext, unique_ns: str, tmp_path: Path) -> None:
    files = write_app(tmp_path / "app", unique_ns)
    manifest = f"clusternet-reserved/deployments.{unique_ns}.web"

    result = await cnet("apply", "-f", str(files))
    assert result.exit_code == 0, result.output
    assert f"deployment.apps/web created (manifest {manifest})" in result.output
    assert "subscription.apps.clusternet.io/app-demo created" in result.output
    result = await cnet("apply", "-f", str(files))
    assert "subscription.apps.clusternet.io/app-demo unchanged" in result.output
    assert f"deployment.apps/web unchanged (manifest {manifest})" in result.output

    result = await cnet("get", "subs", "-A")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split() == ["NAMESPACE", "NAME", "SCHEDULED", "REASON", "AGE"]
    assert [unique_ns, "app-demo"] in [line.split()[:2] for line in result.output.splitlines()]

    result = await cnet("get", "subs", "app-demo", "-n", unique_ns, "-o", "json")
    assert result.exit_code == 0, result.output
    sub = json.loads(result.output)
    assert sub["kind"] == "Subscription" and sub["metadata"]["namespace"] == unique_ns

    result = await cnet("get", "sub,manifest", "-n", "clusternet-reserved", "-o", "wide")
    assert f"manifest.apps.clusternet.io/deployments.{unique_ns}.web" in result.output

    recorder = EventRecorder(js, "clusternet-scheduler")
    await recorder.normal(Subscription.model_validate(sub), "SuccessfulScheduling", "bound to 2 clusters")
    result = await cnet("describe", "subscription", "app-demo", "-n", unique_ns)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["Name:", "app-demo"]
    assert "Scheduling Strategy:" in result.output and "Replication" in result.output
    assert lines[lines.index("Events:") + 1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert "SuccessfulScheduling" in result.output and "clusternet-scheduler" in result.output

    result = await cnet("delete", "subs", "app-demo", "-n", unique_ns)
    assert result.exit_code == 0, result.output
    assert 'subscription.apps.clusternet.io "app-demo" deleted' in result.output
    result = await cnet("delete", "-f", str(files / "deployment.yaml"))
    assert 'deployment.apps "web" deleted' in result.output

    result = await cnet("get", "subs", "app-demo", "-n", unique_ns)
    assert result.exit_code == 1
    assert 'Error from server (NotFound): subscriptions.apps.clusternet.io "app-demo" not found' in result.output
    result = await cnet("get", "subs", "-n", unique_ns)
    assert result.exit_code == 0 and f"No resources found in {unique_ns} namespace." in result.output


async def test_managed_clusters_show_crd_columns(
    cnet: Cnet, js: JetStreamContext, unique_ns: str, tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        f"""apiVersion: clusters.clusternet.io/v1beta1
kind: ManagedCluster
metadata: {{name: child, namespace: {unique_ns}}}
spec: {{clusterId: {CLUSTER_ID}, syncMode: Pull, clusterType: EdgeCluster}}
"""
    )
    assert (await cnet("apply", "-f", str(cluster))).exit_code == 0
    ready = Condition(
        type="Ready", status=ConditionStatus.TRUE, last_transition_time=utcnow(), reason="Healthy", message="ok"
    )
    status = ManagedClusterStatus(k8s_version="v1.30.2", agent_version="v0.1", conditions=[ready])
    await report_cluster_status(js, unique_ns, "child", status)

    result = await cnet("get", "mcls", "-n", unique_ns)
    header, row = result.output.splitlines()[:2]
    assert [h.strip() for h in header.split("   ") if h.strip()] == [
        "NAME",
        "CLUSTER ID",
        "SYNC MODE",
        "KUBERNETES",
        "STATUS",
        "AGE",
    ]
    assert row.split()[:5] == ["child", CLUSTER_ID, "Pull", "v1.30.2", "True"]
    wide = (await cnet("get", "mcls", "-n", unique_ns, "-o", "wide")).output.splitlines()
    assert "CLUSTER TYPE" in wide[0] and wide[0].endswith("AGENT VERSION")
    assert wide[1].split()[2] == "EdgeCluster" and wide[1].endswith("v0.1")


def test_unreachable_hub_is_one_clear_line() -> None:
    result = CliRunner().invoke(app, ["--server", "http://127.0.0.1:1", "get", "subs"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: cannot reach the hub at http://127.0.0.1:1")
    assert "Traceback" not in result.output

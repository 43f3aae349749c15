"""Metrics and logs of the real processes after a rollout of examples/replication.

Every service's `/metrics` parses with Prometheus' own parser and shows its histograms; every
metric the Grafana dashboard (deploy/observability) reads is served by some service; every line
any service wrote is a JSON object naming that service, and the hub's access log names who asked.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from clusternet_nats.cli.main import app
from clusternet_nats.testing.priority import LOWEST_NICE, autogroup_nice
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "replication"
DASHBOARD = REPO / "deploy" / "observability" / "grafana-dashboard.json"
SCRAPE_CONFIG = REPO / "deploy" / "observability" / "prometheus.yml"
SUBSCRIPTION_PATH = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions/app-demo"


@pytest.fixture(scope="module")
def rolled_out(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """The system with examples/replication applied by `cnet` and deployed (both prod clusters)."""
    system = System(tmp_path_factory.mktemp("observed"), sim_clusters=3)
    system.start(timeout=90)
    try:
        result = CliRunner().invoke(app, ["--config", str(system.cnet_config), "apply", "-f", str(EXAMPLE)])
        assert result.exit_code == 0, result.output
        yield system
    finally:
        system.stop()


def scrape(system: System, service: str) -> dict[str, Metric]:
    port = system.services[service].health_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return {family.name: family for family in text_string_to_metric_families(resp.read().decode())}


def samples(families: dict[str, Metric], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples called `name` (e.g. `x_bucket`) in any family: labels to value."""
    return {
        tuple(sorted(s.labels.items())): s.value for f in families.values() for s in f.samples if s.name == name
    }


def exposed(families: dict[str, Metric]) -> set[str]:
    """Every series name a query may use, samples or not yet: a counter `x` is `x_total`, a
    histogram `x` is `x_bucket`, `x_count` and `x_sum`."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "summary": ("_count", "_sum")}
    names = {s.name for f in families.values() for s in f.samples}
    for family in families.values():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return names


async def deployed(system: System) -> bool:
    """Both prod clusters' Descriptions reported Success (the predictor's count of them by phase)."""
    predictor = await asyncio.to_thread(scrape, system, "predictor")
    return samples(predictor, "cnet_descriptions").get((("phase", "Success"),)) == 2


async def test_every_service_serves_parsable_metrics_with_histograms(rolled_out: System) -> None:
    await eventually(lambda: deployed(rolled_out), 60, what="both Descriptions Success")
    scraped = {name: await asyncio.to_thread(scrape, rolled_out, name) for name in rolled_out.services}
    for name, families in scraped.items():
        assert families["cnet_nats_connected"].samples[0].value >= 1, name  # an agent: one per cluster, one its own
        assert "process_resident_memory_bytes" in families, f"{name}: process metrics"
        assert families["cnet_reconcile_duration_seconds"].type == "histogram", name
        assert families["cnet_reconcile_duration_seconds"].documentation, f"{name}: HELP"

    for name in ("scheduler", "deployer", "agent"):
        counts = samples(scraped[name], "cnet_reconcile_duration_seconds_count")
        assert sum(counts.values()) > 0, f"{name} reconciled, so its histogram has observations"
        assert samples(scraped[name], "cnet_reconcile_duration_seconds_bucket"), name
    applies = samples(scraped["agent"], "cnet_agent_apply_duration_seconds_count")
    assert applies.get((("deployer", "Generic"), ("phase", "Success")), 0) >= 2, applies
    inf = samples(scraped["agent"], "cnet_agent_apply_duration_seconds_bucket")
    assert any(dict(labels)["le"] == "+Inf" for labels in inf)
    requests = samples(scraped["hub"], "cnet_http_requests_total")
    assert requests.get((("code", "201"), ("method", "PUT")), 0) >= 1, requests
    assert samples(scraped["hub"], "cnet_http_request_duration_seconds_bucket")
    clusters = samples(scraped["hub"], "cnet_clusters")
    assert clusters.get((("ready", "True"),)) == 3, clusters
    depth = samples(scraped["deployer"], "cnet_workqueue_depth")
    assert (("queue", "deployer-subscriptions"),) in depth, depth
    lag = samples(scraped["agent"], "cnet_informer_lag_messages")
    assert (("bucket", "descriptions"),) in lag, lag

    served = set().union(*(exposed(families) for families in scraped.values()))
    dashboard = json.loads(DASHBOARD.read_text())
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b((?:cnet|process)_[a-z_]+)\b", target["expr"])
    }
    assert len(used) >= 15, used
    assert used <= served, f"the dashboard reads metrics no service serves: {sorted(used - served)}"


def test_the_simulated_clusters_run_below_the_hub_side(rolled_out: System) -> None:
    """The agents yield the CPU (testing/priority.py); nats-server and the hub side do not."""
    for name in rolled_out.agents():
        proc = rolled_out.services[name].proc
        assert proc is not None
        assert psutil.Process(proc.pid).nice() == LOWEST_NICE, name
        assert autogroup_nice(proc.pid) in (None, LOWEST_NICE), name
    for name, pid in rolled_out.hub_side_pids().items():
        assert psutil.Process(pid).nice() < LOWEST_NICE, name
        assert autogroup_nice(pid) in (None, 0), name


def test_the_scrape_config_reads_the_health_port_of_every_service() -> None:
    config = SCRAPE_CONFIG.read_text()
    for service in ("hub", "scheduler", "deployer", "predictor", "agent"):
        assert f'"{service}:8081"' in config and f"job: clusternet-{service}" in config, service


async def test_every_log_line_is_json_and_names_its_service(rolled_out: System) -> None:
    await eventually(lambda: deployed(rolled_out), 60, what="both Descriptions Success")
    for process in rolled_out.services.values():
        lines = [line for line in process.log_path.read_text().splitlines() if line.strip()]
        assert lines, process.name
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                pytest.fail(f"{process.name} wrote a line that is not JSON: {line!r}")
            assert record.get("service") == f"clusternet-{process.name}", (process.name, record)
            assert record.get("level") and record.get("timestamp"), record

    hub = [json.loads(line) for line in rolled_out.services["hub"].log_path.read_text().splitlines() if line.strip()]
    access = [r for r in hub if r.get("event") == "http.request" and r.get("path") == SUBSCRIPTION_PATH]
    put = [r for r in access if r["method"] == "PUT"]
    assert put, f"the hub's access log has the Subscription's PUT: {access}"
    assert put[0]["status"] in (200, 201) and put[0]["user"] == "cnet-admin", put
    assert isinstance(put[0]["duration_ms"], float)
    assert not any(r.get("event") == "http.request" and r.get("path") == "/readyz" for r in hub), (
        "probes are logged at debug only"
    )

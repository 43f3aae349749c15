"""Scrape-time gauges: sources of one name and labels in one process (an agent's clusters) combine,
a stopped context's sources go, and a name not declared in runtime/metrics.py is refused. The
hub's request histogram times answers, not watches (they last as long as their client wants)."""

from __future__ import annotations

import pytest
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.runtime.metrics import Metrics
from clusternet_nats.testing.natsserver import NatsServer
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families


def scraped(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    families = text_string_to_metric_families(generate_latest(REGISTRY).decode())
    return {tuple(sorted(s.labels.items())): s.value for f in families for s in f.samples if s.name == name}


def test_sources_combine_and_leave_with_their_context() -> None:
    first, second = Metrics(), Metrics()  # an agent's two clusters
    bucket = "test-combine"
    first.sample_value("cnet_workqueue_depth", lambda: 3, bucket)
    second.sample_value("cnet_workqueue_depth", lambda: 4, bucket)
    first.sample_value("cnet_informer_last_applied_sequence", lambda: 120, bucket)
    second.sample_value("cnet_informer_last_applied_sequence", lambda: 90, bucket)
    try:
        assert scraped("cnet_workqueue_depth")[(("queue", bucket),)] == 7, "depths add up"
        assert scraped("cnet_informer_last_applied_sequence")[(("bucket", bucket),)] == 120, "the furthest"
        second.close()
        assert scraped("cnet_workqueue_depth")[(("queue", bucket),)] == 3
    finally:
        first.close()
        second.close()
    assert (("queue", bucket),) not in scraped("cnet_workqueue_depth")


def test_a_gauge_must_be_declared() -> None:
    with pytest.raises(KeyError, match="cnet_made_up"):
        Metrics().sample_value("cnet_made_up", lambda: 1)


async def test_the_hub_times_answers_but_not_watches(nats_server: NatsServer) -> None:
    def observed(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    async with running_hub(nats_server.url) as hub, hub.session() as session:
        timed = observed("cnet_http_request_duration_seconds_count", method="GET")
        answered = observed("cnet_http_requests_total", method="GET", code="200")
        async with session.get("/apis/apps.clusternet.io/v1alpha1/subscriptions") as resp:
            assert resp.status == 200
        async with session.get(
            "/apis/apps.clusternet.io/v1alpha1/subscriptions", params={"watch": "true", "timeoutSeconds": "1"}
        ) as resp:
            assert resp.status == 200
            await resp.read()  # the stream ends at its timeout
        assert observed("cnet_http_requests_total", method="GET", code="200") == answered + 2
        assert observed("cnet_http_request_duration_seconds_count", method="GET") == timed + 1, "the watch is left out"

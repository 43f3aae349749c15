"""Every metric a service exports, declared once, with prometheus-client.

The metrics live in the process's default registry, beside prometheus-client's process, platform
and garbage-collector collectors, and `/metrics` (runtime/health.py) serves that registry, so
every line has HELP and TYPE and histograms have their buckets. This module is the one list of
names: deploy/observability's dashboard and docs/architecture.md read exactly these.

Event-driven figures (a reconcile's duration, an apply, a request) are observed where they
happen. State (a queue's depth, an informer's objects, Descriptions per phase) is read when
scraped, from the sources each ServiceContext registers (`Metrics.sample`): nothing is polled
between scrapes. One process may host several of the same source (an agent runs a ClusterAgent,
with its own queues and informers, per cluster; tests run several services in one process), so
samples with the same name and labels are added up (an agent's `cnet_workqueue_depth` is the
depth of all its clusters' queues of that name), or, for a position, the furthest is kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from clusternet_nats.store.kv import UNDECODABLE
from prometheus_client import REGISTRY, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# No `_created` series beside each counter and histogram: half the series, and nothing read them.
disable_created_metrics()  # type: ignore[no-untyped-call]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

RECONCILE_DURATION = Histogram(
    "cnet_reconcile_duration_seconds",
    "Time one reconcile of one key took, by work queue and result (ok or error).",
    ["queue", "result"],
    buckets=_LATENCY_BUCKETS,
)
APPLY_DURATION = Histogram(
    "cnet_agent_apply_duration_seconds",
    "Time the agent took to deploy one Description into its cluster, by deployer and resulting phase.",
    ["deployer", "phase"],
    buckets=_LATENCY_BUCKETS,
)
HTTP_REQUESTS = Counter(
    "cnet_http_requests", "Requests the hub answered, by method and status code.", ["method", "code"]
)
HTTP_DURATION = Histogram(
    "cnet_http_request_duration_seconds",
    "Time the hub took to answer a request, by method (streamed answers, such as watches, left out).",
    ["method"],
    buckets=_LATENCY_BUCKETS,
)
PREDICTOR_REQUESTS = Counter(
    "cnet_predictor_requests", "Requests the predictor answered, by request kind and result.", ["request", "result"]
)
REGISTRATIONS = Counter(
    "cnet_registrations", "Cluster registration requests the hub's registrar answered, by result.", ["result"]
)
PUSHES = Counter("cnet_pushes", "Descriptions the hub side pushed to a cluster (Push, Dual), by result.", ["result"])


@dataclass(frozen=True)
class _Gauge:
    help: str
    labels: tuple[str, ...]
    combine: Callable[[Iterable[float]], float] = sum
    """How the samples of several sources with the same labels make one."""


GAUGES: dict[str, _Gauge] = {
    "cnet_nats_connected": _Gauge("1 while the service's NATS connection is up (one per connection).", ()),
    "cnet_workqueue_depth": _Gauge("Keys waiting, being reconciled or waiting for a retry, by queue.", ("queue",)),
    "cnet_workqueue_parked": _Gauge(
        "Keys that failed every retry and wait for their next change (a Warning Event says why), by queue.",
        ("queue",),
    ),
    "cnet_informer_objects": _Gauge("Objects in an informer's cache, by bucket.", ("bucket",)),
    "cnet_informer_lag_messages": _Gauge(
        "Changes in the bucket's stream, within the informer's filter, not yet applied to its cache "
        "(the consumer's pending count at its last delivery), by bucket.",
        ("bucket",),
    ),
    "cnet_informer_last_applied_sequence": _Gauge(
        "The last KV stream sequence an informer applied (the furthest, of several), by bucket.", ("bucket",), max
    ),
    "cnet_descriptions": _Gauge("Descriptions by the phase their status reports (none: no status yet).", ("phase",)),
    "cnet_clusters": _Gauge(
        "Managed clusters by the status of their Ready condition (True, False, Unknown).", ("ready",)
    ),
    "cnet_agent_clusters_ready": _Gauge("Clusters this agent process hosts that are ready.", ()),
    "cnet_partitions_owned": _Gauge(
        "Partitions of the service's keys this replica holds and may work on (runtime/partitions.py).", ()
    ),
}
"""Gauges read at scrape time: name to help and label names (`Metrics.sample` checks against it)."""

Reader = Callable[[], Mapping[tuple[str, ...], float]]
"""Label values (in the gauge's label order) to value, read when scraped."""


class _Sampled(Collector):
    """The scrape-time gauges of every live source in this process, same label sets combined."""

    def __init__(self) -> None:
        self.readers: dict[str, list[Reader]] = defaultdict(list)

    def collect(self) -> Iterator[Metric]:
        for name, gauge in GAUGES.items():
            values: dict[tuple[str, ...], list[float]] = defaultdict(list)
            for read in self.readers.get(name, ()):
                for labels, value in read().items():
                    values[labels].append(value)
            family = GaugeMetricFamily(name, gauge.help, labels=gauge.labels)
            for labels, each in sorted(values.items()):
                family.add_metric(list(labels), gauge.combine(each))
            yield family
        undecodable = CounterMetricFamily(
            "cnet_undecodable_records",
            "Stored values met that could not be decoded since the process started, by bucket.",
            labels=["bucket"],
        )
        for bucket, count in sorted(UNDECODABLE.items()):
            undecodable.add_metric([bucket], count)
        yield undecodable

    def describe(self) -> Iterable[Metric]:
        return list(self.collect())


_SAMPLED = _Sampled()
REGISTRY.register(_SAMPLED)


class Metrics:
    """One service context's scrape-time sources; `close` removes them (the context stopped)."""

    def __init__(self) -> None:
        self._mine: list[tuple[str, Reader]] = []

    def sample(self, name: str, read: Reader) -> None:
        """Adds a source of gauge `name` (declared in GAUGES) read at every scrape."""
        if name not in GAUGES:
            raise KeyError(f"gauge {name!r} is not declared in runtime/metrics.py GAUGES")
        _SAMPLED.readers[name].append(read)
        self._mine.append((name, read))

    def sample_value(self, name: str, read: Callable[[], float], *labels: str) -> None:
        """A source of one sample of gauge `name` with these label values."""
        self.sample(name, lambda: {tuple(labels): read()})

    def close(self) -> None:
        for name, read in self._mine:
            _SAMPLED.readers[name].remove(read)
        self._mine.clear()


def count_by(values: Iterable[str]) -> dict[tuple[str, ...], float]:
    """A Reader's result from one label value per object: how many objects have each value."""
    counts: dict[tuple[str, ...], float] = defaultdict(float)
    for value in values:
        counts[(value,)] += 1
    return counts

"""A minimal Prometheus text exposition: counters and gauges named with their labels.

Enough for `/metrics` to be scraped and for benchmarks to read; a full client library would
add a dependency for no behaviour we need yet.
"""

from collections.abc import Callable


class Metrics:
    def __init__(self, service: str) -> None:
        self.prefix = "cnet_"
        self.service = service
        self._values: dict[str, float] = {}
        self._gauges: dict[str, Callable[[], float]] = {}

    def inc(self, name: str, amount: float = 1.0) -> None:
        self._values[name] = self._values.get(name, 0.0) + amount

    def set(self, name: str, value: float) -> None:
        self._values[name] = value

    def gauge_fn(self, name: str, read: Callable[[], float]) -> None:
        self._gauges[name] = read

    def render(self) -> str:
        lines = []
        samples = dict(self._values)
        samples.update({name: read() for name, read in self._gauges.items()})
        for name in sorted(samples):
            lines.append(f"{self.prefix}{name} {samples[name]:g}")
        return "\n".join(lines) + "\n"

"""Sharing renders between clusters with the same inputs, and the bounded fan-out of writes (and its flag)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from clusternet_nats.api.apps import Globalization, Localization, Manifest, Subscription
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.meta import Feed, ObjectMeta
from clusternet_nats.deployer.__main__ import app
from clusternet_nats.deployer.descriptions import Renderings, Target, render_generic
from clusternet_nats.deployer.overrides import OverrideError
from clusternet_nats.deployer.writes import concurrently
from typer.testing import CliRunner

WEB = Feed(api_version="apps/v1", kind="Deployment", namespace="bench", name="web")
FEED_KEY = "apps/v1/Deployment/bench/web"


def _manifest() -> Manifest:
    template = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "bench"},
        "spec": {"replicas": 1},
    }
    manifest = parse_object(template)
    assert isinstance(manifest, Manifest)
    return manifest


def _patch(replicas: int) -> str:
    return json.dumps([{"op": "replace", "path": "/spec/replicas", "value": replicas}])


def _override_holder(kind: type[Any], name: str, namespace: str | None, value: str, revision: str) -> Any:
    return kind.new(
        name,
        namespace,
        metadata=ObjectMeta(resource_version=revision, uid=f"uid-{name}"),
        spec={"feed": WEB.to_json_dict(), "overrides": [{"name": name, "type": "JSONPatch", "value": value}]},
    )


def _targets(
    globalizations: list[Globalization], localizations: list[Localization], shares: dict[int, int] | None = None
) -> list[Target]:
    spec = {"subscribers": [{"clusterAffinity": {}}], "feeds": [WEB.to_json_dict()]}
    sub = Subscription.new("app", "bench", spec=spec)
    return [
        Target(
            namespace=f"clusternet-{i}",
            labels={"index": str(i)},
            subscription=sub,
            replicas={FEED_KEY: shares[i]} if shares and i in shares else {},
            globalizations=globalizations,
            localizations=[loc for loc in localizations if loc.namespace == f"clusternet-{i}"],
        )
        for i in range(10)
    ]


def _replicas(renderings: Renderings, target: Target) -> int:
    (spec,) = renderings.render(target)
    replicas: int = json.loads((spec.raw or [])[0])["spec"]["replicas"]
    return replicas


def test_clusters_with_the_same_overrides_share_one_rendering_and_each_gets_its_own() -> None:
    everywhere = _override_holder(Globalization, "all", None, _patch(3), "7")
    local = _override_holder(Localization, "local", "clusternet-4", _patch(5), "9")
    targets = _targets([everywhere], [local], shares={7: 2})
    renderings = Renderings([(WEB, _manifest())], [])

    assert [_replicas(renderings, target) for target in targets] == [3, 3, 3, 3, 5, 3, 3, 2, 3, 3]
    assert renderings.distinct == 3  # the fleet, the Localization's cluster, the divided share
    for target in targets:  # the same as rendering each cluster on its own
        assert renderings.render(target) == [render_generic([(WEB, _manifest())], target)]


def test_a_new_revision_of_an_override_is_another_input() -> None:
    old = _override_holder(Globalization, "all", None, _patch(3), "7")
    new = _override_holder(Globalization, "all", None, _patch(4), "8")
    renderings = Renderings([(WEB, _manifest())], [])
    (first,) = _targets([old], [])[:1]
    (second,) = _targets([new], [])[:1]
    assert (_replicas(renderings, first), _replicas(renderings, second)) == (3, 4)
    assert renderings.distinct == 2


def test_an_override_that_fails_fails_every_cluster_with_those_inputs() -> None:
    broken = _override_holder(Globalization, "broken", None, "[{]", "3")
    renderings = Renderings([(WEB, _manifest())], [])
    for target in _targets([broken], [])[:3]:
        with pytest.raises(OverrideError, match="Globalization broken"):
            renderings.render(target)
    assert renderings.distinct == 1


async def test_concurrently_bounds_what_runs_at_once_and_keeps_the_order() -> None:
    running = peak = 0
    gate = asyncio.Event()

    async def job(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if peak >= 4:
            gate.set()
        await gate.wait()
        running -= 1
        return i * i

    results = await concurrently(4, [lambda i=i: job(i) for i in range(20)])  # type: ignore[misc]
    assert results == [i * i for i in range(20)]
    assert peak == 4


async def test_concurrently_raises_the_first_failure_itself_and_cancels_the_rest() -> None:
    cancelled: list[int] = []
    blocked = asyncio.Event()

    async def job(i: int) -> int:
        if i == 3:
            raise ValueError("lost a compare-and-set")
        try:
            await blocked.wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return i

    with pytest.raises(ValueError, match="lost a compare-and-set"):
        await concurrently(8, [lambda i=i: job(i) for i in range(6)])  # type: ignore[misc]
    assert sorted(cancelled) == [0, 1, 2, 4, 5]


def test_a_parallelism_below_one_is_refused_naming_the_flag() -> None:
    result = CliRunner().invoke(app, ["--parallelism", "0"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 2
    assert "Invalid value for '--parallelism'" in result.output

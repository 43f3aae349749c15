"""The incremental Aggregator: after any sequence of status changes, what a full recount gives,
computing again only the clusters whose statuses changed."""

from __future__ import annotations

import random

from clusternet_nats.api.apps import DescriptionStatus
from clusternet_nats.api.meta import Feed
from clusternet_nats.deployer.status import Aggregator, Release, aggregate

DEPLOY = Feed(api_version="apps/v1", kind="Deployment", namespace="foo", name="web")
JOB = Feed(api_version="batch/v1", kind="Job", namespace="foo", name="once")
NAMESPACE = Feed(api_version="v1", kind="Namespace", name="foo")
FEEDS = [NAMESPACE, DEPLOY, JOB]


def _random_status(rng: random.Random) -> DescriptionStatus | None:
    if rng.random() < 0.1:
        return None
    present = [feed for feed in FEEDS if rng.random() < 0.8]
    observed = {
        "Deployment": {"replicas": rng.randint(0, 5), "readyReplicas": rng.randint(0, 5), "observedGeneration": 3},
        "Job": {"active": rng.randint(0, 2), "succeeded": rng.randint(0, 2)},
        "Namespace": {},
    }
    return DescriptionStatus.model_validate(
        {
            "phase": rng.choice(["Pending", "Success", "Success", "Failure"]),
            "manifestStatuses": [
                {**feed.to_json_dict(), "observedStatus": observed[feed.kind]} for feed in present
            ],
        }
    )


def _cluster_id(index: int) -> str:
    return f"{index:08d}-1111-4111-8111-111111111111"


def test_many_status_changes_aggregate_as_a_full_recount_and_recompute_only_the_changed() -> None:
    rng = random.Random(15)
    statuses = {index: [_random_status(rng), _random_status(rng)] for index in range(60)}
    aggregator = Aggregator()

    def releases() -> list[Release]:
        return [Release(_cluster_id(i), f"c{i}", list(s)) for i, s in sorted(statuses.items())]

    previous = aggregator.aggregate("default/sub", FEEDS, releases())
    assert previous == aggregate(FEEDS, releases())
    for _ in range(300):
        changed = rng.randrange(60)
        if rng.random() < 0.05:
            statuses.pop(changed, None)  # unbound
        else:
            statuses[changed] = [_random_status(rng), statuses.get(changed, [None, None])[1]]
        status = aggregator.aggregate("default/sub", FEEDS, releases())
        assert status == aggregate(FEEDS, releases())
        # Every other cluster's details are the very objects computed before: not recomputed.
        assert status.aggregated_statuses is not None and previous.aggregated_statuses is not None
        before = {d.cluster_name: d for d in previous.aggregated_statuses[1].feed_status_details or []}
        for detail in status.aggregated_statuses[1].feed_status_details or []:
            if detail.cluster_name != f"c{changed}" and detail.cluster_name in before:
                assert detail is before[detail.cluster_name]
        previous = status


def test_changed_feeds_recompute_every_cluster_and_forget_drops_the_subscription() -> None:
    rng = random.Random(7)
    releases = [Release(_cluster_id(i), f"c{i}", [_random_status(rng)]) for i in range(10)]
    aggregator = Aggregator()
    first = aggregator.aggregate("default/sub", FEEDS, releases)
    fewer = aggregator.aggregate("default/sub", [DEPLOY], releases)
    assert fewer == aggregate([DEPLOY], releases)
    assert first.aggregated_statuses is not None and fewer.aggregated_statuses is not None
    assert [a.kind for a in fewer.aggregated_statuses] == ["Deployment"]
    aggregator.forget("default/sub")
    again = aggregator.aggregate("default/sub", FEEDS, releases)
    assert again == first
    assert again.aggregated_statuses is not None and first.aggregated_statuses is not None
    recomputed = again.aggregated_statuses[1].feed_status_details
    remembered = first.aggregated_statuses[1].feed_status_details
    assert recomputed and remembered and recomputed[0] is not remembered[0], "forgotten, so computed anew"


def test_absorbed_changes_show_in_the_next_refresh() -> None:
    """While a converge writes, passes absorb statuses without building the status; the pass after
    it builds what a full recount gives."""
    rng = random.Random(3)
    statuses = {index: [_random_status(rng)] for index in range(30)}

    def releases() -> list[Release]:
        return [Release(_cluster_id(i), f"c{i}", list(s)) for i, s in sorted(statuses.items())]

    aggregator = Aggregator()
    assert not aggregator.absorb("default/sub", releases()), "nothing to absorb into before an aggregate"
    aggregator.aggregate("default/sub", FEEDS, releases())
    for changed in (3, 17, 3):
        statuses[changed] = [_random_status(rng)]
        assert aggregator.absorb("default/sub", [Release(_cluster_id(changed), f"c{changed}", statuses[changed])])
    assert aggregator.refresh("default/sub", []) == aggregate(FEEDS, releases())


def test_refreshes_keep_the_summaries_a_full_recount_gives() -> None:
    """The running totals: sums, the maximum observedGeneration (its holder's status may lower
    it), availability and completed releases follow every change as a recount would."""
    rng = random.Random(11)

    def status() -> DescriptionStatus | None:
        found = _random_status(rng)
        for manifest in (found.manifest_statuses or []) if found is not None else []:
            if manifest.kind == "Deployment" and manifest.observed_status is not None:
                manifest.observed_status["observedGeneration"] = rng.choice([1, 2, 2, 2, 7])
        return found

    statuses = {index: [status()] for index in range(5)}

    def release(index: int) -> Release:
        return Release(_cluster_id(index), f"c{index}", list(statuses[index]))

    aggregator = Aggregator()
    aggregator.aggregate("default/sub", FEEDS, [release(i) for i in sorted(statuses)])
    generations = set()
    for _ in range(400):
        changed = rng.randrange(5)
        statuses[changed] = [status()]
        refreshed = aggregator.refresh("default/sub", [release(changed)])
        assert refreshed == aggregate(FEEDS, [release(i) for i in sorted(statuses)])
        assert refreshed is not None and refreshed.aggregated_statuses is not None
        summary = refreshed.aggregated_statuses[1].feed_status_summary
        if summary is not None and summary.replica_status is not None:
            generations.add(summary.replica_status.observed_generation)
    assert generations >= {2, 7}, "the maximum was taken out and came back"

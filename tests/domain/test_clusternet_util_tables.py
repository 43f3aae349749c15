"""Clusternet's own unit-test tables for feeds, conditions, readiness, taints and binding, run on ours.

Each Go table case is one parametrized case here, its id the Go subtest's name (Go names an
unnamed case `#00`, `#01`, ...; a repeated name gets `#01`), with its inputs and expected outputs
as data, run through our nearest equivalent. Ported here: 33 cases of 10 tests:

* pkg/utils/feed_test.go: TestFormatFeed (2) on `domain.feeds.format_feed`; TestHashSubscriptionSpec
  (2) on `api.binding.spec_hash`, as the property the table proves: a spec hashes alike with its
  nil fields written or left out. Its value (2608449479) is not ours: Clusternet hashes go-spew's
  hex dump of the Go JSON (struct field order, and the byte slice's len and cap), we hash our sorted
  JSON; the hash is only ever compared with itself (scheduler's binding vs the current spec), never
  with one Clusternet computed, so the value is no contract.
* pkg/utils/cluster_test.go: TestUpdateConditions (4) on `api.meta.set_condition`, folded over the
  new conditions, "changed" being whether the list differs, lastTransitionTime left out of the
  comparison as the Go test does.
* pkg/utils/deployer_test.go: TestClusterHasReadyCondition (4) on `domain.readiness.is_ready`;
  TestResourceNeedResync (5 of 6) on the agent's drift rule for a simulated cluster
  (`agent.backends.sim.drift.AppliedObjects`): x is what was applied, y the object as it is now,
  and "re-sync" is drift noticed. The rule with ignoreAdd (the agent's) is ours: fields the server
  or others populated are not drift, fields removed or changed are, status never is. Not ported:
  `fields-added` (ignoreAdd false, fields added force a re-sync), Clusternet's mode for
  EndpointSlices of multi-cluster services only, which we do not implement. The Helm client tests
  of that file are Go-only.
* pkg/utils/taints/taints_test.go: TestAddOrUpdateTaint (4), TestTaintExists (3), TestRemoveTaint
  (3), TestDeleteTaint (4) on `domain.taints` (the hub's cluster health taints with it); RemoveTaint
  is DeleteTaint on the cluster's `spec.taints`, so both go through `remove_taint`.
* pkg/scheduler/framework/plugins/defaultbinder/default_binder_test.go: TestDefaultBinder (2) on
  the scheduler's DefaultBinder writing through a Binder kept in memory, as the Go test's fake
  clientset: clusters written in name order, and a failed write is a failed bind.

The cluster-lifecycle table (TestGetClusterReadyCondition, 5) needs the hub's health rule:
tests/clusterhealth/test_clusternet_lifecycle_table.py.

Not ported, because the rule lives elsewhere in our design and no function computes it:

* TestFindObsoletedFeeds (3) and TestHasFeed (2): Clusternet's Manifest and HelmChart controllers
  compare a Base's old and new feeds (by kind, namespace and name) to release Manifests the Base no
  longer uses. Our deployer is level-triggered: its indexes map each feed selector
  (`domain.feeds.feed_selector`, which also tells apiVersions apart, as Clusternet's Manifest label
  selector does) to the Subscriptions using it, rebuilt on every change, so nothing diffs two feed
  lists.
* TestTaintSetFilter (3): a filter of a taint list by a predicate is a list comprehension here.
* pkg/utils/names_test.go TestDerivedServiceName (1): the name of a multi-cluster service's derived
  Service; we do not implement multi-cluster services (ServiceExport/ServiceImport).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim.drift import AppliedObjects
from clusternet_nats.agent.backends.sim.store import ObjectTable
from clusternet_nats.api.apps import Subscription, SubscriptionSpec
from clusternet_nats.api.binding import SubscriptionBinding, spec_hash
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.api.meta import Condition, Feed, Taint, set_condition
from clusternet_nats.domain.feeds import format_feed
from clusternet_nats.domain.readiness import is_ready
from clusternet_nats.domain.taints import add_or_update_taint, remove_taint, taint_exists
from clusternet_nats.scheduler.framework.interfaces import Status
from clusternet_nats.scheduler.plugins.default_binder import DefaultBinder

# -- feed_test.go ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("feed", "want"),
    [
        pytest.param({"kind": "Guess", "apiVersion": "v1", "namespace": "", "name": "what"}, "Guess what", id="#00"),
        pytest.param(
            {"kind": "Guess", "apiVersion": "v1", "namespace": "demo", "name": "what"}, "Guess demo/what", id="#01"
        ),
    ],
)
def test_format_feed(feed: dict[str, str], want: str) -> None:
    assert format_feed(Feed.model_validate(feed)) == want


_HASHED_FEEDS = [{"kind": "Demo", "apiVersion": "abc.com/v1", "namespace": "foo", "name": "bar"}]
_HASHED_SPECS = {
    # nil matchExpressions and clusterTolerations written out
    "#00": {
        "schedulerName": "default",
        "schedulingStrategy": "Replication",
        "subscribers": [{"clusterAffinity": {"matchLabels": {"cluster-name": "abc"}, "matchExpressions": None}}],
        "clusterTolerations": None,
        "feeds": _HASHED_FEEDS,
    },
    # the same spec with them left out
    "#01": {
        "schedulerName": "default",
        "schedulingStrategy": "Replication",
        "subscribers": [{"clusterAffinity": {"matchLabels": {"cluster-name": "abc"}}}],
        "feeds": _HASHED_FEEDS,
    },
}


@pytest.mark.parametrize("case", list(_HASHED_SPECS))
def test_hash_subscription_spec(case: str) -> None:
    # Clusternet wants 2608449479 for both; ours hashes other bytes (see the module docstring), so
    # what is asserted is that both cases hash alike, and stably.
    spec = SubscriptionSpec.model_validate(_HASHED_SPECS[case])
    assert spec_hash(spec) == spec_hash(SubscriptionSpec.model_validate(_HASHED_SPECS["#00"]))
    assert spec_hash(spec) == spec_hash(spec.model_copy(deep=True))


# -- cluster_test.go ------------------------------------------------------------------------------

_BEFORE = datetime(2026, 1, 1, tzinfo=UTC)
_NOW = datetime(2026, 1, 2, tzinfo=UTC)


def _conditions(rows: list[tuple[str, str, str]], when: datetime) -> list[Condition]:
    """(type, status, message) rows; Clusternet's table leaves reason empty, which ours does not allow."""
    return [
        Condition.model_validate(
            {"type": type_, "status": status, "message": message, "reason": "Test", "lastTransitionTime": when}
        )
        for type_, status, message in rows
    ]


def _without_time(conditions: list[Condition]) -> list[dict[str, Any]]:
    return [c.model_dump(exclude={"last_transition_time"}) for c in conditions]


@pytest.mark.parametrize(
    ("existing", "new", "expected", "want_changed"),
    [
        pytest.param([], [("foo", "True", "")], [("foo", "True", "")], True, id="starting from empty"),
        pytest.param(
            [("foo", "True", ""), ("bar", "True", "")],
            [("qux", "True", "")],
            [("foo", "True", ""), ("bar", "True", ""), ("qux", "True", "")],
            True,
            id="append new conditions",
        ),
        pytest.param(
            [("foo", "True", ""), ("bar", "True", ""), ("qux", "True", "")],
            [("bar", "True", "")],
            [("foo", "True", ""), ("bar", "True", ""), ("qux", "True", "")],
            False,
            id="no updates",
        ),
        pytest.param(
            [("foo", "True", "success"), ("bar", "True", ""), ("qux", "True", "")],
            [("qux", "False", "this is a failure message"), ("foo", "False", "this is a failure message")],
            [
                ("foo", "False", "this is a failure message"),
                ("bar", "True", ""),
                ("qux", "False", "this is a failure message"),
            ],
            True,
            id="update existing conditions with different orders",
        ),
    ],
)
def test_update_conditions(
    existing: list[tuple[str, str, str]],
    new: list[tuple[str, str, str]],
    expected: list[tuple[str, str, str]],
    want_changed: bool,
) -> None:
    before = _conditions(existing, _BEFORE)
    conditions = list(before)
    for condition in _conditions(new, _NOW):
        conditions = set_condition(conditions, condition)
    assert _without_time(conditions) == _without_time(_conditions(expected, _NOW))
    assert (conditions != before) is want_changed
    # lastTransitionTime moves only with the status, as Clusternet's UpdateConditions.
    was = {c.type: c for c in before}
    for c in conditions:
        old = was.get(c.type)
        assert c.last_transition_time == (_BEFORE if old is not None and old.status == c.status else _NOW)


# -- deployer_test.go -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param([], False, id="#00"),
        pytest.param([("True", "ManagedClusterReady", "managed cluster is ready.")], True, id="#01"),
        pytest.param([("Unknown", "ManagedClusterUnknown", "managed cluster is in unknown status")], False, id="#02"),
        pytest.param([("False", "ManagedClusterNotReady", "managed cluster is not ready")], False, id="#03"),
    ],
)
def test_cluster_has_ready_condition(conditions: list[tuple[str, str, str]], ready: bool) -> None:
    status = ManagedClusterStatus.model_validate(
        {
            "conditions": [
                {"type": "Ready", "status": s, "reason": r, "message": m, "lastTransitionTime": _NOW.isoformat()}
                for s, r, m in conditions
            ]
        }
    )
    assert is_ready(status) is ready


def _service(spec_changes: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """Clusternet's barX, with `spec_changes` over its spec and a status when given."""
    spec: dict[str, Any] = {
        "externalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "ports": [
            {"name": "tcp-80-80", "port": 80, "protocol": "TCP", "targetPort": 80},
            {"name": "tcp-443-443", "port": 443, "protocol": "TCP", "targetPort": 443},
        ],
        **(spec_changes or {}),
    }
    body: dict[str, Any] = {"spec": spec}
    if status is not None:
        body["status"] = status
    return body


BAR_X = _service()
BAR_Y = _service({"clusterIP": "10.98.177.115", "clusterIPs": ["10.98.177.115"]})  # fields populated
BAR_Z = _service({"ipFamilies": ["IPv6"]})  # a field changed
BAR_U = _service(status={"availableReplicas": 2, "observedGeneration": 1})
BAR_V = _service(status={"availableReplicas": 2, "observedGeneration": 1000})


@pytest.mark.parametrize(
    ("applied", "live", "want_sync"),
    [
        pytest.param(BAR_X, BAR_Y, False, id="fields-populated"),  # ignoreAdd: fields auto-populated
        pytest.param(BAR_Y, BAR_X, True, id="fields-removed"),
        pytest.param(BAR_X, BAR_Z, True, id="fields-changed"),
        # fields-added (ignoreAdd false): not ported, see the module docstring
        pytest.param(BAR_X, BAR_U, False, id="section-ignored"),  # status is never drift
        pytest.param(BAR_U, BAR_V, False, id="section-ignored#01"),
    ],
)
def test_resource_need_resync(applied: dict[str, Any], live: dict[str, Any], want_sync: bool) -> None:
    owner = "clusternet-abc.app-demo"
    meta = {"name": "bar", "namespace": "foo", "labels": {APPLIED_BY_DESCRIPTION: owner}}
    ref = ObjectRef("v1", "Service", "foo", "bar")
    objects = ObjectTable()
    told: list[str] = []
    drift = AppliedObjects(told.append, "c")
    objects.on_change(drift.heard)
    drift.write(objects, ref, {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta), **applied})
    objects.put(ref, {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta), **live})  # someone else's write
    assert (told == [owner]) is want_sync


# -- taints/taints_test.go ------------------------------------------------------------------------


def _taint(key: str, effect: str, value: str | None = None) -> Taint:
    return Taint(key=key, value=value, effect=effect)


TAINT = _taint("foo", "NoSchedule", "bar")
TAINT_NEW = _taint("foo_1", "NoSchedule", "bar_1")
TAINT_UPDATE_VALUE = _taint("foo", "NoSchedule", "bar_1")


@pytest.mark.parametrize(
    ("taints", "taint", "want_update", "want_taints"),
    [
        pytest.param([], TAINT, True, [TAINT], id="add a new taint"),
        pytest.param([TAINT], TAINT_NEW, True, [TAINT, TAINT_NEW], id="add a unique taint"),
        pytest.param([TAINT], TAINT, False, [TAINT], id="add duplicate taint"),
        pytest.param([TAINT], TAINT_UPDATE_VALUE, True, [TAINT_UPDATE_VALUE], id="update taint value"),
    ],
)
def test_add_or_update_taint(taints: list[Taint], taint: Taint, want_update: bool, want_taints: list[Taint]) -> None:
    assert add_or_update_taint(taints, taint) == (want_taints, want_update)


_EXISTING = [_taint("foo_1", "NoExecute", "bar_1"), _taint("foo_2", "NoSchedule", "bar_2")]


@pytest.mark.parametrize(
    ("taint", "exists"),
    [
        pytest.param(_taint("foo_1", "NoExecute", "bar_1"), True, id="taint exists"),
        pytest.param(_taint("no_such_key", "NoExecute", "bar_1"), False, id="different key"),
        pytest.param(_taint("foo_1", "NoSchedule", "bar_1"), False, id="different effect"),
    ],
)
def test_taint_exists(taint: Taint, exists: bool) -> None:
    assert taint_exists(_EXISTING, taint) is exists


_FOO = _taint("foo", "NoSchedule")


@pytest.mark.parametrize(
    ("taints", "taint", "want_taints", "want_removed"),
    [
        pytest.param([_FOO], _taint("foo_1", "NoSchedule"), [_FOO], False, id="remove taint unsuccessfully"),
        pytest.param([_FOO], _taint("foo", "NoSchedule"), [], True, id="remove taint successfully"),
        pytest.param([], _taint("foo", "NoSchedule"), [], False, id="remove taint from cluster with no taint"),
    ],
)
def test_remove_taint(taints: list[Taint], taint: Taint, want_taints: list[Taint], want_removed: bool) -> None:
    assert remove_taint(taints, taint) == (want_taints, want_removed)


@pytest.mark.parametrize(
    ("taints", "taint", "want_taints", "want_deleted"),
    [
        pytest.param([_FOO], _taint("foo_1", "NoSchedule"), [_FOO], False, id="delete taint with different name"),
        pytest.param([_FOO], _taint("foo", "NoExecute"), [_FOO], False, id="delete taint with different effect"),
        pytest.param([_FOO], _taint("foo", "NoSchedule"), [], True, id="delete taint successfully"),
        pytest.param([], _taint("foo", "NoSchedule"), [], False, id="delete taint from empty taint array"),
    ],
)
def test_delete_taint(taints: list[Taint], taint: Taint, want_taints: list[Taint], want_deleted: bool) -> None:
    assert remove_taint(taints, taint) == (want_taints, want_deleted)


# -- defaultbinder/default_binder_test.go ---------------------------------------------------------


class MemoryBinder:
    """Bindings kept in a dict, as the Go test's fake clientset keeps the Subscription; a write
    fails with `error` when given, as the Go test's reactor injects one."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.stored: dict[str, SubscriptionBinding] = {}

    async def write_binding(self, sub: Subscription, binding: SubscriptionBinding) -> bool:
        if self.error is not None:
            raise self.error
        changed = self.stored.get(sub.namespaced_name()) != binding
        self.stored[sub.namespaced_name()] = binding
        return changed


@pytest.mark.parametrize(
    ("error", "wanted_bindings"),
    [
        pytest.param(None, ["cluster-ns-01/def", "cluster-ns-03/xyz"], id="successful"),
        pytest.param(RuntimeError("binding error"), None, id="binding error"),
    ],
)
async def test_default_binder(error: Exception | None, wanted_bindings: list[str] | None) -> None:
    sub = Subscription.model_validate(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "foo", "namespace": "ns", "uid": "u-1"},
            "spec": {"subscribers": [], "feeds": []},
        }
    )
    target = SubscriptionBinding(
        subscription_uid="u-1",
        spec_hash=spec_hash(sub.spec),
        binding_clusters=["cluster-ns-03/xyz", "cluster-ns-01/def"],
    )
    binder = MemoryBinder(error)
    status: Status = await DefaultBinder().bind(sub, target, binder)
    assert status.is_success is (error is None)
    if error is not None:
        assert "binding error" in status.message
    stored = binder.stored.get("ns/foo")
    assert (stored.binding_clusters if stored is not None else None) == wanted_bindings

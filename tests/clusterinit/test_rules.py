"""ClusterInit's rules as Clusternet's lifecycle controller applies them: which Base initialises a
cluster, what the condition says at each step, and which taint follows from it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from clusternet_nats.api import labels as known
from clusternet_nats.api.apps import Base, BaseSpec, Description, DescriptionPhase, DescriptionSpec, DescriptionStatus
from clusternet_nats.api.clusters import ManagedCluster, ManagedClusterSpec, ManagedClusterStatus
from clusternet_nats.api.meta import ConditionStatus, ObjectMeta, TaintEffect
from clusternet_nats.domain import clusterinit as init
from clusternet_nats.domain.features import parse_feature_gates

NS = "clusternet-abcde"


def cluster(base: str | None = None, annotations: dict[str, str] | None = None) -> ManagedCluster:
    mcls = ManagedCluster.new(
        "c1", NS, spec=ManagedClusterSpec(cluster_id="3f7c0a58-1f5e-4e4b-9a39-0b5d1c6f7e21", sync_mode="Pull")
    )
    mcls.spec.cluster_init_base_name = base
    mcls.metadata.annotations = annotations
    return mcls


def base(name: str, created: datetime, uid: str = "u-1") -> Base:
    return Base.new(name, NS, metadata=ObjectMeta(uid=uid, creation_timestamp=created), spec=BaseSpec(feeds=[]))


def description(of: Base, name: str) -> Description:
    labels = {known.CONFIG_KIND: "Base", known.CONFIG_NAMESPACE: of.namespace, known.CONFIG_UID: of.metadata.uid or ""}
    return Description.new(name, NS, metadata=ObjectMeta(labels=labels), spec=DescriptionSpec(deployer="Generic"))


def test_the_cluster_annotation_wins_then_the_newest_default_base_and_skip_means_none() -> None:
    old, new = base("init-old", datetime(2026, 1, 1, tzinfo=UTC)), base("init-new", datetime(2026, 2, 1, tzinfo=UTC))
    assert init.chosen_base(cluster(), [new, old]) == "init-new"
    assert init.chosen_base(cluster(), []) is None
    assert init.chosen_base(cluster(annotations={init.INIT_BASE_ANNOTATION: "mine"}), [new]) == "mine"
    assert init.chosen_base(cluster(annotations={init.SKIP_ANNOTATION: "true"}), [new]) is None


def test_the_condition_goes_through_clusternets_reasons() -> None:
    init_base = base("init-x", datetime(2026, 1, 1, tzinfo=UTC))
    desc = description(init_base, "init-x-generic")

    def reads(enabled: bool, mcls: ManagedCluster, progress: init.Progress) -> tuple[ConditionStatus, str, str]:
        cond = init.init_condition(enabled, mcls, progress)
        assert cond.type == "ClusterInit"
        return cond.status, cond.reason, cond.message

    nothing = init.Progress(None)
    false, true = ConditionStatus.FALSE, ConditionStatus.TRUE
    assert reads(False, cluster(), nothing) == (true, "ClusterInitDisabled", "feature gate ClusterInit is not enabled")
    skip = cluster(annotations={init.SKIP_ANNOTATION: "true"})
    assert reads(True, skip, nothing) == (true, "ClusterInitDisabled", "cluster initialization is skipped")
    waiting = "still waiting for cluster getting initialized"
    assert reads(True, cluster(), nothing) == (false, "ClusterInitWaiting", waiting)
    missing = f"failed to get Base {NS}/init-x, will retry"
    assert reads(True, cluster("init-x"), nothing) == (false, "ClusterInitWaiting", missing)
    no_descs = "no matching Descriptions are found. will retry"
    assert reads(True, cluster("init-x"), init.Progress(init_base)) == (false, "ClusterInitWaiting", no_descs)
    pending = init.Progress(init_base, [(desc, None)])
    not_reported = f"Description {NS}/init-x-generic is not reported"
    assert reads(True, cluster("init-x"), pending) == (false, "ClusterInitWaiting", not_reported)
    failed = DescriptionStatus(phase=DescriptionPhase.FAILURE, reason="namespaces \"x\" not found")
    failing = init.Progress(init_base, [(desc, failed)])
    assert reads(True, cluster("init-x"), failing) == (false, "ClusterInitWaiting", 'namespaces "x" not found')
    done = init.Progress(init_base, [(desc, DescriptionStatus(phase=DescriptionPhase.SUCCESS))])
    initialized = "cluster has been initialized successfully"
    assert reads(True, cluster("init-x"), done) == (true, "ClusterInitDone", initialized)


def test_the_taint_follows_the_condition_and_only_with_the_gate_on() -> None:
    waiting = init.init_condition(True, cluster(), init.Progress(None))
    taint = init.wanted_taint(True, waiting)
    assert taint is not None
    assert (taint.key, taint.value, taint.effect) == (
        "clusters.clusternet.io/initialization",
        "ClusterInitWaiting",
        TaintEffect.NO_SCHEDULE,
    )
    assert init.wanted_taint(False, waiting) is None
    assert init.wanted_taint(True, init.init_condition(False, cluster(), init.Progress(None))) is None
    assert init.waiting_taint() == taint


def test_a_description_of_another_base_or_incarnation_does_not_count() -> None:
    mine = base("init-x", datetime(2026, 1, 1, tzinfo=UTC), uid="u-1")
    again = base("init-x", datetime(2026, 1, 2, tzinfo=UTC), uid="u-2")
    assert init.is_description_of(description(mine, "d"), mine)
    assert not init.is_description_of(description(again, "d"), mine)


def test_done_is_read_from_the_status() -> None:
    init_base = base("init-x", datetime(2026, 1, 1, tzinfo=UTC))
    success = DescriptionStatus(phase=DescriptionPhase.SUCCESS)
    progress = init.Progress(init_base, [(description(init_base, "d"), success)])
    done = init.init_condition(True, cluster("init-x"), progress)
    waiting = init.init_condition(True, cluster("init-x"), init.Progress(None))
    disabled = init.init_condition(False, cluster(), init.Progress(None))
    assert init.is_done(ManagedClusterStatus(conditions=[done]))
    assert not init.is_done(ManagedClusterStatus(conditions=[waiting]))
    assert not init.is_done(ManagedClusterStatus(conditions=[disabled]))
    assert not init.is_done(None)


def test_feature_gates_parse_like_clusternets_flag_and_name_what_is_wrong() -> None:
    assert parse_feature_gates("") == {"ClusterInit": False}
    assert parse_feature_gates("ClusterInit=true") == {"ClusterInit": True}
    assert parse_feature_gates(" ClusterInit = False ,") == {"ClusterInit": False}
    with pytest.raises(ValueError, match="unrecognized feature gate 'ClusterInt'"):
        parse_feature_gates("ClusterInt=true")
    with pytest.raises(ValueError, match="'ClusterInit' needs =true or =false, not 'ClusterInit=yes'"):
        parse_feature_gates("ClusterInit=yes")

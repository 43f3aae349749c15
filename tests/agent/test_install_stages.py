"""Which objects of a Description a backend may apply together: one stage per install rank."""

from __future__ import annotations

from clusternet_nats.agent.backends.base import install_order, install_stages


def test_stages_keep_install_order_and_cut_where_the_rank_changes() -> None:
    manifests = [
        {"kind": "Deployment", "metadata": {"name": "web"}},
        {"kind": "CustomResourceDefinition", "metadata": {"name": "crd"}},
        {"kind": "Service", "metadata": {"name": "web"}},
        {"kind": "Namespace", "metadata": {"name": "a"}},
        {"kind": "Namespace", "metadata": {"name": "b"}},
    ]
    stages = install_stages(manifests)
    assert [[(m["kind"], m["metadata"]["name"]) for m in stage] for stage in stages] == [
        [("Namespace", "a"), ("Namespace", "b")],
        [("CustomResourceDefinition", "crd")],
        [("Deployment", "web"), ("Service", "web")],
    ]
    assert [m for stage in stages for m in stage] == install_order(manifests)


def test_a_description_of_one_rank_is_one_stage_and_none_is_no_stage() -> None:
    assert install_stages([{"kind": "ConfigMap"}, {"kind": "Secret"}]) == [[{"kind": "ConfigMap"}, {"kind": "Secret"}]]
    assert install_stages([]) == []

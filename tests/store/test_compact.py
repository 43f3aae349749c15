"""Cached models share their fields-set where alike, and say exactly what they said before."""

from __future__ import annotations

from clusternet_nats.api.apps import Base
from clusternet_nats.api.meta import Feed
from clusternet_nats.store.compact import share_field_sets


def _base(name: str) -> Base:
    feeds = [Feed(api_version="v1", kind="Namespace", name="app"), Feed(api_version="v1", kind="Service", name="web")]
    return Base.new(name, "clusternet-abc", spec={"feeds": feeds})


def test_alike_models_share_one_set_and_dump_and_compare_as_before() -> None:
    first, second = _base("one"), _base("two")
    dumped = (first.model_dump_json(), second.model_dump_json())
    share_field_sets(first)
    share_field_sets(second)
    assert first.metadata.model_fields_set is second.metadata.model_fields_set
    assert first.spec.feeds[0].model_fields_set is second.spec.feeds[1].model_fields_set
    assert first.model_fields_set is not first.metadata.model_fields_set, "one set per model class"
    assert (first.model_dump_json(), second.model_dump_json()) == dumped
    assert first == _base("one") and first != second


def test_a_copy_with_an_update_leaves_the_shared_set_alone() -> None:
    cached, other = _base("one"), _base("two")
    share_field_sets(cached)
    share_field_sets(other)
    before = set(other.metadata.model_fields_set)
    changed = cached.metadata.model_copy(update={"generation": 4})
    assert "generation" in changed.model_fields_set
    assert other.metadata.model_fields_set == before


def test_a_model_walked_before_is_not_walked_again() -> None:
    """What a fleet's objects share (one rendered spec) is walked once, not once per object."""
    first = _base("one")
    share_field_sets(first)
    spec = first.spec
    added = Feed(api_version="v1", kind="ConfigMap", name="late")
    object.__setattr__(spec, "feeds", [*spec.feeds, added])  # only a walk would reach it
    second = _base("two").model_copy(update={"spec": spec})
    share_field_sets(second)
    assert second.metadata.model_fields_set is first.metadata.model_fields_set
    assert added.model_fields_set is not first.spec.feeds[0].model_fields_set

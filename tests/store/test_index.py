"""The reverse index (store/index.py): what each key carries, and which keys carry a value, through
values gained, shared, lost and keys deleted (a value carried by one key is kept as that key)."""

from __future__ import annotations

from clusternet_nats.store.index import Index


def test_keys_for_a_value_follow_every_change() -> None:
    index: Index[list[str], str] = Index(lambda labels: labels)
    assert index.update("a", ["x", "y", "x"]) == {"x", "y"}
    assert index.keys_for("x") == ["a"] and index.values_of("a") == frozenset({"x", "y"})
    assert index.update("b", ["x"]) == {"x"}
    assert index.keys_for("x") == ["a", "b"], "a second key carrying the value"
    assert index.update("a", ["y"]) == {"x", "y"}, "the values before and now"
    assert index.keys_for("x") == ["b"] and index.keys_for("y") == ["a"]
    assert index.update("b", ["x"]) == {"x"}, "unchanged"
    assert index.keys_for("x") == ["b"]
    assert index.update("b", None) == {"x"}, "a deletion tells what the key carried"
    assert index.keys_for("x") == [] and not index.has("x") and index.values_of("b") == frozenset()
    assert index.update("c", ["y"]) == {"y"} and index.keys_for("y") == ["a", "c"]
    assert index.update("a", []) == {"y"} and index.keys_for("y") == ["c"] and index.has("y")
    assert index.update("c", None) == {"y"} and not index.has("y")
    assert index.update("gone", None) == set()

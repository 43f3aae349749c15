"""The one YAML/JSON reader: Kubernetes' reading of YAML, JSON-compatible output, limits."""

from __future__ import annotations

import json

import pytest
from clusternet_nats.api.loader import ObjectError, load_documents
from clusternet_nats.api.yamljson import MAX_DEPTH, MAX_NODES, DecodeError, load_json, load_yaml, load_yaml_documents

TIMESTAMPS = """\
date: 2024-01-02
spaced: 2001-12-14 21:59:43.10 -5
iso: 2001-12-14t21:59:43.10-05:00
zulu: 2024-01-02T10:00:00Z
tagged: !!timestamp 2024-01-02
"""


def test_timestamps_stay_the_strings_written() -> None:
    data = load_yaml(TIMESTAMPS)
    assert data == {
        "date": "2024-01-02",
        "spaced": "2001-12-14 21:59:43.10 -5",
        "iso": "2001-12-14t21:59:43.10-05:00",
        "zulu": "2024-01-02T10:00:00Z",
        "tagged": "2024-01-02",
    }
    assert json.loads(json.dumps(data)) == data


def test_other_scalars_are_read_as_kubectl_reads_them() -> None:
    data = load_yaml("n: 1\nf: 1.5\nb: true\nold: yes\nnothing: null\nquoted: '2024-01-02'\n")
    assert data == {"n": 1, "f": 1.5, "b": True, "old": True, "nothing": None, "quoted": "2024-01-02"}


def test_non_string_keys_become_their_json_text() -> None:
    assert load_yaml("1: a\ntrue: b\nnull: c\n1.5: d\n") == {"1": "a", "true": "b", "null": "c", "1.5": "d"}


def test_merge_keys_and_aliases_give_unshared_copies() -> None:
    data = load_yaml("base: &b {k: 1}\nmerged: {<<: *b, j: 2}\nsame: *b\n")
    assert data == {"base": {"k": 1}, "merged": {"k": 1, "j": 2}, "same": {"k": 1}}
    data["same"]["k"] = 9
    assert data["base"] == {"k": 1}, "an alias must not share its anchor's value"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {b: [1, !!binary aGVsbG8=]}", "a.b[1]: b'hello' (bytes) has no JSON form"),
        ("a: .nan", "a: nan (float) has no JSON form"),
        ("a: !!set {x}", "a: {'x'} (set) has no JSON form"),
        ("? [1]\n: x", "a list cannot be a JSON object key"),
        ("a: &a [*a]", "alias 'a' refers to a node that contains it"),
        ("a: *nowhere", "found undefined alias 'nowhere'"),
    ],
)
def test_what_json_cannot_hold_is_refused(text: str, message: str) -> None:
    with pytest.raises(DecodeError) as err:
        load_yaml(text)
    assert str(err.value).endswith(message)


def test_non_utf8_is_refused_not_guessed() -> None:
    with pytest.raises(DecodeError, match=r"YAML is not UTF-8: byte 3 is b'\\xff'"):
        load_yaml(b"a: \xff")
    with pytest.raises(DecodeError, match="JSON is not UTF-8"):
        load_json(b'{"a": "\xe9"}')
    assert load_yaml("a: é".encode()) == {"a": "é"}


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    fits = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert load_yaml(fits) is not None and load_json(fits) is not None
    for depth in (MAX_DEPTH + 2, 5000):  # 5000 would otherwise end in a RecursionError
        text = "[" * depth + "]" * depth
        with pytest.raises(DecodeError, match=f"nested deeper than {MAX_DEPTH} levels"):
            load_yaml(text)
        with pytest.raises(DecodeError, match=f"nested deeper than {MAX_DEPTH} levels"):
            load_json(text)


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    """Nine aliases per level, nine levels: 9**9 values from a few hundred bytes."""
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(DecodeError, match=f"more than {MAX_NODES} values once aliases are expanded"):
        load_yaml("\n".join(lines))


def test_errors_name_the_document_line_and_column() -> None:
    assert load_yaml_documents("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, None, {"b": 2}]
    with pytest.raises(DecodeError, match="malformed YAML at line 4, column 5") as err:
        load_yaml_documents("a: 1\n---\n---\nb: x: y\n")
    assert err.value.document == 3
    with pytest.raises(DecodeError, match="b: inf") as err:
        load_yaml_documents("a: 1\n---\nb: .inf\n")
    assert err.value.document == 2
    with pytest.raises(DecodeError, match="malformed JSON at line 2, column 1"):
        load_json('{"a":\n}')


def test_object_loader_keeps_timestamps_in_a_manifest() -> None:
    (manifest,) = load_documents(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {when: 2024-01-02}\n"
    )
    assert manifest.to_json_dict()["template"]["data"] == {"when": "2024-01-02"}
    bomb = ["l0: &l0 [x,x,x,x,x,x,x,x,x,x]"] + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    with pytest.raises(ObjectError, match=r"^x\.yaml: document 2: YAML at line 8, column \d+: more than"):
        load_documents("a: 1\n---\n" + "\n".join(bomb), "x.yaml")

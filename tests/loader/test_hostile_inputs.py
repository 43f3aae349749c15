"""The one reader under hostile input (issue 13): whatever the bytes, a DecodeError naming the
problem or JSON-compatible data that serializes back, never another exception. Run over the
hostile corpus and over hypothesis-generated text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clusternet_nats.api.yamljson import DecodeError, load_json, load_yaml, load_yaml_documents
from hypothesis import given, settings
from hypothesis import strategies as st

CORPUS = Path(__file__).parent.parent / "hostile" / "corpus"
LOADERS = (load_json, load_yaml, load_yaml_documents)


def read_or_refuse(data: str | bytes) -> None:
    for load in LOADERS:
        refusal: DecodeError | None = None
        try:
            value = load(data)
        except DecodeError as err:
            refusal = err
        if refusal is not None:
            assert str(refusal), "a refusal names its problem"
            continue
        json.dumps(value, allow_nan=False).encode("utf-8")  # what is read can be stored


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.*")), ids=lambda p: p.name)
def test_every_corpus_document_is_read_or_refused(path: Path) -> None:
    read_or_refuse(path.read_bytes())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": ' + "9" * 5000 + "}", "4300 digits"),
        ("a: " + "9" * 5000, "4300 digits"),
        ("a: 0x" + "f" * 5000, "has no JSON form"),
        ('{"a": "\\ud800"}', "lone surrogate"),
        ('{"\\udfff": 1}', "lone surrogate"),
    ],
)
def test_numbers_and_strings_that_could_never_be_stored_are_refused(text: str, message: str) -> None:
    loader = load_json if text.startswith("{") else load_yaml
    with pytest.raises(DecodeError, match=message):
        loader(text)


@settings(max_examples=200, deadline=None, database=None)
@given(st.binary(max_size=300) | st.text(max_size=300))
def test_arbitrary_input_is_read_or_refused(data: str | bytes) -> None:
    read_or_refuse(data)


_YAMLISH = st.lists(
    st.sampled_from(["a: ", "- ", "&x ", "*x ", "{", "}", "[", "]", ",", ":", "\n", "  ", "!!str ", "? ", "'", '"',
                     "0x1f", ".nan", "1e999", "~", "2024-01-02", "<<: *x", "---\n", "|\n", "\\ud800", "\t"]),
    max_size=60,
).map("".join)


@settings(max_examples=200, deadline=None, database=None)
@given(_YAMLISH)
def test_yaml_made_of_its_own_syntax_is_read_or_refused(text: str) -> None:
    read_or_refuse(text)

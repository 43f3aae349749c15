"""Fuzzing the hub's API with hostile bodies (issue 13): a checked-in corpus, bodies built here
(10 MB, a 1 MB key, a wrong type at every level of a Subscription) and hypothesis-generated
documents. For every request: no 5xx; a refusal is a Kubernetes Status and leaves the listed
state exactly as it was; and `/healthz` answers within 1 s throughout (a concurrent prober)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .prober import probing
from .test_defects import MANIFESTS, subs_path, subscription

CORPUS = Path(__file__).parent / "corpus"
JSON, YAML = "application/json", "application/yaml"
MERGE, JSON_PATCH, APPLY = "application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"
WRONG_VALUES: tuple[Any, ...] = (None, True, -1, 1.5, "text", [], {}, [1, "a"], {"x": {"y": None}})


async def state(http: aiohttp.ClientSession, namespace: str) -> list[tuple[str, str]]:
    """What a refusal must leave unchanged: the namespace's Subscriptions and all Manifests, by version."""
    seen = []
    for path in (subs_path(namespace), MANIFESTS):
        async with http.get(path) as resp:
            assert resp.status == 200, await resp.text()
            seen += [(i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in (await resp.json())["items"]]
    return seen


async def send(http: aiohttp.ClientSession, method: str, path: str, body: bytes, content_type: str) -> int:
    """One hostile request: never a 5xx, and a refusal is a Status naming the problem."""
    async with http.request(method, path, data=body, headers={"Content-Type": content_type}) as resp:
        text = await resp.text()
        assert resp.status < 500, f"{method} {path} -> {resp.status}: {text[:500]}"
        if resp.status >= 400:
            status = json.loads(text)
            assert status["kind"] == "Status" and status["code"] == resp.status and status["message"], status
        return resp.status


async def attack(http: aiohttp.ClientSession, namespace: str, body: bytes, content_type: str) -> None:
    """`body` at each path that takes one: refusals leave the state as it was."""
    name = "target"
    targets = [
        ("POST", subs_path(namespace), content_type),
        ("PUT", subs_path(namespace, name), content_type),
        ("PATCH", subs_path(namespace, name), MERGE),
        ("PATCH", subs_path(namespace, name), JSON_PATCH),
        ("PATCH", subs_path(namespace, name), APPLY),
        ("POST", SHADOW_OBJECTS_PATH, content_type),
    ]
    for method, path, kind in targets:
        before = await state(http, namespace)
        code = await send(http, method, path, body, kind)
        if code >= 400:
            assert await state(http, namespace) == before, f"{method} {path} was refused ({code}) but changed state"


async def ensure_target(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.put(subs_path(namespace, "target"), json=subscription(namespace, "target")) as resp:
        assert resp.status in (200, 201), await resp.text()


def wrong_types(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, replacement) for every node of `value` and every value of another shape."""
    for wrong in WRONG_VALUES:
        if type(wrong) is not type(value):
            yield path, wrong
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from wrong_types(child, (*path, key))


def replaced(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(document)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return out


async def test_the_corpus_is_refused_or_taken_never_a_5xx(http: aiohttp.ClientSession, unique_ns: str) -> None:
    files = sorted(p for p in CORPUS.iterdir() if p.suffix in (".json", ".yaml"))
    assert len(files) >= 30
    await ensure_target(http, unique_ns)
    async with probing(http) as prober:
        for file in files:
            body = file.read_bytes().replace(b"name: hostile", f"name: hostile\n  namespace: {unique_ns}".encode())
            await attack(http, unique_ns, body, YAML if file.suffix == ".yaml" else JSON)
    assert prober.slowest < 1.0, f"/healthz took {prober.slowest:.2f}s during the corpus"


async def test_large_bodies_and_huge_keys(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await ensure_target(http, unique_ns)
    ten_mb = subscription(unique_ns) | {"padding": "x" * (10 << 20)}
    huge_key = subscription(unique_ns)
    huge_key["metadata"]["labels"] = {"k" * (1 << 20): "v"}
    many = subscription(unique_ns)
    # Accepted, so listed by every state check after it: 20,000 subscribers (1.1 MB) cost 0.4 s of
    # validation per read on the event loop, which is not this test's subject.
    many["spec"]["subscribers"] = [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}] * 5_000
    async with probing(http) as prober:
        for document in (ten_mb, huge_key, many):
            await attack(http, unique_ns, json.dumps(document).encode(), JSON)
    assert prober.slowest < 1.0, f"/healthz took {prober.slowest:.2f}s during large bodies"


async def test_a_wrong_type_at_every_level_of_a_subscription(http: aiohttp.ClientSession, unique_ns: str) -> None:
    valid = subscription(unique_ns, "typed")
    cases = list(wrong_types(valid))
    assert len(cases) > 100
    async with probing(http) as prober:
        for path, wrong in cases:
            body = json.dumps(replaced(valid, path, wrong)).encode()
            before = await state(http, unique_ns)
            if await send(http, "POST", subs_path(unique_ns), body, JSON) >= 400:
                assert await state(http, unique_ns) == before, path
            else:  # a shape the API takes (e.g. a null that means "unset"): gone again for the next case
                async with http.delete(subs_path(unique_ns, "typed")) as resp:
                    assert resp.status == 200
    assert prober.slowest < 1.0


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def _mutants(namespace: str) -> st.SearchStrategy[bytes]:
    """A Subscription with one subtree replaced by arbitrary JSON, arbitrary JSON, or raw bytes."""
    valid = subscription(namespace, "fuzzed")
    paths = [path for path, _ in wrong_types(valid)]
    mutated = st.tuples(st.sampled_from(paths), _JSON).map(lambda c: json.dumps(replaced(valid, *c)).encode())
    return mutated | _JSON.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=200)


async def test_hypothesis_bodies_never_break_the_hub(http: aiohttp.ClientSession, unique_ns: str) -> None:
    """Hypothesis drives a thread; each example's requests run on this loop (where the hub serves)."""
    loop = asyncio.get_running_loop()

    async def one(body: bytes, content_type: str) -> None:
        before = await state(http, unique_ns)
        if await send(http, "POST", subs_path(unique_ns), body, content_type) >= 400:
            assert await state(http, unique_ns) == before
        else:
            async with http.delete(subs_path(unique_ns, "fuzzed")) as resp:
                assert resp.status in (200, 404)

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=_mutants(unique_ns), content_type=st.sampled_from([JSON, YAML]))
    def check(body: bytes, content_type: str) -> None:
        asyncio.run_coroutine_threadsafe(one(body, content_type), loop).result(timeout=30)

    async with probing(http) as prober:
        await asyncio.to_thread(check)
    assert prober.slowest < 1.0, f"/healthz took {prober.slowest:.2f}s during the fuzzing"

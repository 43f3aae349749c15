"""The hub's HTTP API as an attacker finds it: every registered route, without credentials, as a
viewer and as another namespace's editor. Routes come from the aiohttp router itself, so a
route added later is covered without touching this test.

Each refusal must be a 401/403 `Status`, and afterwards the store must be exactly as before:
the last sequence and message count of every stream (each KV bucket and the Events) unchanged.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from clusternet_nats.api import all_kinds
from clusternet_nats.api.builtin_kinds import BUILTIN_KINDS
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.testing.natsserver import NatsServer
from nats.js import JetStreamContext

from tests.hub.objects import UNAUTHORIZED

VIEWER, EDITOR = "mallory-viewer", "eve-editor"
OWN, OTHER = "team-eve", "team-victim"
SEED = "seed"
POLICY = {
    "bindings": [
        {"role": "view", "users": [VIEWER]},
        {"role": "edit", "users": [EDITOR], "namespaces": [OWN]},
    ]
}
ANONYMOUS = {(method, path) for method in ("GET", "HEAD") for path in ("/healthz", "/livez", "/readyz")}
READS = frozenset({"GET", "HEAD"})
REGISTRATION = "/apis/registration.clusternet-nats.io/"
SHADOW = "/apis/shadow/"


@pytest.fixture
async def served(private_nats: NatsServer) -> AsyncIterator[ServedHub]:
    """A hub on its own nats-server, so nothing but these requests could change its streams."""
    async with running_hub(private_nats.url, users={VIEWER: [], EDITOR: []}, policy=POLICY) as hub:
        yield hub


def _body(template: str, values: dict[str, str]) -> dict[str, Any]:
    kind = next((i for i in all_kinds() if i.plural == values.get("plural")), None)
    metadata = {"name": values.get("name", SEED), "namespace": values.get("namespace", OTHER)}
    if kind is None:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {"replicas": 1}}
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": {}}


def requests(
    app_routes: list[tuple[str, str]], namespaces: tuple[str, ...], token_id: str
) -> Iterator[tuple[str, str, str, dict[str, str]]]:
    """(method, route template, concrete path, values) for every route, each placeholder filled
    with every kind and each of `namespaces`."""
    for method, template in app_routes:
        names = re.findall(r"{(\w+)}", template)
        choices: list[list[tuple[str, str]]] = []
        for name in names:
            if name == "plural":
                continue
            if name == "namespace":
                choices.append([("namespace", ns) for ns in namespaces])
            elif name == "token_id":
                choices.append([("token_id", token_id)])
            elif name not in ("group", "version"):
                choices.append([(name, SEED)])
        kinds = [(i.group, i.version, i.plural) for i in all_kinds()] if "plural" in names else [("", "", "")]
        if "plural" in names and "group" not in names and not template.startswith(SHADOW):
            kinds = [(k.group, k.version, k.plural) for k in BUILTIN_KINDS if template.startswith(_base(k.group))]
        for (group, version, plural), combo in itertools.product(kinds, itertools.product(*choices)):
            values = {"group": group, "version": version, "plural": plural, **dict(combo)}
            yield method, template, template.format(**values), values


def _base(group: str) -> str:
    """Where a built-in group's routes start (the shadow API serves them at their own paths)."""
    return f"/apis/{group}/" if group else "/api/v1/"


ANY_METHOD = ("GET", "POST", "PUT", "PATCH", "DELETE")
"""What a route taking any method (`*`: the proxy to child clusters) is tried with."""


def _routes(hub: ServedHub) -> list[tuple[str, str]]:
    routes = [
        (method, route.resource.canonical)
        for route in hub.server.app.router.routes()
        if route.resource
        for method in (ANY_METHOD if route.method == "*" else (route.method,))
    ]
    return sorted(set(routes))


async def _streams(js: JetStreamContext) -> dict[str, tuple[int, int]]:
    return {s.config.name: (s.state.last_seq, s.state.messages) for s in await js.streams_info()}


async def _seed(hub: ServedHub) -> str:
    """Objects a refused write would have changed or deleted; returns a bootstrap token's id."""
    async with hub.session() as admin:
        for info in all_kinds():
            for namespace in (OWN, OTHER) if info.namespaced else (None,):
                path = f"/apis/{info.group}/{info.version}" + (f"/namespaces/{namespace}" if namespace else "")
                body: dict[str, Any] = {
                    "apiVersion": info.api_version,
                    "kind": info.kind,
                    "metadata": {"name": SEED, **({"namespace": namespace} if namespace else {})},
                }
                if info.kind == "Subscription":
                    body["spec"] = {
                        "subscribers": [{"clusterAffinity": {}}],
                        "feeds": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": namespace}],
                    }
                elif info.kind == "ManagedCluster":
                    body["spec"] = {"clusterId": "9f6a4b0e-0000-4000-8000-000000000001", "syncMode": "Pull"}
                async with admin.put(f"{path}/{info.plural}/{SEED}", json=body) as resp:
                    await resp.read()
        async with admin.post(REGISTRATION + "v1/bootstraptokens", json={"description": "seed"}) as resp:
            assert resp.status == 201, await resp.text()
            token_id: str = (await resp.json())["tokenId"]
    async with (
        hub.session() as admin,
        admin.get(f"/apis/apps.clusternet.io/v1alpha1/namespaces/{OTHER}/subscriptions") as resp,
    ):
        assert resp.status == 200 and [i["metadata"]["name"] for i in (await resp.json())["items"]] == [SEED]
    return token_id


def _is_admin_route(method: str, path: str) -> bool:
    """What only an admin may do, whatever other role: tokens, approvals, cluster registration and
    cluster lifecycle (the hub's documented policy, restated here rather than imported)."""
    if path.startswith(REGISTRATION):
        return True
    if path.startswith(SHADOW):  # never Clusternet's kinds there (its shadow API leaves *.clusternet.io out)
        return False
    if "/clusterregistrationrequests" in path and method not in READS:
        return True
    return "/managedclusters" in path and method in ("POST", "DELETE")


async def _send(session: aiohttp.ClientSession, method: str, path: str, body: Any) -> tuple[int, Any]:
    async with session.request(method, path, json=None if method in READS else body) as resp:
        data = (
            await resp.json(content_type=None) if method != "HEAD" and resp.content_type == "application/json" else None
        )
        return resp.status, data


async def test_every_route_refuses_strangers_viewers_and_other_namespaces_editors(
    served: ServedHub, private_nats: NatsServer, js_private: JetStreamContext
) -> None:
    token_id = await _seed(served)
    routes = _routes(served)
    assert len(routes) >= 20 and ("DELETE", "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}") in routes
    before = await _streams(js_private)
    counts = {"anonymous": 0, VIEWER: 0, EDITOR: 0}

    async with served.session(user=None) as anonymous:
        for method, template, path, values in requests(routes, (OWN, OTHER), token_id):
            if (method, template) in ANONYMOUS:
                continue
            status, body = await _send(anonymous, method, path, _body(template, values))
            assert status == 401, (method, path, status, body)
            assert method == "HEAD" or body == UNAUTHORIZED, (method, path, body)
            counts["anonymous"] += 1

    async with served.session(VIEWER) as viewer:
        for method, template, path, values in requests(routes, (OWN, OTHER), token_id):
            if (method, template) in ANONYMOUS or (method in READS and not _is_admin_route(method, path)):
                continue
            status, body = await _send(viewer, method, path, _body(template, values))
            assert status == 403, (method, path, status, body)
            assert method == "HEAD" or (body["kind"], body["reason"]) == ("Status", "Forbidden"), body
            assert method == "HEAD" or f'User "{VIEWER}" cannot' in body["message"], body
            counts[VIEWER] += 1

    async with served.session(EDITOR) as editor:
        for method, template, path, values in requests(routes, (OWN, OTHER), token_id):
            if (method, template) in ANONYMOUS:
                continue
            foreign = values.get("namespace") == OTHER or "namespace" not in values
            must_refuse = _is_admin_route(method, path) or (method not in READS and foreign)
            if not must_refuse:
                continue
            status, body = await _send(editor, method, path, _body(template, values))
            assert status == 403, (method, path, status, body)
            assert method == "HEAD" or body["reason"] == "Forbidden", body
            counts[EDITOR] += 1

    assert min(counts.values()) > 50, counts  # every route, many kinds and namespaces each
    assert await _streams(js_private) == before


async def test_paths_the_router_reads_otherwise_are_refused(served: ServedHub, js_private: JetStreamContext) -> None:
    """Encoded slashes and dot segments must not let an editor of one namespace reach another."""
    await _seed(served)
    before = await _streams(js_private)
    subs = "/apis/apps.clusternet.io/v1alpha1/namespaces"
    attempts = [
        ("POST", f"{subs}/{OWN}%2F..%2F{OTHER}/subscriptions"),
        ("DELETE", f"{subs}/{OWN}/subscriptions/..%2F..%2F{OTHER}%2Fsubscriptions%2F{SEED}"),
        ("DELETE", f"{subs}/{OWN}/../{OTHER}/subscriptions/{SEED}"),
        ("DELETE", f"{subs}/{OWN}/subscriptions/%2E%2E/%2E%2E/{OTHER}/subscriptions/{SEED}"),
        ("PUT", f"{subs}/{OTHER}%2Fsubscriptions%2F{SEED}%2F..%2F..%2F..%2F{OWN}/subscriptions/{SEED}"),
    ]
    async with served.session(EDITOR) as editor:
        for method, path in attempts:
            body = {"apiVersion": "apps.clusternet.io/v1alpha1", "kind": "Subscription",
                    "metadata": {"name": SEED, "namespace": OTHER}, "spec": {}}  # fmt: skip
            async with editor.request(method, aiohttp.client.URL(path, encoded=True), json=body) as resp:
                assert resp.status in (400, 403, 404, 405), (method, path, resp.status, await resp.text())
    assert await _streams(js_private) == before


@pytest.fixture
async def js_private(private_nats: NatsServer) -> AsyncIterator[JetStreamContext]:
    import nats

    nc = await nats.connect(private_nats.url)
    yield nc.jetstream()
    await nc.close()

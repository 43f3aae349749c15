"""`?watch=true` against the hub: kube-apiserver's WatchEvents from the KV streams."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from clusternet_nats.api import by_kind
from clusternet_nats.hub import watch as hub_watch
from clusternet_nats.hub.testing import ServedHub, running_hub
from clusternet_nats.store.keys import kv_stream
from clusternet_nats.store.kv import JsonBucket
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext

from .verbs import create, events, subs_path, subscription


async def _list_version(http: aiohttp.ClientSession, namespace: str) -> str:
    async with http.get(subs_path(namespace)) as resp:
        version: str = (await resp.json())["metadata"]["resourceVersion"]
        return version


async def _next(stream: Any) -> dict[str, Any]:
    event: dict[str, Any] = await asyncio.wait_for(anext(stream), 10)
    return event


async def test_watch_from_a_list_sees_added_modified_deleted(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns, "first")
    version = await _list_version(http, unique_ns)
    assert len(version.split(".")) == 3  # spec, status, bindings
    params = {"watch": "true", "resourceVersion": version}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        assert resp.status == 200
        stream = events(resp)
        await create(http, unique_ns, "second")
        added = await _next(stream)
        assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "second")
        changed = subscription(unique_ns, "first")
        changed["metadata"]["labels"] = {"app": "changed"}
        async with http.put(subs_path(unique_ns, "first"), json=changed) as put:
            assert put.status == 200
        modified = await _next(stream)
        assert (modified["type"], modified["object"]["metadata"]["labels"]) == ("MODIFIED", {"app": "changed"})
        async with http.delete(subs_path(unique_ns, "second")) as deleted_resp:
            assert deleted_resp.status == 200
        deleted = await _next(stream)
        assert (deleted["type"], deleted["object"]["metadata"]["name"]) == ("DELETED", "second")


@pytest.mark.parametrize("version", [None, "0"])
async def test_watch_without_a_version_starts_with_the_current_state(
    http: aiohttp.ClientSession, unique_ns: str, version: str | None
) -> None:
    await create(http, unique_ns, "a")
    await create(http, unique_ns, "b")
    params = {"watch": "1", **({"resourceVersion": version} if version is not None else {})}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        stream = events(resp)
        first = [await _next(stream), await _next(stream)]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in first] == [("ADDED", "a"), ("ADDED", "b")]


async def test_watch_of_one_object_by_field_selector(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns, "one")
    await create(http, unique_ns, "other")
    params = {"watch": "true", "fieldSelector": "metadata.name=one"}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        stream = events(resp)
        assert (await _next(stream))["object"]["metadata"]["name"] == "one"
        for name in ("other", "one"):
            body = subscription(unique_ns, name)
            body["metadata"]["labels"] = {"app": "v2"}
            async with http.put(subs_path(unique_ns, name), json=body) as put:
                assert put.status == 200
        event = await _next(stream)  # "other" was never sent
        assert (event["type"], event["object"]["metadata"]["name"]) == ("MODIFIED", "one")


async def test_label_selector_turns_leaving_into_deleted(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns, "web")
    params = {"watch": "true", "labelSelector": "app=web"}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        stream = events(resp)
        assert (await _next(stream))["type"] == "ADDED"
        body = subscription(unique_ns, "web")
        body["metadata"]["labels"] = {"app": "elsewhere"}
        async with http.put(subs_path(unique_ns, "web"), json=body) as put:
            assert put.status == 200
        assert (await _next(stream))["type"] == "DELETED"


async def test_a_status_change_is_a_modified_of_the_object(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    await create(http, unique_ns, "s")
    version = await _list_version(http, unique_ns)
    async with http.get(subs_path(unique_ns), params={"watch": "true", "resourceVersion": version}) as resp:
        stream = events(resp)
        status = JsonBucket(js, by_kind("Subscription").status_bucket or "")
        await status.create(f"{unique_ns}.s", b'{"desiredReleases": 3}')
        event = await _next(stream)
        assert event["type"] == "MODIFIED"
        assert event["object"]["status"]["desiredReleases"] == 3
        resumed = event["object"]["metadata"]["resourceVersion"]
    # Resuming from the event's version sees what happened afterwards, and only that.
    async with http.get(subs_path(unique_ns), params={"watch": "true", "resourceVersion": resumed}) as resp:
        stream = events(resp)
        found = await status.get(f"{unique_ns}.s")
        assert found is not None
        await status.write(f"{unique_ns}.s", b'{"desiredReleases": 4}', found[1])
        event = await _next(stream)
        assert event["object"]["status"]["desiredReleases"] == 4


async def test_too_old_a_version_is_410_expired(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    await create(http, unique_ns, "x")
    info = by_kind("Subscription")
    stream = kv_stream(info.bucket)
    first = (await js.stream_info(stream)).state.first_seq
    oldest = await js.get_msg(stream, first)
    bucket = JsonBucket(js, info.bucket)
    key = (oldest.subject or "").removeprefix(bucket.prefix)
    await bucket.write(key, oldest.data or b"", first)  # the same value again: the oldest revision is gone
    gone = first - 1
    async with http.get(subs_path(unique_ns), params={"watch": "true", "resourceVersion": f"{gone}.0.0"}) as resp:
        assert resp.status == 410
        body = await resp.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Expired", 410)
    assert "too old resource version" in body["message"]


async def test_timeout_seconds_ends_the_stream(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with http.get(subs_path(unique_ns), params={"watch": "true", "timeoutSeconds": "1"}) as resp:
        assert [event async for event in events(resp)] == []


async def test_bookmarks_carry_the_position(
    http: aiohttp.ClientSession, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_watch, "BOOKMARK_SECONDS", 0.2)
    version = await _list_version(http, unique_ns)
    params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        bookmark = await _next(events(resp))
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "Subscription"
    assert bookmark["object"]["metadata"]["resourceVersion"] == version


async def test_bad_version_and_watch_authorization(served_hub: ServedHub, unique_ns: str) -> None:
    async with served_hub.session() as http:
        params = {"watch": "true", "resourceVersion": "not-a-version"}
        async with http.get(subs_path(unique_ns), params=params) as resp:
            assert resp.status == 400
            assert "resourceVersion" in (await resp.json())["message"]
    params = {"watch": "true", "timeoutSeconds": "0"}
    async with served_hub.session("vera") as viewer, viewer.get(subs_path(unique_ns), params=params) as resp:
        assert resp.status == 200  # view includes watch


async def test_hub_shutdown_ends_watches(nats_server: NatsServer, unique_ns: str) -> None:
    async with running_hub(nats_server.url) as hub:
        http = hub.session()
        resp = await http.get(subs_path(unique_ns), params={"watch": "true"})
        assert resp.status == 200
        reader = asyncio.create_task(_collect(resp))
    try:
        assert await asyncio.wait_for(reader, 20) == []  # ended, cleanly, by the hub going down
    finally:
        resp.release()
        await http.close()


async def _collect(resp: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    return [event async for event in events(resp)]


async def test_a_watch_asked_for_tables_sends_table_rows(http: aiohttp.ClientSession, unique_ns: str) -> None:
    await create(http, unique_ns, "t1")
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    async with http.get(subs_path(unique_ns), params={"watch": "true"}, headers=headers) as resp:
        stream = events(resp)
        first = await _next(stream)
        await create(http, unique_ns, "t2")
        second = await _next(stream)
    for event in (first, second):
        assert (event["type"], event["object"]["kind"]) == ("ADDED", "Table")
    assert first["object"]["columnDefinitions"][0]["name"] == "Name"
    assert second["object"]["columnDefinitions"] == []  # as kube-apiserver: only in the first
    assert [row["cells"][0] for row in (first["object"]["rows"] + second["object"]["rows"])] == ["t1", "t2"]


async def test_a_client_going_away_ends_its_watch(served_hub: ServedHub, js: JetStreamContext, unique_ns: str) -> None:
    info = by_kind("Subscription")
    watched = f"{JsonBucket(js, info.bucket).prefix}{unique_ns}.>"

    async def watching() -> bool:
        """Whether the hub holds a push consumer (a watch's) on this namespace's keys."""
        consumers = await js.consumers_info(kv_stream(info.bucket))
        return any(c.config.filter_subject == watched and c.config.deliver_subject for c in consumers)

    async with served_hub.session() as http:
        resp = await http.get(subs_path(unique_ns), params={"watch": "true"})
        assert resp.status == 200
        assert await watching()
        resp.close()  # the connection drops, mid-stream
    await eventually(lambda: _not(watching), what="the watch's consumer gone with its client")


async def _not(check: Any) -> bool:
    return not await check()


async def test_an_unreadable_object_is_left_out_and_the_watch_goes_on(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    """A stored value that does not decode is skipped as lists skip it (issue 13): it never ends
    the watch of everything else."""
    version = await _list_version(http, unique_ns)
    async with http.get(subs_path(unique_ns), params={"watch": "true", "resourceVersion": version}) as resp:
        stream = events(resp)
        bucket = JsonBucket(js, by_kind("Subscription").bucket)
        await bucket.create(f"{unique_ns}.broken", b'{"kind": "Subscription", "spec": 3}')
        await create(http, unique_ns, "after")
        event = await _next(stream)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
    await bucket.delete(f"{unique_ns}.broken")


@pytest.mark.parametrize("selector", [{"fieldSelector": "metadata.name=gone"}, {}, {"labelSelector": "app=web"}])
async def test_a_deletion_between_the_list_and_the_watch_is_heard(
    http: aiohttp.ClientSession, unique_ns: str, selector: dict[str, str]
) -> None:
    """The object is gone from the watch's own read, and its bucket keeps nothing before the deletion
    marker: still the client, which holds it from its list, hears DELETED (`cnet wait --for=delete`
    waited out its timeout without)."""
    await create(http, unique_ns, "gone")
    version = await _list_version(http, unique_ns)
    async with http.delete(subs_path(unique_ns, "gone")) as resp:
        assert resp.status == 200
    params = {"watch": "true", "resourceVersion": version, **selector}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        event = await _next(events(resp))
    assert event["type"] == "DELETED"
    assert event["object"]["metadata"] | {"resourceVersion": ""} == {
        "name": "gone",
        "namespace": unique_ns,
        "resourceVersion": "",
    }
    assert event["object"]["kind"] == "Subscription"


async def test_a_resumed_watch_sends_no_deletion_of_what_it_saw_not_match(
    http: aiohttp.ClientSession, unique_ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object the watch saw created outside its selector was never the client's: its deletion
    is not sent."""
    monkeypatch.setattr(hub_watch, "BOOKMARK_SECONDS", 0.05)
    await create(http, unique_ns, "before")  # the position is one the bucket still holds
    version = await _list_version(http, unique_ns)
    params = {"watch": "true", "resourceVersion": version, "labelSelector": "app=web", "allowWatchBookmarks": "true"}
    async with http.get(subs_path(unique_ns), params=params) as resp:
        stream = events(resp)
        created = int((await create(http, unique_ns, "other"))["metadata"]["resourceVersion"])
        seen = await _next(stream)  # bookmarks until the watch has read past the creation
        while seen["type"] == "BOOKMARK" and int(seen["object"]["metadata"]["resourceVersion"].split(".")[0]) < created:
            seen = await _next(stream)
        assert seen["type"] == "BOOKMARK"
        async with http.delete(subs_path(unique_ns, "other")) as deleted:
            assert deleted.status == 200
        await create(http, unique_ns, "web")
        event = await _next(stream)
        while event["type"] == "BOOKMARK":
            event = await _next(stream)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "web")

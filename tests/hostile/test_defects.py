"""The hostile inputs issue 13 reported, each as it was reported: refused at the door with a
Kubernetes Status (never a 5xx), the hub responsive meanwhile, and nothing stored."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from clusternet_nats.api import by_kind
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH
from clusternet_nats.store.keys import kv_subject_prefix, object_key
from nats.js import JetStreamContext

from .prober import probing

APPS = "/apis/apps.clusternet.io/v1alpha1"
MANIFESTS = f"{APPS}/namespaces/clusternet-reserved/manifests"
YAML = {"Content-Type": "application/yaml"}
JSON = {"Content-Type": "application/json"}


def subs_path(namespace: str, name: str = "") -> str:
    path = f"{APPS}/namespaces/{namespace}/subscriptions"
    return f"{path}/{name}" if name else path


def subscription(namespace: str, name: str = "demo") -> dict[str, Any]:
    return {
        "apiVersion": "apps.clusternet.io/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}],
            "feeds": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": namespace}],
        },
    }


def kube_object(api_version: str, kind: str, namespace: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}, **fields}


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def alias_bomb() -> str:
    """The billion laughs: 342 bytes standing for 9^9 (~3.9 * 10^8) strings."""
    text = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n"
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    return text


async def refused(resp: aiohttp.ClientResponse, code: int) -> dict[str, Any]:
    body: dict[str, Any] = await resp.json(content_type=None)
    assert resp.status == code, body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    return body


async def names(http: aiohttp.ClientSession, path: str) -> list[str]:
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        return [item["metadata"]["name"] for item in (await resp.json())["items"]]


async def test_configmap_nested_220_deep_is_refused_and_manifests_stay_listable(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    before = await names(http, MANIFESTS)
    body = kube_object("v1", "ConfigMap", unique_ns, "deep", data=nested(220))
    async with http.post(SHADOW_OBJECTS_PATH, data=json.dumps(body), headers=JSON) as resp:
        status = await refused(resp, 400)
    assert "nested deeper than" in status["message"]
    assert await names(http, MANIFESTS) == before


async def test_alias_bomb_is_refused_and_healthz_answers_meanwhile(http: aiohttp.ClientSession, unique_ns: str) -> None:
    async with probing(http) as prober, http.post(subs_path(unique_ns), data=alias_bomb(), headers=YAML) as resp:
        status = await refused(resp, 400)
    assert "aliases are expanded" in status["message"]
    assert prober.slowest < 1.0, f"/healthz took {prober.slowest:.2f}s during the attack"
    assert await names(http, subs_path(unique_ns)) == []


async def test_json_nested_3000_deep_is_a_bad_request(http: aiohttp.ClientSession, unique_ns: str) -> None:
    text = '{"a":' * 3000 + "1" + "}" * 3000
    body = json.dumps(subscription(unique_ns)).replace('"demo"', '"demo", "extra": ' + text, 1)
    async with http.post(subs_path(unique_ns), data=body, headers=JSON) as resp:
        status = await refused(resp, 400)
    assert "nested deeper than" in status["message"]
    assert await names(http, subs_path(unique_ns)) == []


async def test_bodies_that_are_not_utf8_are_bad_requests(http: aiohttp.ClientSession, unique_ns: str) -> None:
    raw = json.dumps(subscription(unique_ns)).encode().replace(b"demo", b"d\xffmo")
    for headers in (JSON, YAML):
        async with http.post(subs_path(unique_ns), data=raw, headers=headers) as resp:
            status = await refused(resp, 400)
        assert "not UTF-8" in status["message"]
    assert await names(http, subs_path(unique_ns)) == []


async def test_negative_replicas_are_invalid_in_kube_apiservers_words(
    http: aiohttp.ClientSession, unique_ns: str
) -> None:
    before = await names(http, MANIFESTS)
    pod = {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    body = kube_object("apps/v1", "Deployment", unique_ns, "web", spec={"replicas": -4, "template": pod})
    async with http.post(SHADOW_OBJECTS_PATH, json=body) as resp:
        status = await refused(resp, 422)
    assert status["reason"] == "Invalid"
    assert "spec.replicas: Invalid value: -4: must be greater than or equal to 0" in status["message"]
    assert status["details"]["causes"][0]["field"] == "spec.replicas"
    assert await names(http, MANIFESTS) == before


async def test_a_body_over_the_limit_is_413_as_a_status(http: aiohttp.ClientSession, unique_ns: str) -> None:
    body = json.dumps(subscription(unique_ns)).replace('"demo"', '"demo", "pad": "' + "x" * (10 << 20) + '"', 1)
    async with http.post(subs_path(unique_ns), data=body, headers=JSON) as resp:
        status = await refused(resp, 413)
    assert status["reason"] == "RequestEntityTooLarge"
    assert await names(http, subs_path(unique_ns)) == []


async def test_an_undecodable_stored_record_is_skipped_reported_and_deletable(
    http: aiohttp.ClientSession, js: JetStreamContext, unique_ns: str
) -> None:
    """Written by hand (`nats kv put`) or before a limit existed: lists skip it, GET names it, DELETE takes it."""
    async with http.post(subs_path(unique_ns), json=subscription(unique_ns, "good")) as resp:
        assert resp.status == 201, await resp.text()
    info = by_kind("Subscription")
    key = object_key(unique_ns, "broken")
    await js.publish(kv_subject_prefix(info.bucket) + key, json.dumps(nested(300)).encode())

    assert await names(http, subs_path(unique_ns)) == ["good"]
    assert "good" in [n for n in await names(http, f"{APPS}/subscriptions")]
    async with http.get(subs_path(unique_ns, "broken")) as resp:
        status = await refused(resp, 422)
    assert key in status["message"] and info.bucket in status["message"]
    async with http.get("/metrics") as resp:
        assert f'cnet_undecodable_records_total{{bucket="{info.bucket}"}}' in await resp.text()

    async with http.delete(subs_path(unique_ns, "broken")) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(subs_path(unique_ns, "broken")) as resp:
        await refused(resp, 404)
    assert await names(http, subs_path(unique_ns)) == ["good"]


async def test_a_patch_cannot_nest_what_it_patches_past_the_limit(http: aiohttp.ClientSession, unique_ns: str) -> None:
    """Each part within the limit, the result not: refused (422), never stored unreadable."""
    body = kube_object("v1", "ConfigMap", unique_ns, "deepish", data=nested(90))
    async with http.post(SHADOW_OBJECTS_PATH, json=body) as resp:
        assert resp.status == 201, await resp.text()
        name = (await resp.json())["metadata"]["name"]
    path = f"{MANIFESTS}/{name}"
    async with http.get(path) as resp:
        before = await resp.json()
    pointer = "/template/data" + "/a" * 89 + "/a"  # a JSON patch's path is text: the patch is shallow
    patch = [{"op": "add", "path": pointer, "value": nested(50)}]
    headers = {"Content-Type": "application/json-patch+json"}
    async with http.patch(path, data=json.dumps(patch), headers=headers) as resp:
        status = await refused(resp, 422)
    assert "nested deeper than" in status["message"]
    async with http.get(path) as resp:
        assert await resp.json() == before


async def test_a_large_yaml_body_is_parsed_off_the_event_loop(http: aiohttp.ClientSession, unique_ns: str) -> None:
    data = "".join(f"  key{i}: value number {i}\n" for i in range(60_000))  # ~1.6 MB of YAML
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: {unique_ns}\ndata:\n{data}"
    async with probing(http) as prober, http.post(SHADOW_OBJECTS_PATH, data=text, headers=YAML) as resp:
        assert resp.status == 201, await resp.text()
    assert prober.answers >= 2, "the prober was not running while the body was parsed"
    assert prober.slowest < 1.0, f"/healthz took {prober.slowest:.2f}s while a large body was parsed"


async def test_names_and_labels_kube_apiserver_refuses_are_invalid(http: aiohttp.ClientSession, unique_ns: str) -> None:
    before = await names(http, MANIFESTS)
    bad_name = kube_object("v1", "ConfigMap", unique_ns, "Not_A_DNS_Name")
    long_label = kube_object("v1", "ConfigMap", unique_ns, "labelled")
    long_label["metadata"]["labels"] = {"a": "x" * 64}
    big_annotations = kube_object("v1", "ConfigMap", unique_ns, "annotated")
    big_annotations["metadata"]["annotations"] = {"a": "x" * (256 * 1024)}
    for body, field in ((bad_name, "metadata.name"), (long_label, "metadata.labels"),
                        (big_annotations, "metadata.annotations")):
        async with http.post(SHADOW_OBJECTS_PATH, json=body) as resp:
            status = await refused(resp, 422)
        assert any(cause["field"].startswith(field) for cause in status["details"]["causes"]), status
    assert await names(http, MANIFESTS) == before

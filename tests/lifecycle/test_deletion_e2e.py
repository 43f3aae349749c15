"""Deletion as Clusternet does it, end to end through real processes and simulated children.

* A feed deleted while Subscriptions use it is taken out of them, so its objects are pruned from
  every child (the other feeds stay).
* A Subscription's deletion waits for the children: it stays (deletionTimestamp, finalizer)
  until every cluster has pruned; a child cut off meanwhile keeps it waiting, prunes on return,
  and a deployer restarted in the middle leaves nothing behind.
* With FeedInUseProtection on (the deployer's feature gate), a feed's deletion is held and the
  Subscriptions using it are named, until none does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from clusternet_nats.testing.system import System
from clusternet_nats.testing.waiting import eventually, holds

from ..e2e.conftest import APPS, HubClient, child_objects, cnet

CLUSTERS = ("sim-1", "sim-2", "far-1")
RESERVED = "clusternet-reserved"
FINALIZER = "apps.clusternet.io/finalizer"
PROTECTION = "apps.clusternet.io/feed-protection"


def write_app(tmp: Path, ns: str, sub: str, maps: tuple[str, ...]) -> Path:
    """A namespace, ConfigMaps in it, and a Subscription of all of them to every prod cluster."""
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    docs += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": m, "namespace": ns}, "data": {"k": m}}
        for m in maps
    ]
    feeds = [{"apiVersion": "v1", "kind": "Namespace", "name": ns}]
    feeds += [{"apiVersion": "v1", "kind": "ConfigMap", "name": m, "namespace": ns} for m in maps]
    docs.append(
        {
            "apiVersion": "apps.clusternet.io/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": sub, "namespace": "default"},
            "spec": {"subscribers": [{"clusterAffinity": {"matchLabels": {"env": "prod"}}}], "feeds": feeds},
        }
    )
    path = tmp / f"{sub}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def maps_in(system: System, cluster: str, ns: str) -> set[str]:
    return {name for kind, namespace, name in child_objects(system, cluster) if kind == "ConfigMap" and namespace == ns}


async def everywhere(system: System, ns: str, maps: set[str], clusters: tuple[str, ...] = CLUSTERS) -> None:
    for cluster in clusters:
        await eventually(
            lambda c=cluster: maps_in(system, c, ns) == maps, 60, what=f"exactly {sorted(maps)} of {ns} in {cluster}"
        )


async def manifest_of(hub: HubClient, name: str) -> dict[str, Any] | None:
    selector = f"labelSelector=apps.clusternet.io/config.name%3D{name}"
    found = await hub.items(f"{APPS}/namespaces/{RESERVED}/manifests?{selector}")
    return found[0] if found else None


async def delete(hub: HubClient, path: str) -> tuple[int, dict[str, Any], str | None]:
    """The answer's code, body and `Warning` header (what kubectl prints)."""
    async with hub.session.delete(hub.url + path) as resp:
        return resp.status, await resp.json(), resp.headers.get("Warning")


async def bases_of(hub: HubClient, sub: str) -> list[str]:
    bases = await hub.items(f"{APPS}/bases?labelSelector=apps.clusternet.io/subs.name%3D{sub}")
    return sorted(b["metadata"]["labels"]["clusters.clusternet.io/cluster-name"] for b in bases)


async def test_a_deleted_feed_leaves_its_subscriptions_and_every_child(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, "lc-feeds", "lc-feeds", ("keep", "drop"))))
    assert result.returncode == 0, result.stderr + result.stdout
    await everywhere(system, "lc-feeds", {"keep", "drop"})
    manifest = await eventually(lambda: manifest_of(hub, "drop"), 30, what="the Manifest of drop")
    assert FINALIZER in manifest["metadata"]["finalizers"]  # put there by the deployer when it rendered it
    assert PROTECTION not in manifest["metadata"]["finalizers"]  # the gate is off by default

    status, _, warning = await delete(hub, "/api/v1/namespaces/lc-feeds/configmaps/drop")  # kubectl delete cm drop
    assert status == 200 and warning is None

    async def left_subscription() -> bool:
        sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/lc-feeds")
        return [f["name"] for f in sub["spec"]["feeds"]] == ["lc-feeds", "keep"]

    await eventually(left_subscription, 30, what="drop taken out of the Subscription's feeds")
    await eventually(lambda: _none(manifest_of(hub, "drop")), 30, what="the Manifest of drop gone")
    await everywhere(system, "lc-feeds", {"keep"})


async def test_subscription_deletion_waits_for_a_cut_off_child_across_a_deployer_restart(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    sub_path = f"{APPS}/namespaces/default/subscriptions/lc-wait"
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, "lc-wait", "lc-wait", ("a", "b"))))
    assert result.returncode == 0, result.stderr + result.stdout
    await everywhere(system, "lc-wait", {"a", "b"})
    sub = await eventually(lambda: _completed(hub, sub_path), 60, what="3 releases reported")
    assert sub["metadata"]["finalizers"] == [FINALIZER]

    system.services["far"].stop()  # far-1 is cut off: its objects stay where they are
    status, body, _ = await delete(hub, sub_path)
    assert status == 200 and body["metadata"]["deletionTimestamp"]  # held, as kube-apiserver holds it
    await everywhere(system, "lc-wait", set(), ("sim-1", "sim-2"))
    await eventually(lambda: _equal(bases_of(hub, "lc-wait"), ["far-1"]), 30, what="only far-1's Base left")
    described = cnet(system, "describe", "subscription", "lc-wait", "-n", "default")
    assert "Pending in clusters: " in described.stdout and "/far-1" in described.stdout, described.stdout

    system.restart_service("deployer")  # mid-deletion: it picks up where the last one stopped
    await holds(lambda: hub.get(sub_path), 3, what="the Subscription held while far-1 holds objects")
    assert maps_in(system, "far-1", "lc-wait") == {"a", "b"}

    system.services["far"].start()  # back: it prunes what has no Description any more
    await everywhere(system, "lc-wait", set(), ("far-1",))
    await eventually(lambda: _none(hub.get(sub_path)), 60, what="the Subscription gone once every child is clean")
    assert await bases_of(hub, "lc-wait") == []
    descriptions = await hub.items(f"{APPS}/descriptions?labelSelector=apps.clusternet.io/subs.name%3Dlc-wait")
    assert descriptions == []


async def test_feed_in_use_protection_holds_a_feed_until_no_subscription_uses_it(
    system: System, hub: HubClient, tmp_path: Path
) -> None:
    system.services["deployer"].env["CNET_DEPLOYER_FEATURE_GATES"] = "FeedInUseProtection=true"
    system.restart_service("deployer")
    result = cnet(system, "apply", "-f", str(write_app(tmp_path, "lc-guard", "lc-guard", ("guarded",))))
    assert result.returncode == 0, result.stderr + result.stdout
    await everywhere(system, "lc-guard", {"guarded"})
    manifest = await eventually(lambda: _protected(hub, "guarded"), 30, what="the feed-protection finalizer")

    path = f"{APPS}/namespaces/{RESERVED}/manifests/{manifest['metadata']['name']}"
    status, body, warning = await delete(hub, path)
    assert status == 200 and body["metadata"]["deletionTimestamp"]
    in_use = (
        "block deleting current ConfigMap until all Subscriptions (including default/lc-guard) "
        "that refer this as a feed get deleted"
    )
    assert warning == f'299 - "{in_use}"'  # kubectl prints it as "Warning: ..."
    status, _, warning = await delete(hub, "/api/v1/namespaces/lc-guard/configmaps/guarded")  # again, by the shadow
    assert status == 200 and warning == f'299 - "{in_use}"'

    async def blocked() -> str | None:
        current = await hub.get(path)
        return ((current or {}).get("metadata", {}).get("annotations") or {}).get(PROTECTION)

    assert await eventually(blocked, 30, what="the feed-protection annotation") == in_use
    events = cnet(system, "describe", "manifest", manifest["metadata"]["name"], "-n", RESERVED)
    assert "FeedInUse" in events.stdout, events.stdout
    await holds(lambda: _all_hold(system, "lc-guard", "guarded"), 3, what="the children keep the protected feed")
    sub = await hub.get(f"{APPS}/namespaces/default/subscriptions/lc-guard")
    assert [f["name"] for f in sub["spec"]["feeds"]] == ["lc-guard", "guarded"]

    result = cnet(system, "delete", "subscription", "lc-guard", "-n", "default")
    assert result.returncode == 0, result.stderr
    await eventually(lambda: _none(hub.get(path)), 60, what="the feed gone once no Subscription uses it")
    await everywhere(system, "lc-guard", set())


async def _none(pending: Any) -> bool:
    return await pending is None


async def _equal(pending: Any, expected: Any) -> bool:
    return await pending == expected


async def _completed(hub: HubClient, path: str) -> dict[str, Any] | None:
    """The Subscription once every child has reported (what a deletion waits on is reported)."""
    sub = await hub.get(path)
    return sub if sub and (sub.get("status") or {}).get("completedReleases") == len(CLUSTERS) else None


async def _protected(hub: HubClient, name: str) -> dict[str, Any] | None:
    manifest = await manifest_of(hub, name)
    return manifest if manifest and PROTECTION in (manifest["metadata"].get("finalizers") or []) else None


def _all_hold(system: System, ns: str, name: str) -> bool:
    return all(name in maps_in(system, cluster, ns) for cluster in CLUSTERS)

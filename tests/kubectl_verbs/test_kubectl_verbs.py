"""kubectl's verbs against the hub: get -w, label, apply (client and server side), patch, delete."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import yaml
from clusternet_nats.testing.waiting import eventually

from tests.hub.objects import subscription

from .conftest import Kubectl


def _manifest(namespace: str, name: str = "web", **labels: str) -> str:
    body = subscription(namespace, name)
    body["metadata"]["labels"] = labels or {"app": name}
    return yaml.safe_dump(body)


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


async def _apply(kubectl: Kubectl, manifest: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """`kubectl apply FLAGS -f -`, validated by kubectl against the hub's OpenAPI v3."""
    return await kubectl("apply", *flags, "-f", "-", input=manifest)


async def _get(kubectl: Kubectl, namespace: str, name: str = "web") -> dict[str, Any]:
    result = await kubectl("get", "subs", name, "-n", namespace, "-o", "json", "--show-managed-fields")
    body: dict[str, Any] = json.loads(_ok(result))
    return body


async def test_get_watch_sees_a_change(kubectl: Kubectl, kubectl_args: list[str], unique_ns: str) -> None:
    _ok(await _apply(kubectl, _manifest(unique_ns, "web")))
    watch = ("get", "subs", "-n", unique_ns, "-w", "--output-watch-events")
    proc = await asyncio.create_subprocess_exec(*kubectl_args, *watch, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen: list[list[str]] = []

    async def read_until(*event: str) -> bool:
        """Reads kubectl's lines until one starts with `event` (EVENT NAME ...)."""
        while not any(cells[: len(event)] == list(event) for cells in seen):
            line = await proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                return False
            seen.append(line.decode().split())
        return True

    try:
        assert await asyncio.wait_for(read_until("ADDED", "web"), 30), seen  # the initial list
        assert seen[0] == ["EVENT", "NAME", "SCHEDULED", "REASON", "AGE"], seen  # the hub's Table columns
        _ok(await kubectl("label", "subs", "web", "-n", unique_ns, "tier=front"))
        assert await asyncio.wait_for(read_until("MODIFIED", "web"), 30), seen
        _ok(await _apply(kubectl, _manifest(unique_ns, "api")))
        assert await asyncio.wait_for(read_until("ADDED", "api"), 30), seen
        _ok(await kubectl("delete", "subs", "api", "-n", unique_ns))
        assert await asyncio.wait_for(read_until("DELETED", "api"), 30), seen
    finally:
        proc.kill()
        await proc.wait()


async def test_client_side_apply_creates_then_patches(kubectl: Kubectl, unique_ns: str) -> None:
    assert "created" in _ok(await _apply(kubectl, _manifest(unique_ns, app="one")))
    assert "configured" in _ok(await _apply(kubectl, _manifest(unique_ns, app="two", tier="web")))
    obj = await _get(kubectl, unique_ns)
    assert obj["metadata"]["labels"] == {"app": "two", "tier": "web"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]
    assert "unchanged" in _ok(await _apply(kubectl, _manifest(unique_ns, app="two", tier="web")))
    # Dropping a label from the file removes it (the last-applied annotation says it was ours).
    _ok(await _apply(kubectl, _manifest(unique_ns, app="two")))
    assert (await _get(kubectl, unique_ns))["metadata"]["labels"] == {"app": "two"}


async def test_server_side_apply_and_a_conflict_with_another_manager(kubectl: Kubectl, unique_ns: str) -> None:
    out = _ok(await _apply(kubectl, _manifest(unique_ns, app="one"), "--server-side"))
    assert "serverside-applied" in out
    managers = {e["manager"] for e in (await _get(kubectl, unique_ns))["metadata"]["managedFields"]}
    assert "kubectl" in managers
    theirs = _manifest(unique_ns, app="theirs")
    other = await _apply(kubectl, theirs, "--server-side", "--field-manager=other")
    assert other.returncode != 0
    assert "conflict" in other.stderr.lower() and ".metadata.labels.app" in other.stderr, other.stderr
    _ok(await _apply(kubectl, theirs, "--server-side", "--field-manager=other", "--force-conflicts"))
    assert (await _get(kubectl, unique_ns))["metadata"]["labels"] == {"app": "theirs"}


async def test_patch_merge_and_json(kubectl: Kubectl, unique_ns: str) -> None:
    _ok(await _apply(kubectl, _manifest(unique_ns)))
    merge = json.dumps({"metadata": {"labels": {"tier": "web"}}})
    assert "patched" in _ok(await kubectl("patch", "subs", "web", "-n", unique_ns, "--type=merge", "-p", merge))
    ops = json.dumps([{"op": "replace", "path": "/spec/feeds/0/name", "value": "api"}])
    _ok(await kubectl("patch", "subs", "web", "-n", unique_ns, "--type=json", "-p", ops))
    obj = await _get(kubectl, unique_ns)
    assert obj["metadata"]["labels"]["tier"] == "web"
    assert obj["spec"]["feeds"][0]["name"] == "api"
    strategic = await kubectl("patch", "subs", "web", "-n", unique_ns, "--type=strategic", "-p", merge)
    assert strategic.returncode != 0
    assert "415" in strategic.stderr or "unknown format" in strategic.stderr or "media type" in strategic.stderr


async def test_delete(kubectl: Kubectl, unique_ns: str) -> None:
    _ok(await _apply(kubectl, _manifest(unique_ns)))
    assert "deleted" in _ok(await kubectl("delete", "subs", "web", "-n", unique_ns, "--timeout=30s"))
    missing = await kubectl("get", "subs", "web", "-n", unique_ns)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


async def test_dry_run_server(kubectl: Kubectl, unique_ns: str) -> None:
    _ok(await _apply(kubectl, _manifest(unique_ns), "--dry-run=server"))
    result = await eventually(lambda: kubectl("get", "subs", "-n", unique_ns, "-o", "name"), what="a list")
    assert result.stdout.strip() == ""

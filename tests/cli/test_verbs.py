"""cnet's kubectl verbs and options against an in-process hub: contexts, --server anywhere, templates,
kind/name and resource.group, categories and the shadow kinds, apply from stdin and -R, unchanged,
delete --all/-l/--ignore-not-found, version, token TTLs, get -w, wait and rollout status."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from clusternet_nats.api.apps import SubscriptionStatus
from clusternet_nats.api.clusters import ManagedClusterStatus
from clusternet_nats.api.labels import CLUSTER_NAME
from clusternet_nats.api.meta import Condition, ConditionStatus, utcnow
from clusternet_nats.api.registration import BOOTSTRAP_TOKENS_PATH, BootstrapTokenView
from clusternet_nats.cli.main import app, hoist_global_options
from clusternet_nats.cli.templates import TemplateError, custom_columns, jsonpath
from clusternet_nats.cli.waiting import parse_duration, progress
from clusternet_nats.hub.registration.records import token_store
from clusternet_nats.hub.testing import ServedHub
from clusternet_nats.store import StatusStore, object_key
from clusternet_nats.testing.clusters import report_cluster_status
from clusternet_nats.testing.waiting import eventually
from nats.js import JetStreamContext
from typer.testing import CliRunner, Result

from tests.hub.objects import deployment, subs_path, subscription

from .conftest import Cnet, run_cnet

CNET = Path(sys.executable).with_name("cnet")
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")
CLUSTER_ID = "5f0c7e1a-0b9f-4a53-9a0e-3c1f1d7d2a11"


def printed(result: Result) -> list[str]:
    """What cnet printed, without the in-process hub's log lines that share its stdout."""
    return [line for line in result.output.splitlines() if not LOG_LINE.match(line)]


def yaml_of(*objects: dict[str, object]) -> str:
    return "\n---\n".join(json.dumps(obj) for obj in objects)


async def post(hub: ServedHub, path: str, body: dict[str, object]) -> None:
    async with hub.session() as http, http.post(path, json=body) as resp:
        assert resp.status == 201, await resp.text()


def test_config_verbs(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        json.dumps(
            {
                "clusters": [{"name": "hub", "cluster": {"server": "https://hub:8443"}}],
                "users": [{"name": "admin", "user": {"token": "secret-token"}}],
                "contexts": [{"name": "one", "context": {"cluster": "hub", "user": "admin"}}],
                "current-context": "one",
            }
        )
    )

    def cnet(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["--config", str(config), "config", *args])
        return result.exit_code, result.output

    assert cnet("set-context", "two", "--cluster", "hub") == (0, 'Context "two" created.\n')
    assert cnet("set-context", "two", "--user", "admin") == (0, 'Context "two" modified.\n')
    code, out = cnet("set-context", "three", "--cluster", "nowhere")
    assert code == 1 and 'no cluster exists with the name: "nowhere"' in out
    code, out = cnet("get-contexts")
    assert [line.split() for line in out.splitlines()] == [
        ["CURRENT", "NAME", "SERVER", "AUTHINFO"],
        ["*", "one", "https://hub:8443", "admin"],
        ["two", "https://hub:8443", "admin"],
    ]
    assert cnet("use-context", "two") == (0, 'Switched to context "two".\n')
    assert cnet("current-context") == (0, "two\n")
    code, out = cnet("delete-context", "two")
    assert code == 0 and "removed your active context" in out and f"deleted context two from {config}" in out
    code, out = cnet("view")
    assert "secret-token" not in out and "REDACTED" in out and "name: two" not in out
    assert "secret-token" in cnet("view", "--raw")[1]
    assert cnet("delete-context", "two")[0] == 1


def test_global_options_move_before_the_command() -> None:
    assert hoist_global_options(["get", "subs", "--server", "https://h", "-n", "x", "--token=t"]) == [
        "--server", "https://h", "--token=t", "get", "subs", "-n", "x"
    ]
    assert hoist_global_options(["get", "--insecure-skip-tls-verify", "--", "--server"]) == [
        "--insecure-skip-tls-verify", "get", "--", "--server"
    ]


async def test_server_anywhere_on_the_line(served_hub: ServedHub, unique_ns: str) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns))
    args = ["get", "subs", "-n", unique_ns, *served_hub.cnet_args(), "-o", "name"]
    result = await run_cnet(*hoist_global_options(args))
    assert result.exit_code == 0, result.output
    assert printed(result) == ["subscription.apps.clusternet.io/demo"]
    installed = await asyncio.create_subprocess_exec(
        CNET, "get", "subs", "-n", unique_ns, "--config", str(served_hub.cnet_config()), "-o", "name",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await installed.communicate()
    assert installed.returncode == 0 and out.decode() == "subscription.apps.clusternet.io/demo\n", out


def test_templates_are_kubectls() -> None:
    data = {
        "kind": "List",
        "items": [
            {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "x"}}, "spec": {"n": [1, 2]}},
            {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        ],
    }
    assert jsonpath("{.items[*].metadata.name}", data) == "a b"
    assert jsonpath('{range .items[*]}{.metadata.name}{"\\t"}{.spec.n}{"\\n"}{end}', data) == "a\t[1,2]\nb\t\n"
    assert jsonpath("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", data) == "x"
    assert jsonpath('{.items[?(@.metadata.name=="b")].status.conditions[?(@.type=="Ready")].status}', data) == "True"
    assert jsonpath("names: {.items[1].metadata}", data) == 'names: {"name":"b"}'
    with pytest.raises(TemplateError, match="range"):
        jsonpath("{range .items[*]}{.metadata.name}", data)
    with pytest.raises(TemplateError, match="cannot read"):
        jsonpath("{.items[}", data)
    table = custom_columns("NAME:.metadata.name,READY:.status.conditions[0].status", data["items"])  # type: ignore[arg-type]
    assert table.splitlines() == ["NAME   READY", "a      <none>", "b      True"]
    with pytest.raises(TemplateError, match="HEADER:JSONPATH"):
        custom_columns("NAME", [])


def test_durations_are_gos() -> None:
    assert parse_duration("24h") == 86400 and parse_duration("1h30m") == 5400 and parse_duration("0") == 0
    assert parse_duration("1.5s") == 1.5 and parse_duration("3600") == 3600
    for bad in ("", "5x", "-5m", "h"):
        with pytest.raises(ValueError, match="invalid duration"):
            parse_duration(bad)


async def test_output_templates_and_resource_forms(cnet: Cnet, served_hub: ServedHub, unique_ns: str) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "one"))
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "two"))
    result = await cnet("get", "subs", "-n", unique_ns, "-o", "jsonpath={.items[*].metadata.name}")
    assert result.exit_code == 0 and printed(result) == ["one two"], result.output
    template = 'jsonpath={range .items[*]}{.metadata.name}:{.spec.schedulingStrategy}{"\\n"}{end}'
    result = await cnet("get", "subscriptions.apps.clusternet.io", "-n", unique_ns, "-o", template)
    assert printed(result) == ["one:Replication", "two:Replication", ""], result.output
    result = await cnet("get", "subs/two", "-n", unique_ns, "-o", "jsonpath={.metadata.name}")
    assert printed(result) == ["two"]
    result = await cnet("get", "sub/one", "subs/two", "-n", unique_ns, "-o", "custom-columns=N:.metadata.name,X:.x")
    assert printed(result) == ["N     X", "one   <none>", "two   <none>"]
    result = await cnet("get", "subs", "two", "-n", unique_ns, "-o", "jsonpath={.items[")
    assert result.exit_code == 1 and "error parsing jsonpath" in result.output
    result = await cnet("get", "subs", "-o", "yamlish")
    assert result.exit_code == 1 and "unable to match a printer" in result.output
    result = await cnet("get", "subs", "sub/one")
    assert result.exit_code == 1 and "resource/name form" in result.output
    result = await cnet("get", "nonsense")
    assert result.exit_code == 1 and 'the server doesn\'t have a resource type "nonsense"' in result.output


async def test_categories_and_the_shadow_kinds(cnet: Cnet, served_hub: ServedHub, unique_ns: str) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "app"))
    applied = await cnet("apply", "-f", "-", input=yaml_of(deployment(unique_ns, "web")))
    assert applied.exit_code == 0 and "deployment.apps/web created" in applied.output, applied.output
    listed = await cnet("get", "deploy", "-n", unique_ns)
    assert [line.split()[:1] for line in printed(listed)] == [["NAME"], ["web"]]
    assert printed(listed)[0] == "NAME   AGE"
    named = await cnet("get", "deployments.shadow", "web", "-n", unique_ns, "-o", "name")
    assert printed(named) == ["deployment.shadow/web"]
    one = json.loads((await cnet("get", "deploy/web", "-n", unique_ns, "-o", "json")).output)
    assert one["kind"] == "Deployment" and one["metadata"]["name"] == "web"
    everything = printed(await cnet("get", "all", "-n", unique_ns, "-o", "name"))
    assert everything == ["deployment.shadow/web"]
    ours = printed(await cnet("get", "clusternet", "-n", unique_ns, "-o", "name"))
    assert "subscription.apps.clusternet.io/app" in ours and "deployment.shadow/web" not in ours
    deleted = await cnet("delete", "deploy", "web", "-n", unique_ns)
    assert deleted.exit_code == 0 and 'deployment.shadow "web" deleted' in deleted.output, deleted.output


async def test_apply_stdin_recursive_unchanged(cnet: Cnet, unique_ns: str, tmp_path: Path) -> None:
    top = tmp_path / "app"
    (top / "nested").mkdir(parents=True)
    (top / "a.yaml").write_text(yaml_of(subscription(unique_ns, "top")))
    (top / "nested" / "b.yaml").write_text(yaml_of(subscription(unique_ns, "deep")))
    flat = await cnet("apply", "-f", str(top))
    assert printed(flat) == ["subscription.apps.clusternet.io/top created"], flat.output
    deep = await cnet("apply", "-R", "-f", str(top))
    assert printed(deep) == [
        "subscription.apps.clusternet.io/top unchanged",
        "subscription.apps.clusternet.io/deep created",
    ], deep.output
    changed = subscription(unique_ns, "top", schedulingStrategy="Dividing")
    result = await cnet("apply", "-f", "-", input=yaml_of(changed))
    assert printed(result) == ["subscription.apps.clusternet.io/top configured"], result.output
    result = await cnet("apply", "-f", "-", input=yaml_of(changed))
    assert printed(result) == ["subscription.apps.clusternet.io/top unchanged"], result.output


async def test_delete_all_selector_ignore_not_found(cnet: Cnet, served_hub: ServedHub, unique_ns: str) -> None:
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        body = subscription(unique_ns, name)
        body["metadata"]["labels"] = {"tier": tier}  # type: ignore[index]
        await post(served_hub, subs_path(unique_ns), body)
    result = await cnet("delete", "subs", "-l", "tier=web", "-n", unique_ns)
    assert printed(result) == [
        'subscription.apps.clusternet.io "a" deleted',
        'subscription.apps.clusternet.io "b" deleted',
    ], result.output
    result = await cnet("delete", "subs", "a", "-n", unique_ns)
    assert result.exit_code == 1 and "(NotFound)" in result.output
    result = await cnet("delete", "subs", "a", "-n", unique_ns, "--ignore-not-found")
    assert result.exit_code == 0 and printed(result) == []
    result = await cnet("delete", "subs", "a", "--all", "-n", unique_ns)
    assert result.exit_code == 1 and "--all" in result.output
    result = await cnet("delete", "subs", "--all", "-n", unique_ns)
    assert printed(result) == ['subscription.apps.clusternet.io "c" deleted']
    assert "No resources found" in (await cnet("get", "subs", "-n", unique_ns)).output


async def test_version(cnet: Cnet) -> None:
    result = await cnet("version")
    lines = printed(result)
    assert result.exit_code == 0 and lines[0].startswith("Client Version: v"), result.output
    assert lines[1].startswith("Server Version: v1.") and "+clusternet-nats." in lines[1]
    data = json.loads((await cnet("version", "-o", "json")).output)
    assert data["serverVersion"]["major"] == "1" and data["clientVersion"]["gitVersion"].startswith("v")
    assert set(json.loads((await cnet("version", "--client", "-o", "json")).output)) == {"clientVersion"}


async def test_token_ttl_is_a_duration_defaulting_to_24h(cnet: Cnet, js: JetStreamContext) -> None:
    for args, expected in (([], timedelta(hours=24)), (["--ttl", "1h30m"], timedelta(minutes=90))):
        before = utcnow()
        created = await cnet("token", "create", *args)
        assert created.exit_code == 0, created.output
        stored = await token_store(js).get(created.output.strip().split(".")[0])
        assert stored is not None and stored.value.expires is not None
        assert before + expected - timedelta(seconds=5) <= stored.value.expires <= utcnow() + expected
    never = await cnet("token", "create", "--ttl", "0")
    stored = await token_store(js).get(never.output.strip().split(".")[0])
    assert stored is not None and stored.value.expires is None
    bad = await cnet("token", "create", "--ttl", "soon")
    assert bad.exit_code == 2 and "--ttl" in bad.output


async def test_the_hubs_token_route_defaults_to_kubeadms_24h(served_hub: ServedHub, js: JetStreamContext) -> None:
    before = utcnow()
    async with served_hub.session() as http, http.post(BOOTSTRAP_TOKENS_PATH, json={}) as resp:
        assert resp.status == 201, await resp.text()
        view = BootstrapTokenView.model_validate_json(await resp.read())
    assert view.expires is not None
    assert before + timedelta(hours=24) - timedelta(seconds=5) <= view.expires <= utcnow() + timedelta(hours=24)


async def test_get_watch_prints_changes(served_hub: ServedHub, unique_ns: str) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "first"))
    watcher = await asyncio.create_subprocess_exec(
        CNET, "get", "subs", "-n", unique_ns, "-w", "--config", str(served_hub.cnet_config()),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert watcher.stdout is not None
    try:
        lines = [(await watcher.stdout.readline()).decode() for _ in range(2)]
        assert lines[0].split() == ["NAME", "SCHEDULED", "REASON", "AGE"] and lines[1].split()[0] == "first"
        await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "second"))
        line = await asyncio.wait_for(watcher.stdout.readline(), 30)
        assert line.decode().split()[0] == "second"
    finally:
        watcher.terminate()
        await watcher.wait()


async def test_wait_for_condition_and_delete(
    cnet: Cnet, served_hub: ServedHub, js: JetStreamContext, unique_ns: str
) -> None:
    cluster = {
        "apiVersion": "clusters.clusternet.io/v1beta1",
        "kind": "ManagedCluster",
        "metadata": {"name": "child", "namespace": unique_ns},
        "spec": {"clusterId": CLUSTER_ID, "syncMode": "Pull"},
    }
    assert (await cnet("apply", "-f", "-", input=yaml_of(cluster))).exit_code == 0
    timed_out = await cnet("wait", "mcls/child", "-n", unique_ns, "--for=condition=Ready", "--timeout", "1s")
    assert timed_out.exit_code == 1 and "timed out waiting for the condition on managedclusters/child" in (
        timed_out.output
    )
    waiting = asyncio.create_task(cnet("wait", "mcls", "child", "-n", unique_ns, "--for", "condition=ready=true"))
    ready = Condition(type="Ready", status=ConditionStatus.TRUE, last_transition_time=utcnow(), reason="Ok", message="")
    status = ManagedClusterStatus(k8s_version="v1.30.2", conditions=[ready])
    await report_cluster_status(js, unique_ns, "child", status)
    result = await asyncio.wait_for(waiting, 60)
    assert result.exit_code == 0 and printed(result) == ["managedcluster.clusters.clusternet.io/child condition met"]
    assert (await cnet("apply", "-f", "-", input=yaml_of(subscription(unique_ns, "app")))).exit_code == 0
    gone = asyncio.create_task(cnet("wait", "subs/app", "-n", unique_ns, "--for=delete", "--timeout", "60s"))
    async with served_hub.session() as http, http.delete(subs_path(unique_ns, "app")) as resp:
        assert resp.status == 200  # over HTTP: two CliRunners at once would swap each other's stdout
    result = await asyncio.wait_for(gone, 60)
    assert result.exit_code == 0 and "subscription.apps.clusternet.io/app condition met" in result.output
    bad = await cnet("wait", "mcls/child", "-n", unique_ns, "--for=ready")
    assert bad.exit_code == 1 and "--for=condition=<Type>" in bad.output


def test_rollout_progress_says_what_each_cluster_did() -> None:
    sub = {"metadata": {"name": "web"}, "status": {"desiredReleases": 2, "completedReleases": 1}}
    ok = {
        "metadata": {"name": "web-1", "namespace": "clusternet-a", "labels": {CLUSTER_NAME: "a"}},
        "status": {"phase": "Success"},
    }
    failed = {
        "metadata": {"name": "web-2", "namespace": "clusternet-b"},
        "status": {"phase": "Failure", "reason": "namespaces \"shop\" not found"},
    }
    lines, outcome = progress(sub, [failed, ok])
    assert outcome is False
    assert lines == [
        'subscription "web": 1 of 2 releases done',
        "  cluster a (web-1): Success",
        '  cluster clusternet-b (web-2): Failure: namespaces "shop" not found',
    ]
    unscheduled = {"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": "no cluster fits"}
    sub["status"] = {"desiredReleases": 0, "conditions": [unscheduled]}
    lines, outcome = progress(sub, [])
    assert outcome is None and lines[1] == "  not scheduled (Unschedulable): no cluster fits"
    missing = {"type": "Warning", "reason": "UnParseableFeeds", "message": "Deployment foo/ghost not found"}
    older = {**missing, "message": "before", "lastTimestamp": "2026-01-01T00:00:00Z"}
    sub["status"] = {"desiredReleases": 2}
    lines, outcome = progress(sub, [], [older, {**missing, "lastTimestamp": "2026-01-02T00:00:00Z"}])
    assert outcome is None and lines[1:] == ["  warning UnParseableFeeds: Deployment foo/ghost not found"]
    sub["status"] = {"desiredReleases": 1, "completedReleases": 1}
    lines, outcome = progress(sub, [ok])
    assert outcome is True and lines[-1] == 'subscription "web" successfully rolled out'


async def test_rollout_status_follows_the_descriptions(
    cnet: Cnet, served_hub: ServedHub, js: JetStreamContext, unique_ns: str
) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "web"))
    warning = f"  warning UnParseableFeeds: Deployment {unique_ns}/web not found"  # no such feed

    async def once() -> list[str] | None:
        result = await cnet("rollout", "status", "subs", "web", "-n", unique_ns, "--watch=false")
        assert result.exit_code == 1, result.output
        lines = printed(result)
        return lines if len(lines) > 1 and lines[1].startswith(warning) else None

    lines = await eventually(once, what="the feedinventory controller's Warning in rollout status")
    assert lines[0] == 'subscription "web": 0 of 0 releases done'
    following = asyncio.create_task(cnet("rollout", "status", "subs/web", "-n", unique_ns, "--timeout", "60s"))
    status = SubscriptionStatus(desired_releases=1, completed_releases=1)
    await StatusStore(js, "subscriptions-status", SubscriptionStatus).put(object_key(unique_ns, "web"), status, 0)
    result = await asyncio.wait_for(following, 60)
    assert result.exit_code == 0, result.output
    assert printed(result)[-1] == 'subscription "web" successfully rolled out'
    wrong = await cnet("rollout", "status", "mcls", "web")
    assert wrong.exit_code == 1 and "takes one Subscription" in wrong.output


def test_shell_completion_offers_commands_and_kinds() -> None:
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_CNET_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - 1)
        return subprocess.run([CNET], env=env, capture_output=True, text=True, check=True, timeout=60).stdout.split()

    assert complete("cnet ro") == ["rollout"]
    assert complete("cnet get su") == ["sub", "subs", "subscription", "subscriptions"]
    assert "clusternet" in complete("cnet get c")
    script = subprocess.run([CNET, "--show-completion", "bash"], capture_output=True, text=True, check=True)
    assert "_cnet_completion" in script.stdout


async def test_describe_takes_kind_slash_name(cnet: Cnet, served_hub: ServedHub, unique_ns: str) -> None:
    await post(served_hub, subs_path(unique_ns), subscription(unique_ns, "shown"))
    result = await cnet("describe", "subs/shown", "-n", unique_ns)
    assert result.exit_code == 0 and ["Name:", "shown"] in [line.split() for line in printed(result)], result.output
    result = await cnet("describe", "subs", "-n", unique_ns)
    assert result.exit_code == 1 and "KIND NAME or KIND/NAME" in result.output

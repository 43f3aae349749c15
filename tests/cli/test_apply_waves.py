"""`cnet apply` of one file: objects read back at once, written in waves (Namespaces and CRDs
first, what names other objects last), each wave's writes together, one session for all; and
`cnet` starts without the modules only other commands use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clusternet_nats.api import load_documents
from clusternet_nats.cli.apply import PARALLEL, Target
from clusternet_nats.hub.testing import ServedHub

from tests.hub.objects import deployment, subscription

from .conftest import Cnet
from .test_verbs import printed, yaml_of


def namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def config_map(ns: str, name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"k": name}}


def targets(*objects: dict[str, object]) -> list[Target]:
    return [Target.of(obj) for obj in load_documents(yaml_of(*objects), "test")]


def test_waves_and_where_each_object_is_read_back() -> None:
    subs, deploy, ns, crd = targets(
        subscription("team"),
        deployment("team"),
        namespace("team"),
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
        },
    )
    assert [t.wave for t in (ns, crd, deploy, subs)] == [0, 0, 1, 2]
    assert subs.read_path == "/apis/apps.clusternet.io/v1alpha1/namespaces/team/subscriptions/demo"
    assert deploy.read_path == "/apis/shadow/v1alpha1/namespaces/team/deployments/web"
    assert ns.read_path == "/apis/shadow/v1alpha1/namespaces/team"
    assert crd.read_path == "/apis/shadow/v1alpha1/customresourcedefinitions/widgets.example.com"


async def test_namespace_first_subscription_last_whatever_the_files_order(
    cnet: Cnet, served_hub: ServedHub, unique_ns: str, tmp_path: Path
) -> None:
    names = [f"cm-{i:02d}" for i in range(PARALLEL + 4)]  # more than are in flight at once
    many = [config_map(unique_ns, name) for name in names]
    file = tmp_path / "app.yaml"
    file.write_text(yaml_of(subscription(unique_ns), deployment(unique_ns), *many, namespace(unique_ns)))

    created = await cnet("apply", "-f", str(file))
    assert created.exit_code == 0, created.output
    manifest = f"clusternet-reserved/deployments.{unique_ns}.web"
    assert printed(created) == [
        f"namespace/{unique_ns} created (manifest clusternet-reserved/namespaces.{unique_ns})",
        f"deployment.apps/web created (manifest {manifest})",
        *(f"configmap/{name} created (manifest clusternet-reserved/configmaps.{unique_ns}.{name})" for name in names),
        "subscription.apps.clusternet.io/demo created",
    ], created.output

    async with served_hub.session() as http:
        versions = {}
        for name in (f"namespaces.{unique_ns}", f"deployments.{unique_ns}.web"):
            path = f"/apis/apps.clusternet.io/v1alpha1/namespaces/clusternet-reserved/manifests/{name}"
            async with http.get(path) as resp:
                assert resp.status == 200, await resp.text()
                versions[name.partition(".")[0]] = int((await resp.json())["metadata"]["resourceVersion"])
    assert versions["namespaces"] < versions["deployments"], "the Namespace was written before what lives in it"

    again = await cnet("apply", "-f", str(file))
    assert again.exit_code == 0, again.output
    lines = printed(again)
    assert len(lines) == len(many) + 3 and all(line.split()[1] == "unchanged" for line in lines), again.output


async def test_a_refused_object_is_reported_and_the_others_applied(cnet: Cnet, unique_ns: str, tmp_path: Path) -> None:
    bad = deployment(unique_ns, "bad")
    bad["spec"]["replicas"] = -4  # loads (a Manifest holds any object); the hub refuses it as kube-apiserver would
    file = tmp_path / "app.yaml"
    file.write_text(yaml_of(bad, deployment(unique_ns), subscription(unique_ns, "good")))
    result = await cnet("apply", "-f", str(file))
    assert result.exit_code == 1, result.output
    lines = printed(result)
    assert lines[0].startswith('Error from server (Invalid): Deployment.apps "bad" is invalid: spec.replicas'), lines
    assert f"deployment.apps/web created (manifest clusternet-reserved/deployments.{unique_ns}.web)" in lines
    assert lines[-1] == "subscription.apps.clusternet.io/good created", lines


def test_cnet_starts_without_what_only_other_commands_use() -> None:
    """Loading cnet loads neither the store package (nats, structlog), nor get's templates, nor the
    tracing SDK, nor rich (errors only): each is loaded by the command that uses it, when it runs."""
    unwanted = ["clusternet_nats.store", "nats", "structlog", "jsonpath_ng", "opentelemetry.sdk", "rich"]
    loads = f"[m for m in {unwanted!r} if m in sys.modules]"
    script = f"import json, sys, clusternet_nats.cli.main; print(json.dumps({loads}))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(loaded.stdout) == [], loaded.stdout

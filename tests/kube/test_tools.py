"""hack/tools.sh: cached binaries are the pinned releases, and a failure names what failed."""

from __future__ import annotations

from clusternet_nats.testing.tools import TOOLS_SCRIPT, Tools, run_tool


async def test_cached_binaries_report_the_pinned_versions(kube_tools: Tools) -> None:
    versions = {
        kube_tools.kube_apiserver: ("--version",),
        kube_tools.kubectl: ("version", "--client"),
        kube_tools.etcd: ("--version",),
        kube_tools.helm: ("version", "--short"),
        kube_tools.nats: ("--version",),
    }
    outputs = [await run_tool(binary, *args) for binary, args in versions.items()]
    assert [out.returncode for out in outputs] == [0] * len(outputs), [out.stderr for out in outputs]
    text = "\n".join(out.stdout for out in outputs)
    for pinned in ("Kubernetes v1.34.4", "Client Version: v1.34.4", "etcd Version: 3.6.16", "v3.19.0", "v0.5.0"):
        assert pinned in text


async def test_second_run_reuses_the_cache_and_prints_paths(kube_tools: Tools) -> None:
    result = await run_tool("bash", TOOLS_SCRIPT, "nats", "etcd")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"nats={kube_tools.nats}", f"etcd={kube_tools.etcd}"]
    assert "building" not in result.stderr


async def test_an_unknown_tool_fails_naming_it() -> None:
    result = await run_tool("bash", TOOLS_SCRIPT, "kube-scheduler")
    assert result.returncode != 0
    assert "cannot build kube-scheduler: unknown tool" in result.stderr

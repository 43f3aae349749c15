"""HelmReleases installed into the child with the real `helm` binary, as Clusternet's agent does.

Each release is looked up first (`helm list`, `helm get values`): absent, it is installed
(`--atomic` when the release asks for it; an atomic release left undeployed is uninstalled and
installed afresh, as Clusternet's agent does); present with other values, another chart version, or not deployed, it is
upgraded (`--atomic` when `upgradeAtomic`: Helm rolls a failed upgrade back itself); otherwise
left alone, so re-deploying an unchanged Description adds no revision. Releases carry the owner
label (`--labels`, kept on Helm's release Secrets), which `helm list --selector` finds them by
when pruning. helm talks to the child's API server with the agent's kubeconfig.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import structlog
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.kube.ownership import Kind, owner_hash
from clusternet_nats.api.apps import HelmOptions, HelmRelease, HelmReleaseStatus
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.domain.helmreleases import DEPLOYED, values_of
from clusternet_nats.helm.render import ChartRef, HelmError, run_helm

RELEASE_KIND: Kind = ("helm.sh/v3", "Release")
"""How the owner records and ApplyOutcome name a Helm release (it is no API kind)."""
MAX_HISTORY = 5
"""Revisions Helm keeps per release on upgrade (`--history-max`; Clusternet's agent keeps 5)."""

log = structlog.get_logger(__name__)


def release_ref(release: HelmRelease) -> ObjectRef:
    api_version, kind = RELEASE_KIND
    return ObjectRef(api_version, kind, release.spec.target_namespace, release_name(release))


def release_name(release: HelmRelease) -> str:
    return release.spec.release_name or release.name


def chart_args(spec: HelmOptions) -> list[str]:
    """The chart reference and version as helm's pull, install and upgrade take them."""
    return ChartRef(spec.repo, spec.chart, spec.version, bool(spec.plain_http)).pull_args()


def action_flags(spec: HelmOptions, *, install: bool) -> list[str]:
    chosen = {
        "--wait": spec.wait,
        "--wait-for-jobs": spec.wait_for_job,
        "--no-hooks": spec.disable_hooks,
        "--skip-crds": spec.skip_crds,
        "--atomic": spec.atomic if install else spec.upgrade_atomic,
        "--create-namespace": spec.create_namespace and install,
        "--replace": spec.replace and install,
        "--force": spec.force and not install,
    }
    return [flag for flag, on in chosen.items() if on] + [f"--timeout={spec.timeout_seconds}s"]


def status_of(release: dict[str, Any]) -> HelmReleaseStatus:
    """A HelmRelease's status from helm's JSON of the release."""
    info = release.get("info") or {}
    return HelmReleaseStatus(
        first_deployed=info.get("first_deployed"),
        last_deployed=info.get("last_deployed"),
        description=info.get("description"),
        phase=info.get("status"),
        version=release.get("version"),
        notes=info.get("notes"),
    )


def _up_to_date(listed: dict[str, Any], values: dict[str, Any], release: HelmRelease) -> bool:
    wanted = release.spec.version
    chart = str(listed.get("chart", ""))
    return (
        listed.get("status") == DEPLOYED
        and chart.startswith(f"{release.spec.chart}-")
        and (not wanted or chart == f"{release.spec.chart}-{wanted}")
        and values == values_of(release)
    )


class Helm:
    def __init__(self, binary: str | Path, kubeconfig: Path | None) -> None:
        self.binary = str(binary)
        self.kubeconfig = kubeconfig

    async def _run(self, *args: str, input: str | None = None) -> str:
        kubeconfig = ("--kubeconfig", str(self.kubeconfig)) if self.kubeconfig is not None else ()
        return await run_helm(self.binary, *args, *kubeconfig, input=input)

    async def status(self, name: str, namespace: str) -> dict[str, Any] | None:
        """helm's JSON of the release; None when there is no such release."""
        try:
            out = await self._run("status", name, "--namespace", namespace, "--output", "json")
        except HelmError as err:
            if "release: not found" in str(err):
                return None
            raise
        found: dict[str, Any] = json.loads(out)
        return found

    async def _listed(self, name: str, namespace: str) -> dict[str, Any] | None:
        """The release as `helm list` shows it (status, `chart` as name-version); None if absent."""
        out = await self._run("list", "--namespace", namespace, "--all", f"--filter=^{re.escape(name)}$", "-o=json")
        found: list[dict[str, Any]] = json.loads(out or "[]")
        return found[0] if found else None

    async def _values(self, name: str, namespace: str) -> dict[str, Any]:
        """The values the release was last given (`helm get values`)."""
        values = json.loads(await self._run("get", "values", name, "--namespace", namespace, "-o=json") or "null")
        return values if isinstance(values, dict) else {}

    async def ensure(self, release: HelmRelease, owner: str) -> HelmReleaseStatus:
        """Installs or upgrades `release` unless it is already as asked; raises HelmError."""
        spec, name, namespace = release.spec, release_name(release), release.spec.target_namespace
        listed = await self._listed(name, namespace)
        if listed is not None and _up_to_date(listed, await self._values(name, namespace), release):
            current = await self.status(name, namespace)
            if current is not None:
                return status_of(current)
        if listed is not None and spec.atomic and listed.get("status") != DEPLOYED:
            # Clusternet's agent: an atomic release that is not deployed is installed afresh.
            api_version, kind = RELEASE_KIND
            await self.uninstall(ObjectRef(api_version, kind, namespace, name))
            listed = None
        install = listed is None
        verb = ["install"] if install else ["upgrade", f"--history-max={MAX_HISTORY}"]
        out = await self._run(
            *verb,
            name,
            *chart_args(spec),
            "--namespace",
            namespace,
            *action_flags(spec, install=install),
            f"--labels={APPLIED_BY_DESCRIPTION}={owner_hash(owner)}",
            "--values=-",
            "--output=json",
            input=json.dumps(values_of(release)),
        )
        result = status_of(json.loads(out))
        log.info("helm.released", release=f"{namespace}/{name}", verb=verb[0], revision=result.version)
        return result

    async def owned(self, owner: str) -> list[ObjectRef]:
        """Every release carrying `owner`'s label, in any namespace and state."""
        out = await self._run(
            "list", "--all-namespaces", "--all", f"--selector={APPLIED_BY_DESCRIPTION}={owner_hash(owner)}", "-o=json"
        )
        api_version, kind = RELEASE_KIND
        return [ObjectRef(api_version, kind, r["namespace"], r["name"]) for r in json.loads(out or "[]")]

    async def uninstall(self, ref: ObjectRef) -> None:
        await self._run("uninstall", ref.name, "--namespace", ref.namespace)
        log.info("helm.uninstalled", release=f"{ref.namespace}/{ref.name}")

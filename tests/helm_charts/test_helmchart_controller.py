"""The hub's HelmChart check on a real nats-server (a private one: it checks every HelmChart it
sees) against repositories the test serves: Found, NotFound with Helm's reason when the version
is missing, re-checked when the spec changes, retried with backoff while the repository is down
until it is back, basic auth through a chartPullSecret Secret stored as the hub stores users'
objects (a Manifest), an OCI registry, and the status removed with the chart."""

from __future__ import annotations

import base64
from pathlib import Path

from clusternet_nats.api.apps import ChartPullSecret, HelmChart, HelmChartPhase, HelmChartStatus, HelmOptions, Manifest
from clusternet_nats.api.loader import parse_object
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.hub.helmcharts import HelmChartController
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import ObjectStore, StatusStore, ensure_buckets
from clusternet_nats.testing.charts import GREETER, ChartRepo, OciRegistry
from clusternet_nats.testing.inprocess import running_service
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.tools import Tools
from clusternet_nats.testing.waiting import eventually
from nats.aio.client import Client as NATS

NS = "charts"


async def build(ctx: ServiceContext) -> None:
    HelmChartController(ctx, resync=30.0, timeout=5.0)


def chart(name: str, repo: str, version: str | None, **options: object) -> HelmChart:
    spec = HelmOptions.model_validate({"repo": repo, "chart": GREETER, "version": version, "targetNamespace": "t"})
    return HelmChart.new(name, NS, spec=spec.model_copy(update=options))


async def test_helmchart_status_follows_the_repository(
    private_nats: NatsServer, chart_repo: ChartRepo, oci_registry: OciRegistry, kube_tools: Tools, tmp_path: Path
) -> None:
    nc = NATS()
    await nc.connect(private_nats.url)
    js = nc.jetstream()
    await ensure_buckets(js)
    charts: ObjectStore[HelmChart] = ObjectStore(js, KindInfo.of(HelmChart))
    manifests: ObjectStore[Manifest] = ObjectStore(js, KindInfo.of(Manifest))
    statuses = StatusStore(js, KindInfo.of(HelmChart).status_bucket or "", HelmChartStatus)

    # a repository that starts down, and one behind basic auth
    late = ChartRepo(kube_tools.helm, tmp_path / "late")
    late.add_chart(GREETER, "0.1.0")
    private = ChartRepo(kube_tools.helm, tmp_path / "private", auth=("reader", "s3cret")).start()
    private.add_chart(GREETER, "0.1.0")

    async def status_of(name: str, phase: HelmChartPhase) -> HelmChartStatus | None:
        found = await statuses.get(f"{NS}.{name}")
        return found.value if found is not None and found.value.phase is phase else None

    async def settled(name: str, phase: HelmChartPhase, timeout: float = 10) -> HelmChartStatus:
        status = await eventually(lambda: status_of(name, phase), timeout, what=f"{name}: {phase}")
        assert status is not None
        return status

    try:
        async with running_service("hub-helmcharts", build, private_nats.url):
            web = await charts.create(chart("web", chart_repo.url, "0.1.0"))
            await charts.create(chart("oci", oci_registry.url, "0.2.0", plain_http=True))
            await charts.create(chart("oci-missing", oci_registry.url, "9.9.9", plain_http=True))
            await charts.create(chart("down", late.url, "0.1.0"))
            secret_ref = ChartPullSecret(name="repo-creds")
            await charts.create(chart("private", private.url, "0.1.0", chart_pull_secret=secret_ref))

            assert (await settled("web", HelmChartPhase.FOUND)).reason is None
            await settled("oci", HelmChartPhase.FOUND, 10)
            oci_missing = await settled("oci-missing", HelmChartPhase.NOT_FOUND)
            assert oci_missing.reason == f"not found a version matched 9.9.9 for chart {oci_registry.url}/{GREETER}"
            down = await settled("down", HelmChartPhase.NOT_FOUND)
            assert "is not a valid chart repository or cannot be reached" in (down.reason or "")
            no_secret = await settled("private", HelmChartPhase.NOT_FOUND)
            assert no_secret.reason == (
                f'chartPullSecret {NS}/repo-creds of HelmChart {NS}/private: secrets "repo-creds" not found'
            )

            # the spec changes to a version the repository lacks: re-checked at once
            changed = web.model_copy(deep=True)
            changed.spec.version = "9.9.9"
            await charts.update(changed, web)
            missing = await settled("web", HelmChartPhase.NOT_FOUND)
            assert missing.reason == f'chart "{GREETER}" version "9.9.9" not found in {chart_repo.url} repository'

            # the Secret arrives (applied to the hub, stored as a Manifest): the chart is found
            creds = {"username": "reader", "password": "s3cret"}
            encoded = {k: base64.b64encode(v.encode()).decode() for k, v in creds.items()}
            meta = {"name": "repo-creds", "namespace": NS}
            secret = parse_object({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": encoded})
            assert isinstance(secret, Manifest)
            await manifests.create(secret)
            await settled("private", HelmChartPhase.FOUND, 10)

            # the repository comes up: the backoff's next retry finds the chart
            late.start()
            await settled("down", HelmChartPhase.FOUND, 20)

            # a deleted chart's status goes with it
            await charts.delete(NS, "down")

            async def status_gone() -> bool:
                return await statuses.get(f"{NS}.down") is None

            await eventually(status_gone, 10, what="the deleted chart's status removed")
    finally:
        late.stop()
        private.stop()
        await nc.close()

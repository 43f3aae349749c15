"""Clusternet's HelmChart check (deployer.handleHelmChart), level-triggered.

Every HelmChart's status says whether its chart is where the spec says: `Found`, or `NotFound`
with Helm's reason (classic repositories: the index has the chart and a version matching the
constraint; OCI registries: the tag exists, as Clusternet's FindOCIChart compares). Checked when
the chart's spec or its pull Secret changes, re-checked every `resync` seconds when found and
with exponential backoff (1 s doubling to `resync`) when not, so a repository that comes back
is noticed without hammering one that is down. A deleted chart's status record goes with it.

chartPullSecret: our hub has no Secrets kind of its own, so the Secret is read where the hub
keeps users' Kubernetes objects: a `v1/Secret` applied to the hub (kubectl, `cnet apply`) is
stored through the shadow API as a Manifest, and its `data.username`/`data.password` (base64,
or `stringData`) are the credentials, as Clusternet's GetHelmRepoCredentials reads them. The
Secret's namespace defaults to the HelmChart's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

import structlog
from clusternet_nats.api.apps import HelmChart, HelmChartPhase, HelmChartStatus, HelmOptions, Manifest
from clusternet_nats.api.registry import KindInfo
from clusternet_nats.domain.feeds import Selector, manifest_selectors
from clusternet_nats.helm.repo import ChartSource, Credentials
from clusternet_nats.runtime.service import ServiceContext
from clusternet_nats.store import StatusStore
from clusternet_nats.store.index import Index

RESYNC_SECONDS = 300.0
FIRST_RETRY_SECONDS = 1.0

log = structlog.get_logger(__name__)


class SecretError(LookupError):
    """The pull Secret is missing or holds no usable credentials."""


def secret_selector(chart: HelmChart) -> Selector | None:
    ref = chart.spec.chart_pull_secret
    if ref is None or not ref.name:
        return None
    return Selector("v1", "Secret", ref.namespace or chart.namespace, ref.name)


def _secret_selectors(chart: HelmChart) -> set[Selector]:
    selector = secret_selector(chart)
    return {selector} if selector else set()


def credentials_of(secret: dict[str, Any], where: str) -> Credentials:
    """username and password from a Secret's data (base64) or stringData."""
    found: dict[str, str] = {}
    string_data, data = secret.get("stringData"), secret.get("data")
    for key in ("username", "password"):
        plain = string_data.get(key) if isinstance(string_data, dict) else None
        encoded = data.get(key) if isinstance(data, dict) else None
        if encoded is None and plain is None:
            raise SecretError(f"{where}: no {key} in its data")
        try:
            value = plain if isinstance(plain, str) else base64.b64decode(str(encoded), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise SecretError(f"{where}: data.{key} is not base64 text") from None
        found[key] = value
    return Credentials(found["username"], found["password"])


class HelmChartController:
    def __init__(self, ctx: ServiceContext, resync: float = RESYNC_SECONDS, timeout: float = 15.0) -> None:
        self.resync = resync
        self.charts = ctx.objects(HelmChart)
        self.manifests = ctx.objects(Manifest)
        self.statuses = StatusStore(ctx.js, KindInfo.of(HelmChart).status_bucket or "", HelmChartStatus)
        self.source = ChartSource(timeout)
        self._secrets: Index[Manifest, Selector] = Index(manifest_selectors)
        self._charts_by_secret: Index[HelmChart, Selector] = Index(_secret_selectors)
        self._checked: dict[str, HelmOptions] = {}
        self._delays: dict[str, float] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.queue = ctx.queue("helm-charts", self.reconcile)
        self.charts.add_handler(self._chart_changed)
        self.manifests.add_handler(self._manifest_changed)
        ctx.run_forever(self._close_on_cancel)

    def _chart_changed(self, key: str, chart: HelmChart | None) -> None:
        self._charts_by_secret.update(key, chart)
        if chart is None or self._checked.get(key) != chart.spec:
            self._delays.pop(key, None)
            self.queue.add(key)

    def _manifest_changed(self, key: str, manifest: Manifest | None) -> None:
        for selector in self._secrets.update(key, manifest):
            for chart_key in self._charts_by_secret.keys_for(selector):
                self._delays.pop(chart_key, None)
                self.queue.add(chart_key)

    async def _close_on_cancel(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            for timer in self._timers.values():
                timer.cancel()
            await self.source.close()

    def _credentials(self, chart: HelmChart) -> Credentials | None:
        selector = secret_selector(chart)
        if selector is None:
            return None
        where = f"chartPullSecret {selector.namespace}/{selector.name} of HelmChart {chart.namespaced_name()}"
        keys = self._secrets.keys_for(selector)
        manifest = self.manifests.get(keys[0]) if keys else None
        if manifest is None:
            raise SecretError(f'{where}: secrets "{selector.name}" not found')
        return credentials_of(manifest.template, where)

    async def check(self, chart: HelmChart) -> HelmChartStatus:
        spec = chart.spec
        try:
            auth = self._credentials(chart)
        except SecretError as err:
            return HelmChartStatus(phase=HelmChartPhase.NOT_FOUND, reason=str(err))
        found = await self.source.find(spec.repo, spec.chart, spec.version, plain_http=bool(spec.plain_http), auth=auth)
        if found.found:
            return HelmChartStatus(phase=HelmChartPhase.FOUND)
        return HelmChartStatus(phase=HelmChartPhase.NOT_FOUND, reason=found.reason)

    async def reconcile(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        chart = self.charts.get(key)
        if chart is None or chart.metadata.deletion_timestamp is not None:
            for table in (self._checked, self._delays):
                table.pop(key, None)
            if chart is None:  # a chart created again under this name must not show the old status
                await self.statuses.delete(key)
            return
        status = await self.check(chart)
        self._checked[key] = chart.spec
        if await self.statuses.put_if_changed(key, status):
            log.info("helmchart.checked", chart=key, phase=status.phase, reason=status.reason)
        if status.phase is HelmChartPhase.FOUND:
            self._delays.pop(key, None)
            delay = self.resync
        else:
            delay = self._delays[key] = min(self._delays.get(key, FIRST_RETRY_SECONDS / 2) * 2, self.resync)
        self._timers[key] = asyncio.get_running_loop().call_later(delay, self.queue.add, key)

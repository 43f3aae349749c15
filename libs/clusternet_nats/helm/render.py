"""`helm template` as a service: a chart's objects for given values, fetched and rendered once.

Archives are pulled once per (repository, chart, version) and keyed by their sha256; rendered
output is cached by (archive digest, values hash, release name, namespace), so a thousand
simulated clusters given the same values cost one `helm pull` and one `helm template`.
Concurrent asks for the same key share one subprocess; subprocesses are bounded in number and
never block the event loop.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog
import yaml
from clusternet_nats.helm.repo import OCI_SCHEME, Credentials
from clusternet_nats.helm.semver import Version, VersionError

log = structlog.get_logger(__name__)

Rendered = list[dict[str, Any]]
CACHE_ENTRIES = 1024
UNPINNED_TTL = 300.0
"""Seconds an archive pulled for `latest` or a version constraint is reused."""
"""Renders (and archives) kept; the oldest go first."""
K = TypeVar("K")
V = TypeVar("V")


class HelmError(RuntimeError):
    """helm failed; the message is its stderr."""


async def run_helm(
    binary: str | Path, *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> str:
    """Runs helm to completion without blocking the loop; its stdout, or HelmError with its stderr."""
    try:
        proc = await asyncio.create_subprocess_exec(
            str(binary),
            *args,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as err:
        raise HelmError(f"cannot run {binary}: {err}") from None
    out, errors = await proc.communicate(input.encode() if input is not None else None)
    if proc.returncode != 0:
        raise HelmError(errors.decode().strip() or f"helm {args[0]} exited {proc.returncode}")
    return out.decode()


def find_helm(given: str | Path | None = None) -> Path | None:
    """The helm binary: the one given (`--helm-binary`), else `helm` on PATH."""
    if given is not None:
        return Path(given)
    found = shutil.which("helm")
    return Path(found) if found else None


@dataclass(frozen=True)
class ChartRef:
    repo: str
    chart: str
    version: str | None
    plain_http: bool = False

    def pinned(self) -> bool:
        """Names one version (x.y.z: not empty, not a constraint such as `1.2` or `^1`)."""
        core = (self.version or "").lstrip("v").split("-")[0].split("+")[0]
        try:
            Version.parse(self.version or "")
        except VersionError:
            return False
        return core.count(".") == 2

    def pull_args(self) -> list[str]:
        if self.repo.startswith(OCI_SCHEME):
            args = [f"{self.repo.rstrip('/')}/{self.chart}"] + (["--plain-http"] if self.plain_http else [])
        else:
            args = ["--repo", self.repo, self.chart]
        return args + (["--version", self.version] if self.version else [])


def values_hash(values: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class Renderer:
    def __init__(self, binary: str | Path, work_dir: Path | None = None, concurrency: int = 2) -> None:
        self.binary = str(binary)
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="cnet-helm-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.unpinned_ttl = UNPINNED_TTL
        self._pulled_at: dict[ChartRef, float] = {}
        self._slots = asyncio.Semaphore(concurrency)
        self._archives: dict[ChartRef, asyncio.Task[tuple[Path, str]]] = {}
        self._rendered: dict[tuple[str, str, str, str], asyncio.Task[Rendered]] = {}
        self.pulls = 0
        """Archives fetched (`helm pull` runs), for tests and benches."""
        self.renders = 0
        """`helm template` runs."""
        self._env = dict(os.environ)
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"), ("HELM_DATA_HOME", "data")):
            self._env[var] = str(self.work_dir / sub)

    async def _helm(self, *args: str, input: str | None = None) -> str:
        async with self._slots:
            return await run_helm(self.binary, *args, input=input, env=self._env)

    async def archive(self, ref: ChartRef, auth: Credentials | None = None) -> tuple[Path, str]:
        """The chart's .tgz and its sha256, pulled once per reference; a reference that is not
        pinned to one version (empty, or a constraint) is pulled again after `unpinned_ttl`
        seconds, so a newer chart in the repository is picked up."""
        now = asyncio.get_running_loop().time()
        if not ref.pinned() and now - self._pulled_at.get(ref, now) > self.unpinned_ttl:
            self._archives.pop(ref, None)
        if ref not in self._archives:
            self._pulled_at[ref] = now
        return await _shared(self._archives, ref, lambda: self._pull(ref, auth))

    async def _pull(self, ref: ChartRef, auth: Credentials | None) -> tuple[Path, str]:
        dest = Path(tempfile.mkdtemp(prefix="pull-", dir=self.work_dir))
        creds = ["--username", auth.username, "--password", auth.password] if auth else []
        # Clusternet skips TLS verification for chart sources; with --plain-http helm would then try TLS
        insecure = [] if ref.plain_http else ["--insecure-skip-tls-verify"]
        await self._helm("pull", *ref.pull_args(), *creds, *insecure, "--destination", str(dest))
        self.pulls += 1
        archive, digest = await asyncio.to_thread(_digest_of_pulled, dest)
        log.info("helm.pulled", repo=ref.repo, chart=ref.chart, version=ref.version, digest=digest)
        return archive, digest

    async def render(
        self, ref: ChartRef, release: str, namespace: str, values: dict[str, Any], auth: Credentials | None = None
    ) -> Rendered:
        """The objects `helm template` makes of the chart with these values (a fresh copy)."""
        archive, digest = await self.archive(ref, auth)
        key = (digest, values_hash(values), release, namespace)
        objects = await _shared(self._rendered, key, lambda: self._template(archive, release, namespace, values))
        return copy.deepcopy(objects)

    async def _template(self, archive: Path, release: str, namespace: str, values: dict[str, Any]) -> Rendered:
        out = await self._helm(
            "template", release, str(archive), "--namespace", namespace, "--values", "-", input=json.dumps(values)
        )
        self.renders += 1
        docs = await asyncio.to_thread(lambda: list(yaml.safe_load_all(out)))
        return [doc for doc in docs if isinstance(doc, dict) and doc.get("kind")]


def _digest_of_pulled(dest: Path) -> tuple[Path, str]:
    [archive] = list(dest.glob("*.tgz"))
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


async def _shared(
    tasks: dict[K, asyncio.Task[V]], key: K, make: Callable[[], Awaitable[V]], limit: int = CACHE_ENTRIES
) -> V:
    """One task per key, awaited by every caller; a failed one is forgotten so the next ask retries.
    Past `limit` keys the oldest finished one goes (a long-running agent sees many values)."""
    task = tasks.get(key)
    if task is None:
        task = tasks[key] = asyncio.ensure_future(make())
        if len(tasks) > limit:
            oldest = next((k for k, t in tasks.items() if t.done()), None)
            if oldest is not None:
                del tasks[oldest]
    try:
        return await asyncio.shield(task)
    except BaseException:
        if task.done() and tasks.get(key) is task and (task.cancelled() or task.exception() is not None):
            del tasks[key]
        raise

"""Is a chart where a HelmChart says? Classic repositories by their index.yaml, OCI registries
by the registry API's tag list, as Clusternet's deployer checks before it reports Found.

All I/O is aiohttp with a timeout; YAML parsing of a large index runs in a thread. Reasons read
as Helm's and Clusternet's own messages, so a user who knows Helm recognises them.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import aiohttp
import yaml
from clusternet_nats.helm.semver import VersionError, best_match

OCI_SCHEME = "oci://"
MAX_TAG_PAGES = 50
DEFAULT_TIMEOUT = 15.0
"""Seconds per request (Clusternet's ociRegistryRequestTimeout)."""


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str


@dataclass(frozen=True)
class ChartLookup:
    found: bool
    reason: str = ""
    version: str | None = None
    """The version found (a constraint resolved)."""
    url: str | None = None
    """Where the chart's archive is (classic repositories)."""
    digest: str | None = None
    """The archive's sha256 as the index gives it (classic repositories)."""


class ChartSource:
    """One aiohttp session for every lookup. TLS is verified against the system's CAs (or
    `ca_file`): Clusternet skips verification for chart repositories, but a hub that trusts any
    certificate would report a spoofed repository's chart as Found; `plainHTTP` stays the way to
    reach a repository without TLS."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, ca_file: str | None = None) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.ca_file = ca_file
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            verified = ssl.create_default_context(cafile=self.ca_file)
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, connector=aiohttp.TCPConnector(ssl=verified, limit=16)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def find(
        self, repo: str, chart: str, version: str | None, *, plain_http: bool = False, auth: Credentials | None = None
    ) -> ChartLookup:
        if repo.startswith(OCI_SCHEME):
            return await self.find_oci(repo, chart, version, plain_http=plain_http, auth=auth)
        return await self.find_in_index(repo, chart, version, auth=auth)

    async def find_in_index(
        self, repo: str, chart: str, version: str | None, *, auth: Credentials | None = None
    ) -> ChartLookup:
        index_url = repo.rstrip("/") + "/index.yaml"
        unreachable = f'looks like "{repo}" is not a valid chart repository or cannot be reached'
        try:
            async with self.session().get(index_url, headers=_basic(auth)) as resp:
                if resp.status != 200:
                    failed = f"failed to fetch {index_url} : {resp.status} {resp.reason}"
                    return ChartLookup(False, f"{unreachable}: {failed}")
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError) as err:
            return ChartLookup(False, f"{unreachable}: {type(err).__name__}: {err}".rstrip(": "))
        try:
            index = await asyncio.to_thread(yaml.safe_load, text)
        except yaml.YAMLError as err:
            return ChartLookup(False, f"{unreachable}: index.yaml is not YAML: {err}")
        entries = (index or {}).get("entries") if isinstance(index, dict) else None
        if not isinstance(entries, dict):
            return ChartLookup(False, f"{unreachable}: no API version specified")
        versions: list[dict[str, Any]] = [v for v in entries.get(chart) or [] if isinstance(v, dict)]
        if not versions:
            return ChartLookup(False, f'chart "{chart}" not found in {repo} repository')
        try:
            chosen = best_match(version, [str(v.get("version")) for v in versions])
        except VersionError as err:
            return ChartLookup(False, f"improper constraint: {version}: {err}")
        if chosen is None:
            return ChartLookup(False, f'chart "{chart}" version "{version}" not found in {repo} repository')
        entry = next(v for v in versions if str(v.get("version")) == chosen)
        urls = entry.get("urls") or []
        url = urljoin(repo.rstrip("/") + "/", str(urls[0])) if urls else None
        return ChartLookup(True, version=chosen, url=url, digest=entry.get("digest"))

    async def find_oci(
        self, repo: str, chart: str, version: str | None, *, plain_http: bool = False, auth: Credentials | None = None
    ) -> ChartLookup:
        """The tag must exist as given (Clusternet's FindOCIChart compares tags exactly); with no
        version, any release tag will do, since Helm then installs the latest (Clusternet reports
        NotFound there though Helm would install it)."""
        host, _, path = repo[len(OCI_SCHEME) :].rstrip("/").partition("/")
        name = f"{path}/{chart}" if path else chart
        url = f"{'http' if plain_http else 'https'}://{host}/v2/{name}/tags/list"
        missing = f"not found a version matched {version or ''} for chart {repo}/{chart}"
        # OCI tags cannot hold '+': Helm pushes 1.0.0+meta as 1.0.0_meta
        wanted = (version or "").replace("+", "_")
        headers = _basic(auth)
        next_url: str | None = url
        try:
            for _ in range(MAX_TAG_PAGES):
                if next_url is None:
                    break
                async with self.session().get(next_url, headers=headers) as resp:
                    if resp.status == 401 and not headers.get("Authorization", "").startswith("Bearer"):
                        token = await self._bearer(resp.headers.get("WWW-Authenticate", ""), auth)
                        if token is not None:
                            headers = {"Authorization": token}
                            continue
                    if resp.status == 404:
                        return ChartLookup(False, missing)
                    if resp.status != 200:
                        return ChartLookup(False, f"{missing}: GET {next_url}: {resp.status} {resp.reason}")
                    body = await resp.json(content_type=None)
                    next_url = _next_page(next_url, resp.headers.get("Link"))
                tags = [str(t) for t in (body.get("tags") or [])] if isinstance(body, dict) else []
                if wanted in tags:
                    return ChartLookup(True, version=version)
                latest = None if wanted else best_match(None, [t.replace("_", "+") for t in tags])
                if latest is not None:  # no version: Helm installs the latest, so it is found
                    return ChartLookup(True, version=latest)
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            return ChartLookup(False, f"{missing}: {type(err).__name__}: {err}".rstrip(": "))
        return ChartLookup(False, missing)

    async def _bearer(self, challenge: str, auth: Credentials | None) -> str | None:
        """A registry's token for a `Bearer realm=...,service=...,scope=...` challenge (the
        distribution token flow, anonymous or with the pull Secret's basic auth)."""
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() != "bearer":
            return None
        fields = dict(re.findall(r'(\w+)="([^"]*)"', params))
        realm = fields.pop("realm", None)
        if not realm:
            return None
        async with self.session().get(realm, params=fields, headers=_basic(auth)) as resp:
            if resp.status != 200:
                return None
            body = await resp.json(content_type=None)
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        return f"Bearer {token}" if token else None


def _next_page(url: str, link: str | None) -> str | None:
    """The `Link: </v2/...?last=x&n=y>; rel="next"` page of a tag list, if any."""
    found = re.match(r'\s*<([^>]+)>\s*;\s*rel="?next"?', link or "")
    return urljoin(url, found[1]) if found else None


def _basic(auth: Credentials | None) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(auth.username, auth.password)} if auth else {}

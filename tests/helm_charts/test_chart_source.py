"""Finding charts where a HelmChart says, against repositories the test serves: a classic one
(index.yaml over HTTP, with and without basic auth) and an OCI registry (distribution), with
Helm's version constraints and Helm's reasons when a chart is not there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from clusternet_nats.helm.repo import ChartSource, Credentials
from clusternet_nats.helm.semver import VersionError, best_match
from clusternet_nats.testing.charts import GREETER, ChartRepo, OciRegistry
from clusternet_nats.testing.natsserver import free_port
from clusternet_nats.testing.tools import Tools


@pytest.fixture
async def source() -> AsyncIterator[ChartSource]:
    chart_source = ChartSource(timeout=5)
    yield chart_source
    await chart_source.close()


@pytest.mark.parametrize(
    ("wanted", "picked"),
    [
        (None, "2.0.0"),
        ("1.2.3", "1.2.3"),
        ("^1.0", "1.2.3"),
        ("~1.2", "1.2.3"),
        (">=0.2 <1.3", "1.2.3"),
        ("1.x", "1.2.3"),
        ("0.x || 2.x", "2.0.0"),
        (">=1.3.0-rc.0", "2.0.0"),
        ("1.3.0-rc.1", "1.3.0-rc.1"),
        ("^0.1.0", "0.1.0"),
        ("!=2.0.0", "1.2.3"),
        ("3.0.0", None),
        ("~2.1", None),
    ],
)
def test_versions_are_picked_as_helm_picks_them(wanted: str | None, picked: str | None) -> None:
    available = ["0.1.0", "0.2.0", "1.0.0", "1.2.3", "1.3.0-rc.1", "2.0.0"]
    assert best_match(wanted, available) == picked


def test_a_bad_constraint_is_an_error_naming_it() -> None:
    with pytest.raises(VersionError, match="'>=banana'"):
        best_match(">=banana", ["1.0.0"])


async def test_classic_repository(source: ChartSource, chart_repo: ChartRepo) -> None:
    found = await source.find(chart_repo.url, GREETER, "0.1.0")
    assert found.found and found.version == "0.1.0"
    assert found.url == f"{chart_repo.url}/{GREETER}-0.1.0.tgz" and found.digest
    latest = await source.find(chart_repo.url, GREETER, None)
    assert latest.version == "0.2.0"
    assert (await source.find(chart_repo.url, GREETER, "~0.1")).version == "0.1.0"

    missing = await source.find(chart_repo.url, GREETER, "9.9.9")
    assert not missing.found
    assert missing.reason == f'chart "{GREETER}" version "9.9.9" not found in {chart_repo.url} repository'
    absent = await source.find(chart_repo.url, "nosuch", "0.1.0")
    assert absent.reason == f'chart "nosuch" not found in {chart_repo.url} repository'


async def test_a_repository_that_is_down(source: ChartSource) -> None:
    url = f"http://127.0.0.1:{free_port()}/charts"
    down = await source.find(url, GREETER, "0.1.0")
    assert not down.found
    assert down.reason.startswith(f'looks like "{url}" is not a valid chart repository or cannot be reached')


async def test_basic_auth(source: ChartSource, kube_tools: Tools, tmp_path: Path) -> None:
    repo = ChartRepo(kube_tools.helm, tmp_path, auth=("reader", "s3cret"))
    repo.add_chart(GREETER, "0.1.0")
    repo.start()
    try:
        refused = await source.find(repo.url, GREETER, "0.1.0")
        assert not refused.found and "401 Unauthorized" in refused.reason
        wrong = await source.find(repo.url, GREETER, "0.1.0", auth=Credentials("reader", "guess"))
        assert not wrong.found
        allowed = await source.find(repo.url, GREETER, "0.1.0", auth=Credentials("reader", "s3cret"))
        assert allowed.found
    finally:
        repo.stop()


async def test_oci_registry(source: ChartSource, oci_registry: OciRegistry) -> None:
    assert (await source.find(oci_registry.url, GREETER, "0.2.0", plain_http=True)).found
    missing = await source.find(oci_registry.url, GREETER, "9.9.9", plain_http=True)
    assert not missing.found
    assert missing.reason == f"not found a version matched 9.9.9 for chart {oci_registry.url}/{GREETER}"
    latest = await source.find(oci_registry.url, GREETER, None, plain_http=True)
    assert latest.found and latest.version == "0.2.0"
    unknown = await source.find(oci_registry.url, "nosuch", "0.1.0", plain_http=True)
    assert not unknown.found and unknown.reason.startswith("not found a version matched 0.1.0")


@pytest.fixture
async def token_registry(oci_registry: OciRegistry) -> AsyncIterator[str]:
    """A registry front as Docker Hub and GHCR are: tag lists need a bearer token from a realm
    (given anonymously), and come in pages of one tag linked by `Link: <...>; rel="next"`; the
    tags are the real registry's."""
    source = ChartSource(timeout=5)

    async def token(request: web.Request) -> web.Response:
        assert request.query["service"] == "test-registry"
        return web.json_response({"token": f"t-{request.query['scope']}"})

    async def tags(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if request.headers.get("Authorization") != f"Bearer t-repository:{name}:pull":
            challenge = f'Bearer realm="{base}/token",service="test-registry",scope="repository:{name}:pull"'
            return web.json_response({}, status=401, headers={"WWW-Authenticate": challenge})
        session = source.session()
        async with session.get(f"http://{oci_registry.host}/v2/{name}/tags/list") as resp:
            found = sorted((await resp.json())["tags"]) if resp.status == 200 else []
        after = request.query.get("last")
        rest = [t for t in found if after is None or t > after]
        if not rest:
            return web.json_response({"errors": [{"code": "NAME_UNKNOWN"}]}, status=404)
        headers = {"Link": f'</v2/{name}/tags/list?n=1&last={rest[0]}>; rel="next"'} if len(rest) > 1 else {}
        return web.json_response({"name": name, "tags": rest[:1]}, headers=headers)

    app = web.Application()
    app.router.add_get("/token", token)
    app.router.add_get("/v2/{name:.+}/tags/list", tags)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"oci://127.0.0.1:{port}/charts"
    await runner.cleanup()
    await source.close()


async def test_oci_bearer_tokens_and_paged_tag_lists(source: ChartSource, token_registry: str) -> None:
    # 0.2.0 is on the second page, after the token was fetched for the first
    assert (await source.find(token_registry, GREETER, "0.2.0", plain_http=True)).found
    assert not (await source.find(token_registry, GREETER, "0.3.0", plain_http=True)).found

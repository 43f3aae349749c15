"""A chart repository over HTTPS is trusted only through a CA the hub trusts.

Clusternet skips TLS verification for chart repositories; a hub that did would report a spoofed
repository's chart as Found. A self-signed repository is NotFound, naming the certificate, until
its CA is given.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from clusternet_nats.helm.repo import ChartSource
from clusternet_nats.runtime.pki import create_ca, issue_server_cert
from clusternet_nats.testing.natsserver import free_port

INDEX = """apiVersion: v1
entries:
  greeter:
    - name: greeter
      version: 0.1.0
      urls: [greeter-0.1.0.tgz]
"""


@pytest.fixture
async def https_repo(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    ca = create_ca(tmp_path, "test repo CA")
    pair = issue_server_cert(ca, tmp_path, "repo", ["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pair.cert, pair.key)

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=INDEX)

    app = web.Application()
    app.router.add_get("/index.yaml", index)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    try:
        yield f"https://127.0.0.1:{port}", ca.files.cert
    finally:
        await runner.cleanup()


async def test_an_untrusted_certificate_is_not_found_and_a_trusted_one_is(https_repo: tuple[str, Path]) -> None:
    url, ca_file = https_repo
    untrusting = ChartSource()
    trusting = ChartSource(ca_file=str(ca_file))
    try:
        refused = await untrusting.find(url, "greeter", "0.1.0")
        assert not refused.found
        assert "certificate" in refused.reason.lower()
        found = await trusting.find(url, "greeter", "0.1.0")
        assert found.found, found.reason
        assert found.version == "0.1.0"
    finally:
        await untrusting.close()
        await trusting.close()

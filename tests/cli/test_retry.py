"""A hub that cannot reach its store says when to try again, and cnet's client does, as client-go."""

from __future__ import annotations

import asyncio

from clusternet_nats.cli.client import HubClient
from clusternet_nats.cli.config import ClientSettings
from clusternet_nats.hub.testing import running_hub
from clusternet_nats.testing.natsserver import NatsServer
from clusternet_nats.testing.waiting import eventually
from prometheus_client import REGISTRY

SUBSCRIPTIONS = "/apis/apps.clusternet.io/v1alpha1/namespaces/default/subscriptions"


async def test_a_store_outage_answers_503_with_retry_after_and_the_client_waits_it_out(
    private_nats: NatsServer,
) -> None:
    async with running_hub(private_nats.url) as hub:
        settings = ClientSettings(server=hub.url, certificate_authority=hub.ca_file, token=hub.admin_token)
        async with HubClient.connect(settings) as client:
            assert (await client.get(SUBSCRIPTIONS))["items"] == []
            private_nats.stop()
            async with hub.session() as raw:

                async def refused() -> bool:
                    async with raw.get(SUBSCRIPTIONS) as resp:
                        body = await resp.json()
                        return resp.status == 503 and resp.headers.get("Retry-After") == "1" and (
                            body["details"]["retryAfterSeconds"] == 1
                        )

                await eventually(refused, 30, what="503 with Retry-After while NATS is down")
            refusals = _refusals()
            waiting = asyncio.create_task(client.get(SUBSCRIPTIONS))
            await eventually(lambda: _refusals() > refusals, 30, what="the client's request refused once")
            assert not waiting.done(), "a refusal with Retry-After is tried again, not raised"
            await asyncio.to_thread(private_nats.start)
            listed = await asyncio.wait_for(waiting, 60)
            assert listed["items"] == []


def _refusals() -> float:
    """503s the hub (in this process) has answered to GETs so far."""
    return REGISTRY.get_sample_value("cnet_http_requests_total", {"method": "GET", "code": "503"}) or 0.0

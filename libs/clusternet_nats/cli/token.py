"""`cnet token create|list|revoke`: Clusternet's bootstrap tokens, kept by the hub.

Clusternet reads kubeadm's bootstrap-token Secrets; here the hub keeps them in NATS, so the CLI
asks the hub like every other command and never touches NATS itself.
"""

from __future__ import annotations

from clusternet_nats.api.registration import BOOTSTRAP_TOKENS_PATH, BootstrapTokenRequest, BootstrapTokenView
from clusternet_nats.cli.client import HubClient


async def create(client: HubClient, ttl_seconds: float, description: str) -> BootstrapTokenView:
    body = BootstrapTokenRequest(ttl_seconds=ttl_seconds, description=description)
    _, data = await client.request("POST", BOOTSTRAP_TOKENS_PATH, body.model_dump(by_alias=True, exclude_none=True))
    return BootstrapTokenView.model_validate(data)


async def list_tokens(client: HubClient) -> list[BootstrapTokenView]:
    data = await client.get(BOOTSTRAP_TOKENS_PATH)
    return [BootstrapTokenView.model_validate(item) for item in data.get("items") or []]


async def revoke(client: HubClient, token_id: str) -> None:
    await client.request("DELETE", f"{BOOTSTRAP_TOKENS_PATH}/{token_id}")


def table(tokens: list[BootstrapTokenView]) -> str:
    rows = [("TOKEN ID", "EXPIRES", "DESCRIPTION")]
    rows += [(t.token_id, t.expires.isoformat() if t.expires else "<never>", t.description) for t in tokens]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)

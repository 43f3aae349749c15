"""Issue 7, class 3: a bootstrap token reads another cluster's replies.

Tokens are reusable and cluster ids are easy to learn, so a token holder naming B's id must not
get B's inbox, directly or through a leaf node it runs. B's replies here are its direct gets of
its own Description, which carries a secret. The positive control is B itself receiving them.
"""

from __future__ import annotations

import json
from pathlib import Path

from clusternet_nats.agent.leaf import LeafNode, LeafRemote
from clusternet_nats.api.registration import inbox_prefix
from clusternet_nats.store import JsonBucket
from clusternet_nats.testing.waiting import eventually, holds
from nats.aio.msg import Msg

from tests.isolation.attackers import (
    SHORT,
    Attacker,
    Connection,
    connect,
    leaf_subscriptions,
    token_holder,
)
from tests.registration.harness import RegistrationHub

SECRET = "s3cr3t-of-b"


async def b_reads_its_secret(hub: RegistrationHub, b: Attacker, times: int = 3) -> None:
    """Positive control: B's direct gets of its own Description reach B, with the secret."""
    descriptions = JsonBucket(hub.nc.jetstream(), "descriptions")
    if await descriptions.get(f"{b.namespace}.secret") is None:
        await descriptions.create(f"{b.namespace}.secret", json.dumps({"secret": SECRET}).encode())
    for _ in range(times):
        found = await b.read_own("descriptions", f"{b.namespace}.secret")
        assert found is not None and SECRET.encode() in found, "B cannot read its own Description"


def leaked(*subscriptions: list[Msg]) -> list[Msg]:
    return [m for got in subscriptions for m in got if SECRET.encode() in m.data]


async def test_token_holder_naming_a_registered_cluster_reads_none_of_its_replies(
    hub: RegistrationHub, bystander: Attacker
) -> None:
    spy = await token_holder(hub.secure.server.url, bystander.cluster_id, await hub.token())
    if spy is not None:  # hardened: refused at connect
        try:
            got = await spy.listen(f"{inbox_prefix(bystander.cluster_id)}.>")
            await spy.settle()
            await b_reads_its_secret(hub, bystander)
            await holds(lambda: not leaked(got), SHORT, "the token holder read B's replies")
        finally:
            await spy.close()
    else:
        await b_reads_its_secret(hub, bystander)


async def test_token_holder_with_a_new_id_reads_none_of_their_replies(
    hub: RegistrationHub, bystander: Attacker
) -> None:
    """A fresh id (a token's ordinary use) may register; its grants reach no other inbox."""
    spy = await token_holder(hub.secure.server.url, "00000000-0000-4000-8000-00000000abcd", await hub.token())
    assert spy is not None, "a token holder with a new cluster id may connect to register"
    try:
        subjects = (f"{inbox_prefix(bystander.cluster_id)}.>", "_INBOX.>", ">", "*.>")
        got = [await spy.listen(subject) for subject in subjects]
        await spy.settle()
        await b_reads_its_secret(hub, bystander)
        await holds(lambda: not leaked(*got), SHORT, "the token holder read B's replies")
        assert spy.violations() > 0, "the server reported no permission violation"
    finally:
        await spy.close()


async def test_token_leaf_naming_a_registered_cluster_reads_none_of_its_replies(
    hub: RegistrationHub, bystander: Attacker, tmp_path: Path
) -> None:
    """The token holder runs a leaf node dialling the hub as B's id; its local clients listen.
    Either the hub refuses the link, or the link carries none of B's replies."""
    refusals = hub.callout.refusals
    leaf = LeafNode(tmp_path / "spy-leaf", "spy")
    await leaf.start(LeafRemote(hub.secure.leaf_url, bystander.cluster_id, await hub.token(), hub.secure.pki.ca_cert))
    local: Connection | None = None
    try:
        local = await connect(leaf.url, bystander.cluster_id, None, "_INBOX_SPY")
        wanted = f"{inbox_prefix(bystander.cluster_id)}.>"
        got = await local.listen(wanted)
        await local.settle()

        async def link_up_or_refused() -> bool:
            return hub.callout.refusals > refusals or wanted in await leaf_subscriptions(hub)

        await eventually(link_up_or_refused, 20, interval=0.2, what="the spy's leaf link is up or refused")
        await b_reads_its_secret(hub, bystander)
        await holds(lambda: not leaked(got), SHORT, "a token leaf carried B's replies")
    finally:
        if local is not None:
            await local.close()
        await leaf.stop()

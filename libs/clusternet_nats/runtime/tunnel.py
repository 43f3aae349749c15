"""Requests from the hub side to one cluster, answerable across the cluster's leaf link.

nats-server's `allow_responses` does not extend to leaf-node connections, so a cluster behind
a leaf may publish answers only under its own `clusternet.reply.<namespace>` prefix; this asks
with such a reply subject. A cluster connected directly can answer it the same way.
"""

from __future__ import annotations

import asyncio

from clusternet_nats.api.registration import reply_prefix
from clusternet_nats.store.tracecontext import request_span
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.js.api import Header
from nats.nuid import NUID

_nuid = NUID()
_NO_RESPONDERS = "503"


def is_no_responders(msg: Msg) -> bool:
    """Whether `msg` is nats-server's answer that nobody subscribes to the subject asked: the
    cluster's agent is not connected, or its subscription has not reached the hub's server yet."""
    return not msg.data and (msg.headers or {}).get(Header.STATUS) == _NO_RESPONDERS


async def request_cluster(nc: NATS, namespace: str, subject: str, payload: bytes, timeout: float) -> Msg:
    """The first answer to `subject` from the cluster owning `namespace`; raises TimeoutError, or
    NoRespondersError when nobody serves the subject."""
    answered: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()

    async def on_reply(msg: Msg) -> None:
        if not answered.done():
            answered.set_result(msg)

    inbox = f"{reply_prefix(namespace)}.{_nuid.next().decode()}"
    sub = await nc.subscribe(inbox, cb=on_reply, max_msgs=1)
    try:
        with request_span("cluster.request", subject) as headers:
            await nc.publish(subject, payload, reply=inbox, headers=headers or None)
            async with asyncio.timeout(timeout):
                msg = await answered
    finally:
        if not nc.is_closed:
            await sub.unsubscribe()
    if is_no_responders(msg):
        raise NoRespondersError
    return msg


def from_hub(msg: Msg, namespace: str) -> bool:
    """Whether a request on a cluster's subjects was asked by `request_cluster`: its reply is under
    the cluster's reply prefix, which only hub-side identities may set as a reply and subscribe."""
    return bool(msg.reply) and msg.reply.startswith(reply_prefix(namespace) + ".")

"""`request_cluster`: a request nobody serves fails as such, instead of answering with nothing.

nats-server answers a request with no subscriber at once, with an empty "503" status message. Taken
as the cluster's answer, it read as an empty reply (a test saw `b''` where its cluster's answer was
due, when the cluster's subscription had not yet reached the hub's server).
"""

from __future__ import annotations

import pytest
from clusternet_nats.runtime.connection import barrier
from clusternet_nats.runtime.tunnel import is_no_responders, request_cluster
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError


async def test_nobody_serving_raises_no_responders(nc: NATS, unique_ns: str) -> None:
    with pytest.raises(NoRespondersError):
        await request_cluster(nc, unique_ns, f"clusternet.proxy.{unique_ns}.get", b"ask", timeout=5)


async def test_an_empty_answer_is_an_answer(nc: NATS, unique_ns: str) -> None:
    subject = f"clusternet.proxy.{unique_ns}.get"

    async def answer(msg: Msg) -> None:
        await msg.respond(b"")

    await nc.subscribe(subject, cb=answer)
    await barrier(nc)
    msg = await request_cluster(nc, unique_ns, subject, b"ask", timeout=5)
    assert msg.data == b""
    assert not is_no_responders(msg)

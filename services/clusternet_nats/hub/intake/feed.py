"""The consumer that delivers a cluster's Descriptions, made by the hub on the cluster's behalf.

A cluster may not create consumers: the reply of a pull request, like the answer to any
JetStream API request, goes wherever the requester names, and a stream stores whatever lands on
its subjects (api/intake.py). So on `follow` the hub (re)creates one push consumer per cluster,
`agent-<namespace>`, filtered to the cluster's namespace, delivering to a subject inside the
cluster's own inbox, from the sequence the cluster asks for; nothing of it is the cluster's to
choose. Asking again replaces it: that is how an agent resumes after a lost connection or a gap
(one request to the server when there is none to replace: store/consumers.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusternet_nats.api.apps import Description
from clusternet_nats.api.intake import DELIVERY_HEARTBEAT, FollowRequest, IntakeReply
from clusternet_nats.api.registration import agent_consumer_name, descriptions_deliver_subject
from clusternet_nats.api.registry import by_kind
from clusternet_nats.api.subjects import KV
from clusternet_nats.hub.intake.admission import Refused, parse
from clusternet_nats.hub.registration.records import ClusterCredential
from clusternet_nats.store.consumers import create_anew, fresh
from clusternet_nats.store.keys import kv_stream
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

INACTIVE_THRESHOLD = 60.0
"""A consumer nobody listens to (its agent gone) is removed by the server after this."""


def descriptions_consumer(bucket: str, namespace: str, deliver_subject: str, start: int) -> ConsumerConfig:
    """The push consumer of one cluster's Descriptions, from `start` (0: the latest of each)."""
    return ConsumerConfig(
        name=agent_consumer_name(namespace),
        deliver_subject=deliver_subject,
        filter_subject=KV.format(bucket=bucket, key=f"{namespace}.>"),
        ack_policy=AckPolicy.NONE,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start else DeliverPolicy.LAST_PER_SUBJECT,
        opt_start_seq=start or None,
        idle_heartbeat=DELIVERY_HEARTBEAT,
        inactive_threshold=INACTIVE_THRESHOLD,
        mem_storage=True,
    )


@dataclass
class DescriptionsFeed:
    nc: NATS
    js: JetStreamContext
    bucket: str = by_kind(Description.KIND).bucket

    @property
    def stream(self) -> str:
        return kv_stream(self.bucket)

    async def follow(self, cluster: ClusterCredential, data: bytes) -> IntakeReply:
        start = parse(FollowRequest, data, "FollowRequest").start_sequence
        if start:
            last = int((await self.js.stream_info(self.stream)).state.last_seq)
            if start > last + 1:
                raise Refused(410, f"the Descriptions stream ends at {last}, before {start}: list again from 0")
        config = descriptions_consumer(
            self.bucket, cluster.namespace, descriptions_deliver_subject(cluster.cluster_id), start
        )
        info = await create_anew(self.nc, self.js, self.stream, fresh(config, f"cluster {cluster.name}'s Descriptions"))
        return IntakeReply(pending=int(info.num_pending or 0))

"""What each identity may publish and subscribe: the isolation between clusters, in NATS terms.

A cluster has no JetStream API at all. NATS does not check reply subjects, and the server
answers any JetStream request, and delivers any pull, to whatever reply the requester names; a
stream stores whatever lands on its subjects. So in one account a cluster allowed a direct get
of its own key could have the answer stored in another cluster's key, and one allowed to pull
from its own consumer could have the deliveries stored anywhere (tests/isolation/
test_attacks_deputy.py). Instead it asks the hub's intake (`clusternet.intake.<namespace>.>`,
api/intake.py), which answers only its own inbox: reads of its own keys, writes, Events, and
`follow`, on which the hub makes the one consumer that delivers the cluster's Descriptions to a
subject inside the cluster's inbox. Nothing it can send reaches the JetStream API queue.

Replies reach a cluster on its own inbox prefix, which no other identity may subscribe to; a
bootstrap token's holder has a prefix of its own (`registering_inbox_prefix`). Answers to the
hub's requests go to its own `clusternet.reply.<namespace>` prefix; nothing else is open to it
as a reply subject.

Every subject here is derived from the table in api/subjects.py (`grants`): what a cluster or a
token holder publishes and subscribes there is what it is granted, bound to its id and namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusternet_nats.api.subjects import Party, grants


@dataclass(frozen=True)
class Permissions:
    publish: list[str] = field(default_factory=list)
    subscribe: list[str] = field(default_factory=list)
    responses: bool = False
    """NATS `allow_responses`; granted to no one here: a cluster answers on its own reply prefix."""


def registering(cluster_id: str) -> Permissions:
    """A bootstrap token's holder: one registration request, and its reply on a prefix of its own."""
    publish, subscribe = grants(Party.REGISTERING, cluster_id)
    return Permissions(publish=publish, subscribe=subscribe)


def cluster(cluster_id: str, namespace: str, domain: str | None = None) -> Permissions:
    """`domain` is accepted for the callout's sake and unused: a cluster reaches no JetStream.

    An agent that restarted before it kept its approval asks again with its own secret (a token
    may not name a registered id), so the grant includes its registration subject and prefix."""
    publish, subscribe = grants(Party.CLUSTER, cluster_id, namespace)
    return Permissions(publish=publish, subscribe=subscribe)

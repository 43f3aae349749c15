"""The predictor's wire contract: subjects, request and reply.

One subject per cluster, `predictor.<cluster namespace>.<cluster name>.accommodation`
(api/subjects.py: PREDICTOR), so a caller addresses a cluster by name and NATS permissions can
scope who may ask about which. Cluster names may hold dots, so the name is everything between
the namespace and the verb.
"""

from __future__ import annotations

from clusternet_nats.api.apps import ReplicaRequirements
from clusternet_nats.api.meta import Model, NonNegInt32
from clusternet_nats.api.subjects import PREDICTOR

SUBSCRIPTION_SUBJECT = PREDICTOR.filter()


def accommodation_subject(namespace: str, name: str) -> str:
    return PREDICTOR.format(namespace=namespace, name=name)


def parse_accommodation_subject(subject: str) -> tuple[str, str] | None:
    """(namespace, name) of the cluster an accommodation subject names; None for other subjects."""
    found = PREDICTOR.parse(subject)
    return None if found is None else (found["namespace"], found["name"])


class AccommodationRequest(Model):
    requirements: ReplicaRequirements
    replicas: NonNegInt32 | None = None
    """The replicas the caller wants placed; the reply says how many could be, whatever this is."""


class AccommodationReply(Model):
    max_acceptable_replicas: int | None = None
    error: str | None = None

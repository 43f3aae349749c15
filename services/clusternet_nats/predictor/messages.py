"""The predictor's subjects (api/subjects.py): per cluster for one requirement, batch, unscheduled.

One subject per cluster for the single question, `predictor.<cluster namespace>.<cluster
name>.accommodation` (PREDICTOR), so a caller addresses a cluster by name and NATS permissions
can scope who may ask about which. Cluster names may hold dots, so the name is everything
between the namespace and the verb. The batch (PREDICT) and the unscheduled listing
(UNSCHEDULED) have one subject each; every replica subscribes in the same queue group.
"""

from __future__ import annotations

from clusternet_nats.api.subjects import PREDICT, PREDICTOR, UNSCHEDULED

SUBSCRIPTION_SUBJECT = PREDICTOR.filter()
PREDICT_SUBJECT = PREDICT.format()
UNSCHEDULED_SUBJECT = UNSCHEDULED.format()


def accommodation_subject(namespace: str, name: str) -> str:
    return PREDICTOR.format(namespace=namespace, name=name)


def parse_accommodation_subject(subject: str) -> tuple[str, str] | None:
    """(namespace, name) of the cluster an accommodation subject names; None for other subjects."""
    found = PREDICTOR.parse(subject)
    return None if found is None else (found["namespace"], found["name"])

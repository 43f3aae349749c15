"""Which objects in the child a Description applied, so pruning touches nothing else.

The owner (`<namespace>.<name>` of a Description) can be longer than a label value may be
(63 characters), so objects carry a fixed-length hash of it in the owner label, which list
calls select by, and the owner itself in an annotation, which is checked before deleting (a
hash collision then costs nothing). Listing every kind in the cluster to find an owner's
objects would be slow and need rights to read everything, so each owner also has a record,
a ConfigMap in the agent's namespace, naming the kinds it ever applied: pruning lists those.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from clusternet_nats.agent.backends.base import RawObject
from clusternet_nats.api.labels import APPLIED_BY_DESCRIPTION
from clusternet_nats.domain.names import short_hash

AGENT_NAMESPACE = "clusternet-system"
"""Clusternet's namespace for its agent in a child cluster; holds our records and Lease."""
OWNER_ANNOTATION = APPLIED_BY_DESCRIPTION
RECORD_LABEL = "apps.clusternet.io/description-record"
"""On owner records; a different key from the owner label, so pruning never lists a record."""
_HASH_LENGTH = 16

Kind = tuple[str, str]
"""(apiVersion, kind)."""


def owner_hash(owner: str) -> str:
    return short_hash(owner, length=_HASH_LENGTH)


def owner_selector(owner: str) -> str:
    return f"{APPLIED_BY_DESCRIPTION}={owner_hash(owner)}"


def mark(manifest: RawObject, owner: str) -> dict[str, Any]:
    """A copy of `manifest` carrying the owner label and annotation."""
    body = copy.deepcopy(dict(manifest))
    meta = body.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), APPLIED_BY_DESCRIPTION: owner_hash(owner)}
    meta["annotations"] = {**(meta.get("annotations") or {}), OWNER_ANNOTATION: owner}
    return body


def owner_of(obj: RawObject) -> str | None:
    """The owner an object was applied for, if its label and annotation agree."""
    meta = obj.get("metadata") or {}
    owner = (meta.get("annotations") or {}).get(OWNER_ANNOTATION)
    label = (meta.get("labels") or {}).get(APPLIED_BY_DESCRIPTION)
    return owner if isinstance(owner, str) and label == owner_hash(owner) else None


def record_name(owner: str) -> str:
    return f"description-{owner_hash(owner)}"


def record(owner: str, kinds: Iterable[Kind]) -> dict[str, Any]:
    """The ConfigMap remembering which kinds `owner` applied."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": record_name(owner),
            "namespace": AGENT_NAMESPACE,
            "labels": {RECORD_LABEL: owner_hash(owner)},
        },
        "data": {"owner": owner, "kinds": json.dumps(sorted(set(kinds)))},
    }


def record_owner(configmap: RawObject) -> str:
    return str(configmap["data"]["owner"])


def record_kinds(configmap: RawObject) -> set[Kind]:
    return {(str(api_version), str(kind)) for api_version, kind in json.loads(configmap["data"]["kinds"])}

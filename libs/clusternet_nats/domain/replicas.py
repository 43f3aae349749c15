"""What a feed's workload asks of a cluster: its desired replicas and one replica's requirements.

Clusternet's FeedInventory controller parses Deployment, ReplicaSet and StatefulSet (by
apiVersion and kind) into `desiredReplicas`, `replicaJsonPath` and `replicaRequirements`
(pkg/controllers/apps/feedinventory/utils: containers' requests summed, a request falling back
to the limit, then the max with any init container). The same rule, kept pure so the hub's
FeedInventory controller, the scheduler and tests share it. Beyond Clusternet: Job (its
`parallelism`), `priorityClassName`, and a registry (`ReplicaKinds.register`) so another kind or
a CRD joins by naming its replica JSON path and where its pod template sits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from clusternet_nats.api.apps import FeedOrder, ReplicaRequirements, ResourceRequirements
from clusternet_nats.api.meta import Feed, Toleration
from clusternet_nats.api.quantity import QuantityError, cpu_text, memory_text, parse_quantity
from clusternet_nats.domain.feeds import format_feed
from pydantic import ValidationError


class ReplicaError(ValueError):
    """A workload whose replicas or pod template cannot be read; names the feed and the field."""


@dataclass(frozen=True)
class ReplicaKind:
    """Where a kind keeps its replica count (a JSON pointer, Clusternet's replicaJsonPath) and its
    pod template's spec (a JSON pointer too; None: the kind has no pod template to read)."""

    replica_json_path: str
    pod_spec_path: str | None = "/spec/template/spec"


@dataclass
class ReplicaKinds:
    """The kinds whose feeds carry replicas, by (apiVersion, kind)."""

    kinds: dict[tuple[str, str], ReplicaKind] = field(default_factory=dict)

    def register(self, api_version: str, kind: str, replica_kind: ReplicaKind) -> None:
        if not replica_kind.replica_json_path.startswith("/"):
            raise ValueError(f"replicaJsonPath of {api_version}/{kind} must be a JSON pointer starting with '/'")
        self.kinds[(api_version, kind)] = replica_kind

    def get(self, api_version: str, kind: str) -> ReplicaKind | None:
        return self.kinds.get((api_version, kind))


def in_tree_kinds() -> ReplicaKinds:
    """Clusternet's NewInTreeRegistry (every apiVersion it lists) plus batch/v1 Job."""
    kinds = ReplicaKinds()
    workload = ReplicaKind("/spec/replicas")
    versions = {
        "Deployment": ("apps/v1", "apps/v1beta1", "apps/v1beta2", "extensions/v1beta1"),
        "ReplicaSet": ("apps/v1", "extensions/v1beta1"),
        "StatefulSet": ("apps/v1", "apps/v1beta1", "apps/v1beta2", "extensions/v1beta1"),
    }
    for kind, api_versions in versions.items():
        for api_version in api_versions:
            kinds.register(api_version, kind, workload)
    kinds.register("batch/v1", "Job", ReplicaKind("/spec/parallelism"))
    return kinds


IN_TREE_KINDS = in_tree_kinds()

DEFAULT_REPLICA_JSON_PATH = "/spec/replicas"


def replica_json_path(api_version: str, kind: str, kinds: ReplicaKinds = IN_TREE_KINDS) -> str:
    """Where a cluster's share of a divided feed is written (a Job's is its parallelism)."""
    known = kinds.get(api_version, kind)
    return known.replica_json_path if known else DEFAULT_REPLICA_JSON_PATH


def json_pointer(obj: object, pointer: str) -> object:
    """The value at an RFC 6901 pointer ("/spec/replicas"), or None where the path ends early."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(obj, Mapping):
            obj = obj.get(token)
        elif isinstance(obj, list) and token.isdigit() and int(token) < len(obj):
            obj = obj[int(token)]
        else:
            return None
    return obj


def _quantity_text(amount: Fraction, binary: bool) -> str:
    if amount.denominator == 1 and binary:
        return memory_text(int(amount))
    millis = amount * 1000
    if millis.denominator == 1:
        return cpu_text(int(millis))
    return f"{int(amount * 10**9)}n"


Amounts = dict[str, tuple[Fraction, bool]]
"""Per resource: the amount and whether it was written with a binary suffix (Mi, Gi)."""


def _amounts(resources: object, where: str) -> tuple[Amounts, Amounts]:
    """(requests, limits) of one container; a resource with a limit but no request requests it."""
    if resources is None:
        return {}, {}
    if not isinstance(resources, Mapping):
        raise ReplicaError(f"{where}.resources: expected an object")
    parsed: list[Amounts] = []
    for part in ("requests", "limits"):
        values = resources.get(part) or {}
        if not isinstance(values, Mapping):
            raise ReplicaError(f"{where}.resources.{part}: expected an object")
        amounts: Amounts = {}
        for name, quantity in values.items():
            try:
                amounts[str(name)] = (parse_quantity(quantity), isinstance(quantity, str) and quantity.endswith("i"))
            except (QuantityError, TypeError) as err:
                raise ReplicaError(f"{where}.resources.{part}.{name}: {err}") from err
        parsed.append(amounts)
    requests, limits = parsed
    return {**limits, **requests}, limits


def _containers(spec: Mapping[str, Any], key: str, where: str) -> Sequence[Mapping[str, Any]]:
    containers = spec.get(key) or []
    if not isinstance(containers, list) or not all(isinstance(c, Mapping) for c in containers):
        raise ReplicaError(f"{where}.{key}: expected a list of containers")
    return containers


def _texts(amounts: Amounts) -> dict[str, str]:
    return {name: _quantity_text(amount, binary) for name, (amount, binary) in sorted(amounts.items())}


def replica_requirements(pod_spec: Mapping[str, Any], where: str = "spec.template.spec") -> ReplicaRequirements:
    """One replica's requirements from a pod spec: requests (falling back to limits) and limits
    summed over containers, then raised to any init container's; nodeSelector, tolerations,
    affinity and priorityClassName as written."""
    totals: tuple[Amounts, Amounts] = ({}, {})
    for i, container in enumerate(_containers(pod_spec, "containers", where)):
        parts = _amounts(container.get("resources"), f"{where}.containers[{i}]")
        for total, amounts in zip(totals, parts, strict=True):
            for name, (amount, binary) in amounts.items():
                before = total.get(name, (Fraction(0), binary))
                total[name] = (before[0] + amount, before[1])
    for i, container in enumerate(_containers(pod_spec, "initContainers", where)):
        for total, amounts in zip(
            totals, _amounts(container.get("resources"), f"{where}.initContainers[{i}]"), strict=True
        ):
            for name, (amount, binary) in amounts.items():
                if name not in total or amount > total[name][0]:
                    total[name] = (amount, binary)
    requests, limits = totals
    node_selector = pod_spec.get("nodeSelector")
    if node_selector is not None and not (
        isinstance(node_selector, Mapping) and all(isinstance(v, str) for v in node_selector.values())
    ):
        raise ReplicaError(f"{where}.nodeSelector: expected a map of strings")
    affinity = pod_spec.get("affinity")
    if affinity is not None and not isinstance(affinity, Mapping):
        raise ReplicaError(f"{where}.affinity: expected an object")
    priority_class = pod_spec.get("priorityClassName")
    if priority_class is not None and not isinstance(priority_class, str):
        raise ReplicaError(f"{where}.priorityClassName: expected a string")
    tolerations = pod_spec.get("tolerations")
    try:
        parsed = [Toleration.model_validate(t) for t in tolerations] if isinstance(tolerations, list) else None
    except ValidationError as err:
        raise ReplicaError(f"{where}.tolerations: {err.errors()[0]['msg']}") from err
    if tolerations is not None and parsed is None:
        raise ReplicaError(f"{where}.tolerations: expected a list")
    return ReplicaRequirements(
        node_selector=dict(node_selector) if node_selector else None,
        tolerations=parsed or None,
        affinity=dict(affinity) if affinity else None,
        priority_class_name=priority_class or None,
        resources=ResourceRequirements(limits=_texts(limits), requests=_texts(requests)),
    )


def feed_order(feed: Feed, template: Mapping[str, Any], kinds: ReplicaKinds = IN_TREE_KINDS) -> FeedOrder:
    """The FeedInventory entry of one feed whose object (a Manifest's template) is `template`.

    A kind that is not registered carries no replicas: the entry is the feed alone, as Clusternet
    writes it. Raises ReplicaError naming the feed and the field when the object is malformed."""
    order = FeedOrder.model_validate(feed.to_json_dict())
    replica_kind = kinds.get(str(template.get("apiVersion")), str(template.get("kind")))
    if replica_kind is None:
        return order
    what = format_feed(feed)
    replicas = json_pointer(template, replica_kind.replica_json_path)
    if replicas is not None and (not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0):
        path = replica_kind.replica_json_path
        raise ReplicaError(f"{what}: {path}: expected a non-negative integer, got {replicas!r}")
    pod_spec: object = {}
    if replica_kind.pod_spec_path is not None:
        pod_spec = json_pointer(template, replica_kind.pod_spec_path) or {}
        if not isinstance(pod_spec, Mapping):
            raise ReplicaError(f"{what}: {replica_kind.pod_spec_path}: expected a pod spec object")
    where = (replica_kind.pod_spec_path or "").strip("/").replace("/", ".")
    try:
        requirements = replica_requirements(pod_spec, where) if isinstance(pod_spec, Mapping) else None
    except ReplicaError as err:
        raise ReplicaError(f"{what}: {err}") from err
    order.desired_replicas = replicas
    order.replica_requirements = requirements
    order.replica_json_path = replica_kind.replica_json_path
    return order


def carries_replicas(orders: Sequence[FeedOrder]) -> bool:
    """Whether any feed has replicas to divide (a FeedInventory is kept only then)."""
    return any(order.desired_replicas is not None for order in orders)

"""`?labelSelector=` and `?fieldSelector=` as kube-apiserver reads them.

Label selectors become the same LabelSelector model Subscriptions use, so one `matches` decides
both what a list returns and which clusters a Subscription selects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusternet_nats.api import KubeObject, LabelSelector
from clusternet_nats.domain.listselectors import field_terms, parse_label_selector
from clusternet_nats.hub.errors import bad_request

OBJECT_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
"""The fields every kind may be selected by, as for custom resources on kube-apiserver."""


def parse_field_selector(text: str, allowed: frozenset[str]) -> dict[str, str]:
    """`field=value,...` equalities over the allowed fields; raises ValueError otherwise."""
    fields: dict[str, str] = {}
    for field, equal, value in field_terms(text, allowed):
        if not equal:
            raise ValueError(f"cannot use {field}!={value}: only field=value is supported here")
        fields[field] = value
    return fields


@dataclass(frozen=True)
class ObjectSelector:
    """What `?labelSelector=` and `?fieldSelector=` (metadata.name, metadata.namespace) keep."""

    labels: LabelSelector
    fields: tuple[tuple[str, bool, str], ...]

    @property
    def name(self) -> str | None:
        """The one name `metadata.name=X` selects (a watch on a single object), if any."""
        return next((value for field, equal, value in self.fields if field == "metadata.name" and equal), None)

    def matches(self, obj: KubeObject) -> bool:
        return self.may_match(obj.metadata.namespace or "", obj.name) and self.labels.matches(
            obj.metadata.labels or {}
        )

    def may_match(self, namespace: str, name: str) -> bool:
        """Whether the fields select an object of this name, whatever its labels (a deleted one's
        are not kept)."""
        values = {"metadata.name": name, "metadata.namespace": namespace}
        return all((values[field] == value) == equal for field, equal, value in self.fields)


def object_selector(query: Mapping[str, str]) -> ObjectSelector:
    """The selector a list or watch request asks for, or a 400 naming the parameter it cannot read."""
    try:
        labels = parse_label_selector(query.get("labelSelector", ""))
    except ValueError as err:
        raise bad_request(str(err), "labelSelector") from None
    try:
        fields = field_terms(query.get("fieldSelector", ""), OBJECT_FIELDS)
    except ValueError as err:
        raise bad_request(str(err), "fieldSelector") from None
    return ObjectSelector(labels, tuple(fields))

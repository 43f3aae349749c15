"""Kubernetes object plumbing shared by every kind: metadata, selectors, taints, conditions.

Why hand-written pydantic models and not generated code: pydantic is the single source of
truth for wire objects, JSON Schemas (``proto-schemas/``) and CRDs (``deploy/k8s/``). Field
names are Python snake_case with Clusternet's exact JSON names as aliases, so YAML written for
Clusternet loads unchanged and what we serialize is what Clusternet would write.

Unknown fields are rejected (``extra="forbid"``), as ``kubectl apply`` does by default with
strict field validation: a typo in a Subscription is an error, never a silently ignored field.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
# resource.Quantity as the CRDs spell it (k8s.io/apimachinery/pkg/api/resource).
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Clusternet's patterns for cluster ids and names; unanchored, as in its CRDs (regex search).
CLUSTER_ID_PATTERN = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
CLUSTER_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?([a-z0-9]([-a-z0-9]*[a-z0-9]))*"

ClusterID = Annotated[str, Field(pattern=CLUSTER_ID_PATTERN)]
ClusterName = Annotated[str, Field(max_length=30, pattern=CLUSTER_NAME)]

# Integers are strict: the API server rejects "3" where an integer is due, so must we (pydantic's
# lax mode would quietly turn it into 3 and a typo would pass here but fail on a real cluster).
Int32 = Annotated[int, Strict(), Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]
NonNegInt32 = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]


def _int_to_str(value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Quantity = Annotated[
    str,
    BeforeValidator(_int_to_str),
    Field(pattern=QUANTITY),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
"""A resource quantity ("500m", "2Gi", 4): int-or-string on the wire, always a string here."""


def _decode_base64(value: object) -> object:
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as err:
            raise ValueError(f"must be base64-encoded: {err}") from None
    return value


def _encode_base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


B64Bytes = Annotated[
    bytes,
    BeforeValidator(_decode_base64),
    PlainSerializer(_encode_base64, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "byte"}),
]
"""Go's []byte: base64 text on the wire (``format: byte``), raw bytes in Python."""


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class Model(BaseModel):
    """Base of every wire object: camelCase JSON, strict about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
        use_enum_values=False,
        use_attribute_docstrings=True,
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The object as Kubernetes would print it: camelCase, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> bytes:
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()


class OpenModel(Model):
    """A model that keeps fields it does not know (x-kubernetes-preserve-unknown-fields)."""

    model_config = ConfigDict(extra="allow")


@functools.lru_cache(maxsize=4096)
def _check_qualified_key(key: str) -> str:
    """Cached: a fleet's derived objects carry the same few label keys thousands of times (an
    error is not cached, so a bad key is refused every time)."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        raise ValueError(f"invalid prefix {prefix!r} in key {key!r}: must be a DNS subdomain")
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        raise ValueError(f"invalid key {key!r}: name part must be 63 characters or less, alphanumeric, '-', '_' or '.'")
    return key


def validate_labels(labels: dict[str, str] | None) -> dict[str, str] | None:
    if not labels:
        return labels
    for key, value in labels.items():
        _check_qualified_key(key)
        if len(value) > 63 or not LABEL_VALUE.match(value):
            raise ValueError(f"invalid value {value!r} for label {key!r}: must be 63 characters or less")
    return labels


class OwnerReference(Model):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @classmethod
    def controller_of(cls, obj: KubeObject) -> OwnerReference:
        """What a controller puts on an object it derives from `obj` (a Base from its
        Subscription, a FeedInventory from its Subscription, a HelmRelease from its Description)."""
        return cls(
            api_version=obj.api_version_string(),
            kind=obj.KIND,
            name=obj.name,
            uid=obj.metadata.uid or "",
            controller=True,
            block_owner_deletion=True,
        )


class ManagedFieldsEntry(OpenModel):
    """Written by a real kube-apiserver; accepted so `kubectl get -o yaml` output can be re-applied."""


class ObjectMeta(Model):
    """Standard object metadata, in Kubernetes' words (ObjectMeta)."""

    name: str | None = None
    """Name must be unique within a namespace. Is required when creating resources, although some resources may allow a
    client to request the generation of an appropriate name automatically. Cannot be updated."""
    generate_name: str | None = None
    """GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not
    been provided."""
    namespace: str | None = None
    """Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the
    "default" namespace. Cannot be updated."""
    uid: str | None = None
    """UID is the unique in time and space value for this object. It is generated by the server on successful creation
    of a resource and is not allowed to change on PUT operations."""
    resource_version: str | None = None
    """An opaque value that represents the internal version of this object that can be used by clients to determine when
    objects have changed. Populated by the system. Read-only."""
    generation: int | None = None
    """A sequence number representing a specific generation of the desired state. Populated by the system. Read-only."""
    creation_timestamp: datetime | None = None
    """CreationTimestamp is a timestamp representing the server time when this object was created. Populated by the
    system. Read-only."""
    deletion_timestamp: datetime | None = None
    """DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. Set by the server when a
    graceful deletion is requested by the user. Read-only."""
    deletion_grace_period_seconds: int | None = None
    """Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only
    set when deletionTimestamp is also set. Read-only."""
    labels: dict[str, str] | None = None
    """Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match
    selectors of replication controllers and services."""
    annotations: dict[str, str] | None = None
    """Annotations is an unstructured key value map stored with a resource that may be set by external tools to store
    and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects."""
    owner_references: list[OwnerReference] | None = None
    """List of objects depended by this object. If ALL objects in the list have been deleted, this object will be
    garbage collected."""
    finalizers: list[str] | None = None
    """Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible
    component that will remove the entry from the list."""
    managed_fields: list[ManagedFieldsEntry] | None = None
    """ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly
    for internal housekeeping, and users typically shouldn't need to set or understand this field."""
    self_link: str | None = None
    """Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."""

    @field_validator("labels")
    @classmethod
    def _check_labels(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return validate_labels(v)

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > 253 or not DNS1123_SUBDOMAIN.match(v)):
            raise ValueError(
                f"invalid name {v!r}: a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            )
        return v

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str | None) -> str | None:
        if v is not None and v != "" and (len(v) > 63 or not DNS1123_LABEL.match(v)):
            raise ValueError(f"invalid namespace {v!r}: must be a lowercase RFC 1123 label")
        return v


class TypeMeta(Model):
    api_version: str
    kind: str


class KubeObject(Model):
    """A top-level object with apiVersion, kind and metadata.

    Subclasses set the class variables that place them in the API (group, version, plural,
    scope) and in the store (bucket names). ``status`` is kept on the model for the user's
    view, but the store keeps it apart from spec so writers never race.
    """

    GROUP: ClassVar[str] = ""
    VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    PLURAL: ClassVar[str] = ""
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    NAMESPACED: ClassVar[bool] = True
    HAS_STATUS: ClassVar[bool] = False

    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def api_version_string(cls) -> str:
        return f"{cls.GROUP}/{cls.VERSION}" if cls.GROUP else cls.VERSION

    @field_validator("api_version")
    @classmethod
    def _check_api_version(cls, v: str) -> str:
        if cls.KIND and v != cls.api_version_string():
            raise ValueError(f"apiVersion must be {cls.api_version_string()!r} for kind {cls.KIND}, not {v!r}")
        return v

    @field_validator("kind")
    @classmethod
    def _check_kind(cls, v: str) -> str:
        if cls.KIND and v != cls.KIND:
            raise ValueError(f"kind must be {cls.KIND!r}, not {v!r}")
        return v

    @classmethod
    def new(cls, name: str, namespace: str | None = None, **fields: Any) -> Self:
        """Builds an object with apiVersion/kind filled in; for code, not for user input."""
        meta = fields.pop("metadata", None) or ObjectMeta()
        meta.name = name
        if cls.NAMESPACED:
            meta.namespace = namespace or "default"
        return cls(api_version=cls.api_version_string(), kind=cls.KIND, metadata=meta, **fields)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def labels(self) -> dict[str, str]:
        if self.metadata.labels is None:
            self.metadata.labels = {}
        return self.metadata.labels

    def namespaced_name(self) -> str:
        return f"{self.namespace}/{self.name}" if self.NAMESPACED else self.name


# ---------------------------------------------------------------------------------------------
# Selectors, taints and tolerations (core/v1 and meta/v1 shapes Clusternet embeds)


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class LabelSelectorRequirement(Model):
    key: str
    """key is the label key that the selector applies to."""
    operator: SelectorOperator
    """operator represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists and
    DoesNotExist."""
    values: list[str] | None = None
    """values is an array of string values. If the operator is In or NotIn, the values array must be non-empty. If the
    operator is Exists or DoesNotExist, the values array must be empty. This array is replaced during a strategic
    merge patch."""

    @model_validator(mode="after")
    def _values_match_operator(self) -> Self:
        if self.operator in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not self.values:
            raise ValueError(f"values: must be non-empty when operator is {self.operator.value}")
        if self.operator in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST) and self.values:
            raise ValueError(f"values: must be empty when operator is {self.operator.value}")
        return self


class LabelSelector(Model):
    match_labels: dict[str, str] | None = None
    """matchLabels is a map of {key,value} pairs. A single {key,value} in the matchLabels map is equivalent to an
    element of matchExpressions, whose key field is "key", the operator is "In", and the values array contains only
    "value". The requirements are ANDed."""
    match_expressions: list[LabelSelectorRequirement] | None = None
    """matchExpressions is a list of label selector requirements. The requirements are ANDed."""

    def matches(self, labels: dict[str, str]) -> bool:
        """Kubernetes label-selector semantics; an empty selector matches everything."""
        for key, value in (self.match_labels or {}).items():
            if labels.get(key) != value:
                return False
        for req in self.match_expressions or []:
            present = req.key in labels
            if req.operator is SelectorOperator.IN:
                if not present or labels[req.key] not in (req.values or []):
                    return False
            elif req.operator is SelectorOperator.NOT_IN:
                if present and labels[req.key] in (req.values or []):
                    return False
            elif req.operator is SelectorOperator.EXISTS:
                if not present:
                    return False
            elif present:  # DoesNotExist
                return False
        return True


class NodeSelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


class NodeSelectorRequirement(Model):
    key: str
    """The label key that the selector applies to."""
    operator: str
    """Represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists, DoesNotExist. Gt, and
    Lt."""
    values: list[str] | None = None
    """An array of string values. If the operator is In or NotIn, the values array must be non-empty. If the operator is
    Exists or DoesNotExist, the values array must be empty. If the operator is Gt or Lt, the values array must have a
    single element, which will be interpreted as an integer. This array is replaced during a strategic merge patch."""


class NodeSelectorTerm(Model):
    match_expressions: list[NodeSelectorRequirement] | None = None
    """A list of node selector requirements by node's labels."""
    match_fields: list[NodeSelectorRequirement] | None = None
    """A list of node selector requirements by node's fields."""


class PreferredSchedulingTerm(Model):
    preference: NodeSelectorTerm
    """A node selector term, associated with the corresponding weight."""
    weight: Int32
    """Weight associated with matching the corresponding nodeSelectorTerm, in the range 1-100."""


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class Taint(Model):
    key: str
    """Required. The taint key to be applied to a node."""
    effect: str
    """Required. The effect of the taint on pods that do not tolerate the taint. Valid effects are NoSchedule,
    PreferNoSchedule and NoExecute."""
    value: str | None = None
    """The taint value corresponding to the taint key."""
    time_added: datetime | None = None
    """TimeAdded represents the time at which the taint was added. It is only written for NoExecute taints."""


class Toleration(Model):
    key: str | None = None
    """Key is the taint key that the toleration applies to. Empty means match all taint keys. If the key is empty,
    operator must be Exists; this combination means to match all values and all keys."""
    operator: str | None = None
    """Operator represents a key's relationship to the value. Valid operators are Exists and Equal. Defaults to Equal.
    Exists is equivalent to wildcard for value, so that a pod can tolerate all taints of a particular category."""
    value: str | None = None
    """Value is the taint value the toleration matches to. If the operator is Exists, the value should be empty,
    otherwise just a regular string."""
    effect: str | None = None
    """Effect indicates the taint effect to match. Empty means match all taint effects. When specified, allowed values
    are NoSchedule, PreferNoSchedule and NoExecute."""
    toleration_seconds: Int64 | None = None
    """TolerationSeconds represents the period of time the toleration (which must be of effect NoExecute, otherwise this
    field is ignored) tolerates the taint. By default, it is not set, which means tolerate the taint forever (do not
    evict). Zero and negative values will be treated as 0 (evict immediately) by the system."""

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 Toleration.ToleratesTaint semantics."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        operator = self.operator or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal":
            return (self.value or "") == (taint.value or "")
        return False


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(Model):
    type: Annotated[str, Field(max_length=316, pattern=CONDITION_TYPE)]
    """type of condition in CamelCase or in foo.example.com/CamelCase."""
    status: ConditionStatus
    """status of the condition, one of True, False, Unknown."""
    last_transition_time: datetime
    """lastTransitionTime is the last time the condition transitioned from one status to another. This should be when
    the underlying condition changed. If that is not known, then using the time when the API field changed is
    acceptable."""
    reason: Annotated[str, Field(max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")]
    """reason contains a programmatic identifier indicating the reason for the condition's last transition. Producers of
    specific condition types may define expected values and meanings for this field, and whether the values are
    considered a guaranteed API. The value should be a CamelCase string. This field may not be empty."""
    message: Annotated[str, Field(max_length=32768)]
    """message is a human readable message indicating details about the transition. This may be an empty string."""
    observed_generation: Annotated[int, Strict(), Field(ge=0, le=2**63 - 1)] | None = None
    """observedGeneration represents the .metadata.generation that the condition was set based upon. For instance, if
    .metadata.generation is currently 12, but the .status.conditions[x].observedGeneration is 9, the condition is out
    of date with respect to the current state of the instance."""


class Feed(Model):
    """A reference to one resource a Subscription distributes."""

    api_version: str
    """APIVersion defines the versioned schema of this representation of an object."""
    kind: str
    """Kind is a string value representing the REST resource this object represents. In CamelCase."""
    name: str
    """Name of the target resource."""
    namespace: str | None = None
    """Namespace of the target resource."""

    def group_version(self) -> tuple[str, str]:
        group, _, version = self.api_version.rpartition("/")
        return group, version


def set_condition(conditions: list[Condition], new: Condition) -> list[Condition]:
    """Replaces the condition of the same type where it stands (a new type is appended), keeping
    lastTransitionTime when status is unchanged: Clusternet's UpdateConditions, so an update
    leaves the list's order as it was and an unchanged condition leaves it equal."""
    out: list[Condition] = []
    replaced = False
    for cond in conditions:
        if cond.type != new.type:
            out.append(cond)
            continue
        if cond.status == new.status:
            new = new.model_copy(update={"last_transition_time": cond.last_transition_time})
        if not replaced:
            out.append(new)
            replaced = True
    if not replaced:
        out.append(new)
    return out


Scope = Literal["Namespaced", "Cluster"]

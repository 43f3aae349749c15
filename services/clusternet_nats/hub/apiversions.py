"""Which version of a group the shadow API serves a resource at, as Clusternet's shadow apiserver
picks it (`normalizeAPIGroupResources`, pkg/hub/apiserver/shadow/utils.go): the group's preferred
version first, then the highest by Kubernetes' version order (apimachinery's
`CompareKubeAwareVersionStrings`), and each resource once, at the first version that has it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_KUBE_VERSION = re.compile(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?")
_STABILITY = {"alpha": 0, "beta": 1, None: 2}

VersionKey = tuple[int, int, int, int, str]


def kube_version_key(version: str) -> VersionKey:
    """Sorts newest first: kube-like versions (`v<major>[alpha|beta<minor>]`) by stability (GA,
    beta, alpha), then major, then minor, all descending (v2, v1, v1beta2, v1beta1, v1alpha1);
    any other version after them, alphabetically."""
    match = _KUBE_VERSION.fullmatch(version)
    if match is None:
        return (1, 0, 0, 0, version)
    major, stability, minor = match.groups()
    return (0, -_STABILITY[stability], -int(major), -int(minor or 0), "")


def normalize_api_group_resources(
    group: str, preferred_version: str, versioned: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """APIResource entries (`name`, `kind`, ...) of one group, given per version, each named
    resource once with its `group` and `version` set: the preferred version's, else the highest
    version's. Ordered by version (preferred, then newest first), then by name."""
    entries = [
        {**entry, "group": group, "version": version} for version, listed in versioned.items() for entry in listed
    ]
    entries.sort(
        key=lambda e: (e["version"] != preferred_version, kube_version_key(e["version"]), e["version"], e["name"])
    )
    chosen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        chosen.setdefault(entry["name"], entry)
    return list(chosen.values())

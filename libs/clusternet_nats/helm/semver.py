"""Semantic versions and the version constraints Helm reads (Masterminds/semver).

A HelmChart's `version` may be exact (`1.2.3`) or a constraint (`^1.2`, `~1.2.0`, `>=1.0 <2.0`,
`1.x`, `1.2 || 2.x`); empty means the latest release. As in Masterminds, a constraint without
a prerelease of its own never matches a prerelease version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(
    r"^v?(?P<major>0|[1-9]\d*)(?:\.(?P<minor>0|[1-9]\d*))?(?:\.(?P<patch>0|[1-9]\d*))?"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)
_TERM = re.compile(r"^(?P<op>!=|>=|<=|=>|=<|>|<|=|~>|~|\^)?\s*v?(?P<version>[0-9xX*][0-9A-Za-z.*+-]*)$")
_WILDCARDS = ("x", "X", "*")


class VersionError(ValueError):
    """Not a version or a constraint Helm accepts."""


@dataclass(frozen=True, order=False)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        found = _VERSION.match(text.strip())
        if found is None:
            raise VersionError(f"invalid semantic version {text!r}")
        pre = tuple(int(p) if p.isdigit() else p for p in found["pre"].split(".")) if found["pre"] else ()
        return cls(int(found["major"]), int(found["minor"] or 0), int(found["patch"] or 0), pre)

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # a release sorts after its prereleases; numeric identifiers before alphanumeric ones
        return (self.major, self.minor, self.patch, 0 if self.pre else 1,
                tuple((0, p) if isinstance(p, int) else (1, p) for p in self.pre))

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Version) -> bool:
        return self._key() <= other._key()


def _term(text: str) -> tuple[list[tuple[str, Version]], bool]:
    """One term as (operator, bound) pairs that must all hold; and whether it names a prerelease."""
    found = _TERM.match(text)
    if found is None:
        raise VersionError(f"invalid version constraint {text!r}")
    op = {"=>": ">=", "=<": "<=", "~>": "~"}.get(found["op"] or "=", found["op"] or "=")
    raw = found["version"].split("+")[0]
    head, _, pre = raw.partition("-")
    parts = head.split(".")
    if len(parts) > 3:
        raise VersionError(f"invalid version constraint {text!r}")
    wild = next((i for i, p in enumerate(parts) if p in _WILDCARDS), len(parts))
    numbers = [int(p) for p in parts[:wild]] if all(p.isdigit() for p in parts[:wild]) else None
    if numbers is None:
        raise VersionError(f"invalid version constraint {text!r}")
    given = len(numbers)
    padded = numbers + [0] * (3 - given)
    low = Version(padded[0], padded[1], padded[2], Version.parse(f"0.0.0-{pre}").pre if pre else ())

    def bump(at: int) -> Version:
        if at == 0:
            return Version(low.major + 1, 0, 0)
        if at == 1:
            return Version(low.major, low.minor + 1, 0)
        return Version(low.major, low.minor, low.patch + 1)

    if op in ("=", "!=") and given < 3:  # `1.2` or `1.x`: a range
        if given == 0:
            return ([] if op == "=" else [("<", Version(0, 0, 0))]), bool(pre)
        upper = bump(given - 1)
        if op == "=":
            return [(">=", low), ("<", upper)], bool(pre)
        return [("!range", low), ("!range", upper)], bool(pre)
    if op == "~":
        return [(">=", low), ("<", bump(min(max(given - 1, 0), 1) if given > 1 else 0))], bool(pre)
    if op == "^":
        first = 0 if low.major or given == 1 else (1 if low.minor or given == 2 else 2)
        return [(">=", low), ("<", bump(first))], bool(pre)
    if op == ">" and given < 3:
        return [(">=", bump(given - 1) if given else Version(0, 0, 0))], bool(pre)
    if op == "<=" and given < 3:
        return [("<", bump(given - 1))], bool(pre)
    return [(op, low)], bool(pre)


def _holds(op: str, version: Version, bound: Version) -> bool:
    key, other = version._key(), bound._key()
    return {
        "=": key == other, "!=": key != other, ">": key > other, "<": key < other,
        ">=": key >= other, "<=": key <= other,
    }[op]


class Constraint:
    """`a, b || c d`: any `||` group whose terms (space or comma separated) all hold."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.groups: list[tuple[list[tuple[str, Version]], bool]] = []
        for group in text.split("||"):
            terms = re.findall(r"(?:!=|>=|<=|=>|=<|~>|[><=~^])?\s*v?[0-9xX*][0-9A-Za-z.*+-]*", group.replace(",", " "))
            if not terms:
                raise VersionError(f"invalid version constraint {text!r}")
            pairs: list[tuple[str, Version]] = []
            pre = False
            for term in terms:
                more, named = _term(term.strip())
                pairs += more
                pre = pre or named
            self.groups.append((pairs, pre))

    def allows(self, version: Version) -> bool:
        for pairs, pre in self.groups:
            if version.pre and not pre:
                continue
            ranges = [b for op, b in pairs if op == "!range"]
            if ranges and ranges[0] <= version and version < ranges[1]:
                continue
            if all(_holds(op, version, bound) for op, bound in pairs if op != "!range"):
                return True
        return False


def best_match(wanted: str | None, available: list[str]) -> str | None:
    """The version Helm picks from `available` for `wanted` (exact, constraint, or empty: latest)."""
    if wanted and wanted in available:
        return wanted
    constraint = Constraint(wanted or "*")
    parsed: list[tuple[Version, str]] = []
    for text in available:
        try:
            parsed.append((Version.parse(text), text))
        except VersionError:
            continue
    matching = [(version, text) for version, text in parsed if constraint.allows(version)]
    return max(matching, key=lambda pair: pair[0]._key())[1] if matching else None

"""KV keys for objects: `<namespace>.<name>` for namespaced kinds, `<name>` for cluster-scoped.

The namespace comes first so that one subject filter (`$KV.<bucket>.<namespace>.>`) selects a
namespace; per-cluster objects live in the cluster's dedicated namespace, which is what lets
NATS permissions confine a child to its own keys. Kubernetes names may hold characters a KV key
may not (RBAC names allow ':'), so such characters are escaped as `=XX`; '=' itself never
appears in a Kubernetes name, so the escaping is unambiguous and reversible.
"""

import re

from nats.js.client import KV_PRE_TEMPLATE, KV_STREAM_TEMPLATE

_UNSAFE = re.compile(r"[^-_.a-zA-Z0-9/]")
_ESCAPED = re.compile(r"=([0-9A-F]{2})")


def _escape(part: str) -> str:
    return _UNSAFE.sub(lambda m: "".join(f"={b:02X}" for b in m.group().encode()), part)


def _unescape(part: str) -> str:
    raw = _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), part)
    return raw.encode("latin-1").decode("utf-8") if any(ord(c) > 127 for c in raw) else raw


def object_key(namespace: str | None, name: str) -> str:
    if not name:
        raise ValueError("an object key needs a name")
    return f"{namespace}.{_escape(name)}" if namespace else _escape(name)


def split_key(key: str, namespaced: bool) -> tuple[str, str]:
    """Inverse of object_key: (namespace, name); namespace is "" for cluster-scoped keys."""
    if not namespaced:
        return "", _unescape(key)
    namespace, _, name = key.partition(".")
    return namespace, _unescape(name)


def namespace_filter(namespace: str | None) -> str:
    """The key filter that selects one namespace's objects (or all, for None)."""
    return f"{namespace}.>" if namespace else ">"


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: `*` is one token, a final `>` one or more."""
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


def kv_stream(bucket: str) -> str:
    """The stream that holds a KV bucket (nats-py's naming: `KV_<bucket>`)."""
    return KV_STREAM_TEMPLATE.format(bucket=bucket)


def kv_subject_prefix(bucket: str) -> str:
    """The subject prefix of a bucket's keys (nats-py's naming: `$KV.<bucket>.`)."""
    return KV_PRE_TEMPLATE.format(bucket=bucket)

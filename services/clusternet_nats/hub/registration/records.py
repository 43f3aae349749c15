"""The registration state the hub keeps in its own buckets: bootstrap tokens and credentials.

Tokens are stored by id with only a hash of their secret, so a reader of the bucket cannot
register; a cluster's credential holds the hash of the secret its agent generated. Creating a
credential is a compare-and-set on the cluster id, so of two agents claiming one id only one wins.
"""

from __future__ import annotations

import hmac
import secrets
import string
from datetime import datetime, timedelta

from clusternet_nats.api.meta import Model, utcnow
from clusternet_nats.api.registration import credential_hash
from clusternet_nats.api.subjects import BUCKETS
from clusternet_nats.api.subjects import CREDENTIALS_BUCKET as CREDENTIALS_BUCKET
from clusternet_nats.api.subjects import TOKENS_BUCKET as TOKENS_BUCKET
from clusternet_nats.store.buckets import StoreLayout, ensure_stream, kv_stream_config
from clusternet_nats.store.kv import StatusStore
from nats.js import JetStreamContext

_ALPHABET = string.ascii_lowercase + string.digits


class BootstrapToken(Model):
    token_id: str
    secret_hash: str
    expires: datetime | None = None
    description: str = ""

    def refusal(self, token: str, now: datetime) -> str | None:
        """Why this token may not register, or None."""
        if credential_hash(token) != self.secret_hash:
            return f"bootstrap token {self.token_id!r}: wrong secret"
        if self.expires is not None and now >= self.expires:
            return f"bootstrap token {self.token_id!r} expired at {self.expires.isoformat()}"
        return None


class ClusterCredential(Model):
    cluster_id: str
    namespace: str
    name: str
    secret_hash: str
    approved: bool = False
    revoked: bool = False
    """Its ManagedCluster was deleted: refused from now on, deleted once its links are dropped."""

    def has_secret(self, secret: str) -> bool:
        """Whether `secret` is this cluster's: its hash, compared in constant time."""
        return hmac.compare_digest(credential_hash(secret), self.secret_hash)


def new_token(ttl: timedelta | None, description: str = "") -> tuple[str, BootstrapToken]:
    """A fresh token in Clusternet's format, and the record to store (without its secret)."""
    token_id = "".join(secrets.choice(_ALPHABET) for _ in range(6))
    token = f"{token_id}.{''.join(secrets.choice(_ALPHABET) for _ in range(16))}"
    expires = utcnow() + ttl if ttl else None
    return token, BootstrapToken(
        token_id=token_id, secret_hash=credential_hash(token), expires=expires, description=description
    )


async def ensure_registration_buckets(js: JetStreamContext, layout: StoreLayout | None = None) -> None:
    """Tokens and credentials, with the store's replicas (`--stream-replicas`): losing them to
    one server's disk would lock every cluster out."""
    layout = layout or StoreLayout()
    for name in (bucket.name for bucket in BUCKETS if bucket.registration):
        await ensure_stream(js, kv_stream_config(name, layout))


def token_store(js: JetStreamContext) -> StatusStore[BootstrapToken]:
    return StatusStore(js, TOKENS_BUCKET, BootstrapToken)


def credential_store(js: JetStreamContext) -> StatusStore[ClusterCredential]:
    return StatusStore(js, CREDENTIALS_BUCKET, ClusterCredential)

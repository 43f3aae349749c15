"""NATS auth callout: the hub decides every cluster connection, so credentials need no reload.

The server hands each connection's user and password to `$SYS.REQ.USER.AUTH`; we answer with a
user JWT carrying exactly that identity's permissions (see permissions.py), or with the reason
for refusing it. A cluster's password is the secret its agent generated (we keep only its hash);
anyone else may present a bootstrap token, which grants registration only. A revoked or deleted
record refuses the next connection; `kick` drops the live ones.
"""

from __future__ import annotations

import re
from typing import Any

import nats.errors
import structlog
from clusternet_nats.api.meta import CLUSTER_ID, utcnow
from clusternet_nats.api.registration import credential_hash
from clusternet_nats.hub.registration import jwt, permissions
from clusternet_nats.hub.registration.permissions import Permissions
from clusternet_nats.hub.registration.records import (
    TOKEN_PATTERN,
    ClusterCredential,
    credential_store,
    token_store,
)
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

AUTH_SUBJECT = "$SYS.REQ.USER.AUTH"
DEFAULT_TARGET_ACCOUNT = "CLUSTERNET"
DEFAULT_CREDENTIAL_TTL = 3600.0

log = structlog.get_logger(__name__)


class Refused(Exception):
    """A connection the callout refuses; the message is the reason the server logs."""


class AuthCallout:
    def __init__(
        self,
        auth_nc: NATS,
        js: JetStreamContext,
        issuer_seed: str,
        account: str = DEFAULT_TARGET_ACCOUNT,
        ttl: float = DEFAULT_CREDENTIAL_TTL,
        domain: str | None = None,
    ) -> None:
        self.auth_nc, self.issuer_seed, self.account, self.ttl = auth_nc, issuer_seed, account, ttl
        self.domain = domain
        self.tokens = token_store(js)
        self.credentials = credential_store(js)
        self.refusals = 0

    async def start(self) -> None:
        await self.auth_nc.subscribe(AUTH_SUBJECT, cb=self._handle)

    async def _handle(self, msg: Msg) -> None:
        try:
            request = jwt.decode(msg.data.decode())["nats"]
            server_id, user_nkey = request["server_id"]["id"], request["user_nkey"]
        except (jwt.JwtError, KeyError, UnicodeDecodeError) as err:
            log.warning("callout.bad_request", error=repr(err))
            return
        opts: dict[str, Any] = request.get("connect_opts") or {}
        user, password = str(opts.get("user") or ""), str(opts.get("pass") or "")
        response: dict[str, Any] = {"type": "authorization_response", "version": 2}
        try:
            name, granted = await self.decide(user, password)
            response["jwt"] = self._user_jwt(user_nkey, name, granted)
            log.info("callout.granted", user=name)
        except Refused as err:
            self.refusals += 1
            response["error"] = str(err)
            log.info("callout.refused", user=user, reason=str(err))
        except nats.errors.Error as err:  # the store is unreachable: refuse now, the client retries
            response["error"] = "the hub cannot check credentials right now"
            log.warning("callout.store_unavailable", user=user, error=repr(err))
        await msg.respond(jwt.encode({"sub": user_nkey, "aud": server_id, "nats": response}, self.issuer_seed).encode())

    async def decide(self, user: str, password: str) -> tuple[str, Permissions]:
        """The identity and permissions a user/password pair gets; raises Refused with the reason."""
        if not re.fullmatch(CLUSTER_ID, user):
            raise Refused(f"user {user!r} is not a cluster id")
        cluster_id = user
        found = await self.credentials.get(cluster_id)
        if found is not None and credential_hash(password) == found.value.secret_hash:
            return self._as_cluster(found.value)
        match = TOKEN_PATTERN.match(password)
        if match is None:
            raise Refused(f"cluster {cluster_id}: neither its credentials nor a bootstrap token")
        token = await self.tokens.get(match.group(1))
        if token is None:
            raise Refused(f"bootstrap token {match.group(1)!r} does not exist or was revoked")
        reason = token.value.refusal(password, utcnow())
        if reason:
            raise Refused(reason)
        return f"bootstrap:{cluster_id}", permissions.registering(cluster_id)

    def _as_cluster(self, credential: ClusterCredential) -> tuple[str, Permissions]:
        if credential.revoked:
            raise Refused(f"cluster {credential.cluster_id} was deleted; its credentials are revoked")
        if not credential.approved:
            raise Refused(f"cluster {credential.cluster_id} is not approved yet")
        return credential.cluster_id, permissions.cluster(credential.cluster_id, credential.namespace, self.domain)

    def _user_jwt(self, user_nkey: str, name: str, granted: Permissions) -> str:
        nats: dict[str, Any] = {
            "pub": {"allow": granted.publish},
            "sub": {"allow": granted.subscribe},
            "type": "user",
            "version": 2,
        }
        if granted.responses:
            nats["resp"] = {"max": 1, "ttl": 0}
        claims = {"sub": user_nkey, "aud": self.account, "name": name, "exp": int(utcnow().timestamp() + self.ttl)}
        return jwt.encode({**claims, "nats": nats}, self.issuer_seed)

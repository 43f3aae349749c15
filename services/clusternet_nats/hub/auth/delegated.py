"""Delegated authentication and authorization, as an aggregated apiserver does it: TokenReview and
SubjectAccessReview against the parent kube-apiserver, through kubernetes-asyncio.

Answers are cached briefly (10 s by default, kube's own default for both) so a burst of requests
with one token costs one review, while a revoked token or a removed RoleBinding stops working
within the TTL. The caches are keyed by a digest of the token and by the full attributes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import structlog
from clusternet_nats.hub.auth.attributes import Attributes
from clusternet_nats.hub.auth.cache import DEFAULT_TTL, TtlCache
from clusternet_nats.hub.auth.decision import NO_OPINION, AuthorizationError, Decision, Verdict
from clusternet_nats.hub.auth.tokenfile import digest
from clusternet_nats.hub.auth.user import UserInfo
from clusternet_nats.kube.rest import KubeApi, KubeError

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
REVIEW_TIMEOUT = 10.0
"""Seconds a review may take: a hung API server must fail requests, not hold them forever."""

log = structlog.get_logger(__name__)


class TokenReviewAuthenticator:
    def __init__(self, api: KubeApi, ttl: float = DEFAULT_TTL, failure_ttl: float = DEFAULT_TTL) -> None:
        self.api, self.ttl, self.failure_ttl = api, ttl, failure_ttl
        self._cache: TtlCache[bytes, UserInfo | None] = TtlCache()

    async def authenticate_token(self, token: str) -> UserInfo | None:
        key = digest(token)
        found, cached = self._cache.get(key)
        if found:
            return cached
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            async with asyncio.timeout(REVIEW_TIMEOUT):
                review = await self.api.request("POST", TOKEN_REVIEWS, body=body)
        except (KubeError, TimeoutError) as err:  # not cached: the next request asks again
            log.warning("auth.token_review_failed", server=self.api.server, error=str(err) or repr(err))
            return None
        status = review.get("status") or {}
        user = _user(status.get("user") or {}) if status.get("authenticated") else None
        self._cache.put(key, user, self.ttl if user else self.failure_ttl)
        return user


def _user(data: dict[str, Any]) -> UserInfo | None:
    name = data.get("username")
    if not isinstance(name, str) or not name:
        return None
    extra = {str(k): tuple(str(x) for x in v or ()) for k, v in (data.get("extra") or {}).items()}
    return UserInfo(name, str(data.get("uid") or ""), tuple(str(g) for g in data.get("groups") or ()), extra)


def review_spec(attrs: Attributes) -> dict[str, Any]:
    """The SubjectAccessReview spec asking what `attrs` asks."""
    user = attrs.user
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if attrs.resource_request:
        resource = {
            "namespace": attrs.namespace,
            "verb": attrs.verb,
            "group": attrs.group,
            "version": attrs.version,
            "resource": attrs.resource,
            "subresource": attrs.subresource,
            "name": attrs.name,
        }
        spec["resourceAttributes"] = {k: v for k, v in resource.items() if v}
    else:
        spec["nonResourceAttributes"] = {"path": attrs.path, "verb": attrs.verb}
    return spec


class SubjectAccessReviewAuthorizer:
    def __init__(self, api: KubeApi, allow_ttl: float = DEFAULT_TTL, deny_ttl: float = DEFAULT_TTL) -> None:
        self.api, self.allow_ttl, self.deny_ttl = api, allow_ttl, deny_ttl
        self._cache: TtlCache[str, Decision] = TtlCache()

    async def authorize(self, attrs: Attributes) -> Decision:
        spec = review_spec(attrs)
        key = json.dumps(spec, sort_keys=True)
        found, cached = self._cache.get(key)
        if found and cached is not None:
            return cached
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            async with asyncio.timeout(REVIEW_TIMEOUT):
                review = await self.api.request("POST", SUBJECT_ACCESS_REVIEWS, body=body)
        except (KubeError, TimeoutError) as err:
            raise AuthorizationError(f"SubjectAccessReview at {self.api.server}: {err or 'timed out'}") from None
        status = review.get("status") or {}
        reason = str(status.get("reason") or "")
        if status.get("allowed"):
            decision = Decision(Verdict.ALLOW, reason)
        elif status.get("denied"):
            decision = Decision(Verdict.DENY, reason)
        else:
            decision = Decision(Verdict.NO_OPINION, reason) if reason else NO_OPINION
        self._cache.put(key, decision, self.allow_ttl if decision.allowed else self.deny_ttl)
        return decision

"""The one place every API request is authenticated and authorized, before any handler runs.

A middleware, so no route can be added without it: health probes (`/healthz`, `/readyz`,
`/livez`) are the only anonymous paths; every other request, an unknown path included, needs
credentials (401 otherwise) and an authorizer's yes for what its path asks (403 otherwise).
A refused request never reaches a handler, so it changes nothing in the store.

A route whose path does not say what it touches (the shadow API: the object's namespace and kind
are in the body) is marked `authorizes_itself` and calls `authorize_as` once it knows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from clusternet_nats.hub.auth.attributes import Attributes, resolve
from clusternet_nats.hub.auth.clientcert import certificate_user
from clusternet_nats.hub.auth.decision import AuthorizationError, Authorizer, Verdict
from clusternet_nats.hub.auth.refusals import forbidden, unauthorized
from clusternet_nats.hub.auth.user import UserInfo
from clusternet_nats.hub.errors import ApiError, no_such_path

ANONYMOUS_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
"""kube's `--authorization-always-allow-paths` default, and anonymous here too: probes carry no credentials."""
_SELF_AUTHORIZING = "__clusternet_authorizes_itself__"
_MATCHED = (
    ("namespace", "namespace"),
    ("name", "name"),
    ("group", "group"),
    ("version", "version"),
    ("plural", "resource"),
)

log = structlog.get_logger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


class TokenAuthenticator(Protocol):
    async def authenticate_token(self, token: str) -> UserInfo | None: ...


def bearer_token(request: web.Request) -> str | None:
    """The token of `Authorization: Bearer <token>`, as kube-apiserver reads it."""
    header = request.headers.get("Authorization", "").strip()
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token and " " not in token else None


def authorizes_itself(handler: F) -> F:
    """Marks a handler that authorizes with `authorize_as` once it has read what it touches."""
    setattr(handler, _SELF_AUTHORIZING, True)
    return handler


_USER = web.RequestKey("user", UserInfo)


def user_of(request: web.Request) -> UserInfo:
    user = request.get(_USER)
    if not isinstance(user, UserInfo):
        raise RuntimeError("request was not authenticated; is the gate's middleware installed?")
    return user


class Gate:
    def __init__(self, tokens: Sequence[TokenAuthenticator], authorizers: Sequence[Authorizer]) -> None:
        self.tokens = list(tokens)
        self.authorizers = list(authorizers)

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        """The client certificate's user, else the bearer token's; None when neither is accepted."""
        user = certificate_user(request)
        if user is None:
            token = bearer_token(request)
            if token is not None:
                for authenticator in self.tokens:
                    user = await authenticator.authenticate_token(token)
                    if user is not None:
                        break
        return user.with_authenticated() if user is not None else None

    async def authorize(self, attrs: Attributes) -> None:
        """Returns when some authorizer allows; raises a 403 (or 500 when one could not decide)."""
        reason = ""
        for authorizer in self.authorizers:
            try:
                decision = await authorizer.authorize(attrs)
            except AuthorizationError as err:
                log.error("auth.authorizer_failed", user=attrs.user.name, path=attrs.path, error=str(err))
                raise ApiError(500, "InternalError", f"Internal error occurred: {err}") from None
            if decision.allowed:
                return
            reason = decision.reason or reason
            if decision.verdict is Verdict.DENY:  # an explicit no ends the search, as kube's union does
                break
        log.info(
            "auth.forbidden",
            user=attrs.user.name,
            verb=attrs.verb,
            resource=attrs.qualified_resource,
            namespace=attrs.namespace,
            name=attrs.name,
            path=attrs.path,
        )
        raise forbidden(attrs, reason)

    def middleware(self) -> Middleware:
        @web.middleware
        async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.path in ANONYMOUS_PATHS and request.method in ("GET", "HEAD"):
                return await handler(request)
            user = await self.authenticate(request)
            if user is None:
                log.info("auth.unauthorized", method=request.method, path=request.path, remote=request.remote)
                raise unauthorized()
            request[_USER] = user
            if not getattr(request.match_info.route.handler, _SELF_AUTHORIZING, False):
                attrs = resolve(user, request.method, request.path, request.query)
                await self.authorize(attrs)
                _agrees_with_route(request, attrs)
            return await handler(request)

        return gate


def _agrees_with_route(request: web.Request, attrs: Attributes) -> None:
    """The route must serve what was authorized: a path the router reads differently (an encoded
    slash in a name, say) is refused rather than served under another namespace or name."""
    matched = request.match_info
    for key, field in _MATCHED:
        if key in matched and matched[key] != getattr(attrs, field):
            raise no_such_path()


async def authorize_as(request: web.Request, method: str, path: str) -> None:
    """For `authorizes_itself` handlers: authorize the request as if it were `method path`."""
    gate = request.app[GATE]
    await gate.authorize(resolve(user_of(request), method, path, {}))


GATE = web.AppKey("gate", Gate)

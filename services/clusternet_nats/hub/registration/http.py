"""The hub's HTTP routes for registration: bootstrap tokens (`cnet token create|list|revoke`)
and decisions on pending requests (`cnet approve|deny clsrr NAME`, with `--manual-approval`).

A token's secret is shown once, in the answer to its creation; the bucket keeps only its hash.
"""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web
from clusternet_nats.api.clusters import ClusterRegistrationRequest, ClusterRegistrationRequestStatus
from clusternet_nats.api.registration import (
    APPROVALS_PATH,
    BOOTSTRAP_TOKENS_PATH,
    DENIED,
    PENDING,
    ApprovalDecision,
    BootstrapTokenRequest,
    BootstrapTokenView,
)
from clusternet_nats.api.registry import by_kind
from clusternet_nats.hub.errors import ApiError
from clusternet_nats.hub.registration.records import (
    BootstrapToken,
    ensure_registration_buckets,
    new_token,
    token_store,
)
from clusternet_nats.hub.registration.registrar import approved, placement
from clusternet_nats.store import ObjectStore, StatusStore
from nats.js import JetStreamContext
from pydantic import ValidationError


def _view(record: BootstrapToken, token: str | None = None) -> dict[str, object]:
    view = BootstrapTokenView(
        token_id=record.token_id, expires=record.expires, description=record.description, token=token
    )
    return view.model_dump(mode="json", by_alias=True, exclude_none=True)


class TokenRoutes:
    def __init__(self, js: JetStreamContext) -> None:
        self.js = js
        self.tokens = token_store(js)
        self._ready = False

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(BOOTSTRAP_TOKENS_PATH, self.create)
        app.router.add_get(BOOTSTRAP_TOKENS_PATH, self.list)
        app.router.add_delete(BOOTSTRAP_TOKENS_PATH + "/{token_id}", self.revoke)

    async def _buckets(self) -> None:
        if not self._ready:
            await ensure_registration_buckets(self.js)
            self._ready = True

    async def create(self, request: web.Request) -> web.Response:
        await self._buckets()
        try:
            body = BootstrapTokenRequest.model_validate_json(await request.read() or b"{}")
        except ValidationError as err:
            raise ApiError(422, "Invalid", f"BootstrapTokenRequest is invalid: {err}") from None
        ttl = timedelta(seconds=body.ttl_seconds) if body.ttl_seconds else None
        token, record = new_token(ttl, body.description)
        await self.tokens.put(record.token_id, record, 0)
        return web.json_response(_view(record, token), status=201)

    async def list(self, _: web.Request) -> web.Response:
        await self._buckets()
        items = [_view(self.tokens.decode(data)) for _key, data, _rev in await self.tokens.bucket.entries()]
        return web.json_response({"items": items})

    async def revoke(self, request: web.Request) -> web.Response:
        await self._buckets()
        token_id = request.match_info["token_id"]
        if await self.tokens.get(token_id) is None:
            raise ApiError(404, "NotFound", f'bootstrap token "{token_id}" not found')
        await self.tokens.delete(token_id)
        return web.json_response({"tokenId": token_id, "revoked": True})


class ApprovalRoutes:
    """Moves a Pending ClusterRegistrationRequest to Approved or Denied; the registrar acts on it
    when the agent asks again (it polls while Pending)."""

    def __init__(self, js: JetStreamContext) -> None:
        info = by_kind("ClusterRegistrationRequest")
        self.requests: ObjectStore[ClusterRegistrationRequest] = ObjectStore(js, info)
        self.status = StatusStore(js, info.status_bucket or "", ClusterRegistrationRequestStatus)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(APPROVALS_PATH + "/{name}", self.decide)

    async def decide(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            decision = ApprovalDecision.model_validate_json(await request.read())
        except ValidationError as err:
            raise ApiError(422, "Invalid", f"ApprovalDecision is invalid: {err}") from None
        crr = await self.requests.get(None, name)
        current = await self.status.get(self.requests.key(None, name))
        if crr is None or current is None:
            raise ApiError(404, "NotFound", f'clusterregistrationrequests "{name}" not found')
        if current.value.result != PENDING:
            raise ApiError(409, "Conflict", f'clusterregistrationrequests "{name}" is already {current.value.result}')
        status = (
            approved(*placement(crr.spec))
            if decision.approved
            else ClusterRegistrationRequestStatus(
                result=DENIED, error_message=decision.reason or "denied by an administrator"
            )
        )
        await self.status.put(self.requests.key(None, name), status, current.revision)
        return web.json_response({"name": name, "result": status.result})

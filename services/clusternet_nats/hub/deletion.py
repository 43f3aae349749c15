"""DeleteOptions: kubectl's body (or query) on DELETE, read as kube-apiserver reads it.

propagationPolicy here:
* Background (the default for our kinds, as for custom resources): the object goes at once;
  what was made from it (a Subscription's Bases and Descriptions) is removed afterwards by its
  controller, which reconciles towards "no Subscription, no Descriptions".
* Foreground and Orphan are accepted and behave as Background: dependents are not kept alive
  behind a finalizer nor detached, because our controllers own their objects by name, not by a
  garbage collector (see the hub's notes).
Preconditions (uid, resourceVersion) that do not hold are a 409, as on kube-apiserver.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from clusternet_nats.api import KindInfo, KubeObject
from clusternet_nats.api.yamljson import DecodeError, load_json
from clusternet_nats.hub.bodies import dry_run
from clusternet_nats.hub.errors import ApiError, bad_request, resource
from clusternet_nats.hub.watch import spec_revision

PROPAGATION_POLICIES = ("Background", "Foreground", "Orphan")


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str = "Background"
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False

    def check(self, info: KindInfo, obj: KubeObject) -> None:
        """409 when a precondition does not hold for the object about to be deleted."""
        meta = obj.metadata
        if self.uid is not None and self.uid != meta.uid:
            raise _precondition(info, obj, f"UID in precondition: {self.uid}, UID in object meta: {meta.uid}")
        if self.resource_version is not None and spec_revision(self.resource_version) != meta.resource_version:
            raise _precondition(
                info,
                obj,
                f"ResourceVersion in precondition: {self.resource_version}, "
                f"ResourceVersion in object meta: {meta.resource_version}",
            )


def _precondition(info: KindInfo, obj: KubeObject, what: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource(info)} "{obj.name}": Precondition failed: {what}',
        {"name": obj.name, "group": info.group, "kind": info.plural},
    )


async def delete_options(request: web.Request) -> DeleteOptions:
    """The options from the body (optional) and the query; 400 naming a field that is wrong."""
    raw = await request.read()
    body: object = {}
    if raw.strip():
        try:
            body = load_json(raw)
        except DecodeError as err:
            raise bad_request(f"the DeleteOptions body is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a DeleteOptions object")
    policy = request.query.get("propagationPolicy") or body.get("propagationPolicy") or "Background"
    if policy not in PROPAGATION_POLICIES:
        raise bad_request(f"{policy!r}: supported values: {', '.join(PROPAGATION_POLICIES)}", "propagationPolicy")
    if body.get("orphanDependents") is not None and "propagationPolicy" in body:
        raise bad_request("orphanDependents and propagationPolicy cannot be both set", "propagationPolicy")
    if body.get("orphanDependents") is True:
        policy = "Orphan"
    preconditions = body.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise bad_request("must be an object", "preconditions")
    body_dry_run = body.get("dryRun") or []
    if body_dry_run not in ([], ["All"]):
        raise bad_request(f"supported values: 'All', not {body_dry_run!r}", "dryRun")
    return DeleteOptions(
        propagation=policy,
        uid=_text(preconditions, "uid"),
        resource_version=_text(preconditions, "resourceVersion"),
        dry_run=dry_run(request) or bool(body_dry_run),
    )


def _text(preconditions: dict[str, object], key: str) -> str | None:
    value = preconditions.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request("must be a string", f"preconditions.{key}")
    return value

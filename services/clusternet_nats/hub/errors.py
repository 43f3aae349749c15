"""Failures as Kubernetes `Status` bodies, so clients written for kube-apiserver understand them.

Handlers raise ApiError; one middleware turns it into the response, so no handler formats an
error itself and every failure (validation, conflict, unknown path, crash) has the same shape.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from clusternet_nats.api import KindInfo, ObjectError, ObjectErrors
from clusternet_nats.store import AlreadyExistsError, ConflictError, NotFoundError
from clusternet_nats.store.errors import InvalidError, UndecodableError


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body

    def response(self) -> web.Response:
        response = web.json_response(self.body(), status=self.code)
        retry = (self.details or {}).get("retryAfterSeconds")
        if retry is not None:  # as kube-apiserver: clients (client-go, cnet) wait and try again
            response.headers["Retry-After"] = str(retry)
        return response


def resource(info: KindInfo) -> str:
    """`subscriptions.apps.clusternet.io`, as kube-apiserver names a resource in messages."""
    return f"{info.plural}.{info.group}"


def _object_details(info: KindInfo, name: str) -> dict[str, Any]:
    return {"name": name, "group": info.group, "kind": info.plural}


def no_such_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def not_found(info: KindInfo, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource(info)} "{name}" not found', _object_details(info, name))


def already_exists(info: KindInfo, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{resource(info)} "{name}" already exists', _object_details(info, name))


def conflict(info: KindInfo, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource(info)} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        _object_details(info, name),
    )


def undecodable(err: UndecodableError) -> ApiError:
    """422 naming the bucket and key of a stored value that no longer decodes: not the hub's
    failure (a 500), nor a retryable one; DELETE of that name removes it."""
    return ApiError(422, "Invalid", f"{err}; delete it to recover", {"name": err.key, "group": "", "kind": err.bucket})


def bad_request(message: str, field: str = "") -> ApiError:
    details = {"causes": [{"reason": "FieldValueInvalid", "field": field, "message": message}]} if field else None
    return ApiError(400, "BadRequest", f"{field}: {message}" if field else message, details)


def invalid(error: ObjectError, group: str, name: str) -> ApiError:
    """422 naming every invalid field, worded as kube-apiserver words it."""
    errors = error.errors if isinstance(error, ObjectErrors) else [error]
    causes = [{"reason": "FieldValueInvalid", "field": e.field, "message": e.message} for e in errors]
    described = [f"{e.field}: {e.message}" if e.field else e.message for e in errors]
    summary = described[0] if len(described) == 1 else f"[{', '.join(described)}]"
    qualified = f"{error.kind}.{group}" if group else error.kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {summary}',
        {"name": name, "group": group, "kind": error.kind, "causes": causes},
    )


@contextlib.contextmanager
def store_errors(info: KindInfo, name: str) -> Iterator[None]:
    """Translates the store's errors about one object into the API's."""
    try:
        yield
    except AlreadyExistsError:
        raise already_exists(info, name) from None
    except InvalidError as err:
        raise ApiError(
            422, "Invalid", f'{info.kind} "{name}" is invalid: {err.detail}', _object_details(info, name)
        ) from None
    except ConflictError:
        raise conflict(info, name) from None
    except NotFoundError:
        raise not_found(info, name) from None

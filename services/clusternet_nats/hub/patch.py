"""PATCH bodies as kube-apiserver reads them for custom resources.

JSON merge patch (RFC 7386) and JSON patch (RFC 6902, by `jsonpatch`) apply to the object as
users see it; strategic merge patch needs Go struct tags our kinds do not have, so it is a 415
worded as kube-apiserver words it for CRs (kubectl then falls back to a merge patch). Server-side
apply is hub/apply.py.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
from clusternet_nats.domain.patches import merge_patch
from clusternet_nats.hub.bodies import decode, within_limits
from clusternet_nats.hub.errors import ApiError, bad_request

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)


def unsupported(content_type: str) -> ApiError:
    if content_type == STRATEGIC_MERGE_PATCH:
        message = "the body of the request was in an unknown format - accepted media types include: " + ", ".join(
            PATCH_TYPES
        )
    else:
        message = f"the media type {content_type!r} is not a patch type; accepted media types include: " + ", ".join(
            PATCH_TYPES
        )
    return ApiError(415, "UnsupportedMediaType", message)


async def apply_patch(current: dict[str, Any], content_type: str, raw: bytes) -> dict[str, Any]:
    """`current` with a merge or JSON patch applied; 400 for a body that is not one, 422 for a
    JSON patch that does not apply (a failed `test`, a missing path) or whose result is over the
    reader's limits (a patch can nest deeper than either part did)."""
    patch = await decode(raw, "the patch")
    if content_type == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request(f"a merge patch must be a JSON object, not {type(patch).__name__}")
        result = merge_patch(current, patch)
    else:
        if not isinstance(patch, list):
            raise bad_request(f"a JSON patch must be a JSON array of operations, not {type(patch).__name__}")
        try:
            result = jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
            raise ApiError(422, "Invalid", f"the JSON patch could not be applied: {err}") from None
    if not isinstance(result, dict):
        raise bad_request("the patched object must be a JSON object")
    return within_limits(result, "the patched object")

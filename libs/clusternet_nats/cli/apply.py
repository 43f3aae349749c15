"""`cnet apply` and `cnet delete -f`: files to objects, and objects to the hub's paths.

Everything is loaded and validated before the first request, so a bad document anywhere
applies nothing. Ordinary Kubernetes objects go to the shadow path, as they would to a
Clusternet hub, and are reported under their own kind with the Manifest that holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusternet_nats.api import KubeObject, Manifest, ObjectError, ObjectErrors, by_kind, load_path, parse_object
from clusternet_nats.api.paths import SHADOW_OBJECTS_PATH, object_path
from clusternet_nats.cli.client import HubClient
from clusternet_nats.cli.columns import resource_name


def load_files(paths: Sequence[Path]) -> list[KubeObject]:
    """Every object in every file or directory; raises ObjectErrors listing every problem."""
    objects: list[KubeObject] = []
    errors: list[ObjectError] = []
    for path in paths:
        try:
            objects.extend(load_path(path))
        except ObjectErrors as err:
            errors.extend(err.errors)
        except ObjectError as err:
            errors.append(err)
    if errors:
        raise ObjectErrors(errors)
    return objects


def _shadowed(obj: KubeObject) -> dict[str, Any] | None:
    """The ordinary object a Manifest was made from, when the loader wrapped it (not user-written)."""
    if not isinstance(obj, Manifest):
        return None
    try:
        return obj.template if parse_object(obj.template) == obj else None
    except ObjectError:
        return None


@dataclass(frozen=True)
class Target:
    """Where one loaded object goes and how to name it to the user."""

    obj: KubeObject
    shadowed: dict[str, Any] | None

    @classmethod
    def of(cls, obj: KubeObject) -> Target:
        return cls(obj, _shadowed(obj))

    @property
    def path(self) -> str:
        info = by_kind(self.obj.kind)
        return object_path(info, self.obj.metadata.namespace, self.obj.name)

    @property
    def resource(self) -> str:
        """`subscription.apps.clusternet.io`, or `deployment.apps` for a wrapped Deployment."""
        if self.shadowed is None:
            return resource_name(by_kind(self.obj.kind))
        group = str(self.shadowed["apiVersion"]).rpartition("/")[0]
        kind = str(self.shadowed["kind"]).lower()
        return f"{kind}.{group}" if group else kind

    @property
    def name(self) -> str:
        return str(self.shadowed["metadata"]["name"]) if self.shadowed else self.obj.name

    def applied(self, created: bool) -> str:
        line = f"{self.resource}/{self.name} {'created' if created else 'configured'}"
        return f"{line} (manifest {self.obj.namespace}/{self.obj.name})" if self.shadowed else line

    def validated(self) -> str:
        return f"{self.resource}/{self.name} valid (dry run)"


def _body(obj: KubeObject) -> dict[str, Any]:
    body = obj.to_json_dict()
    body.pop("status", None)
    return body


async def apply_one(client: HubClient, target: Target) -> str:
    if target.shadowed is not None:
        code, _ = await client.request("PUT", SHADOW_OBJECTS_PATH, target.shadowed)
    else:
        code, _ = await client.request("PUT", target.path, _body(target.obj))
    return target.applied(code == 201)


async def delete_one(client: HubClient, path: str, resource: str, name: str) -> str:
    await client.request("DELETE", path)
    return f'{resource} "{name}" deleted'

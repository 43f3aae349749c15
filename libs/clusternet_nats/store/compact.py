"""Decoded objects an informer keeps, made smaller without changing what they say.

Pydantic keeps with every model instance the set of fields that were given
(`__pydantic_fields_set__`): 216 to 728 bytes a set, one per nested model, while the sets of
10,000 clusters' ManagedClusters or Bases are the same few. A decoded Base was 4.0 KiB, of which
1.8 KiB were these sets. `share_field_sets` points each cached model (and the models inside it)
at one set per model class and distinct content.

Only `exclude_unset` dumps and `model_fields_set` read the set, and the project uses neither;
equality ignores it; `model_copy` copies it. An informer's objects are read-only (store/informer.py),
so nothing adds to a shared set; were a field assigned on one anyway, the set would gain a name
that, for its other holders, only `exclude_unset` would notice.

A model already holding its shared set was walked before (a copy gets a set of its own), so it is
not walked again: the 10,000 Descriptions a rollout writes share one rendered spec, and each
costs the walk of its own metadata only.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_SHARED: dict[tuple[type[BaseModel], frozenset[str]], set[str]] = {}


def share_field_sets(value: Any) -> None:
    """Makes `value` (a model, or a list or tuple of them) and every model in its fields hold a
    shared fields-set. Plain dicts are entered only when they hold models or lists (a manifest's
    JSON or a label map is not walked)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseModel):
            given = item.__pydantic_fields_set__
            key = (type(item), frozenset(given))
            shared = _SHARED.get(key)
            if shared is None:
                shared = _SHARED[key] = set(given)
            if given is shared:
                continue  # walked before, with all it holds
            object.__setattr__(item, "__pydantic_fields_set__", shared)
            stack.extend(field for field in item.__dict__.values() if _may_hold_models(field))
        elif isinstance(item, (list, tuple)):
            stack.extend(element for element in item if _may_hold_models(element))
        elif isinstance(item, dict):
            stack.extend(element for element in item.values() if _may_hold_models(element))


def _may_hold_models(value: Any) -> bool:
    if isinstance(value, BaseModel):
        return True
    if isinstance(value, (list, tuple)):
        return bool(value) and isinstance(value[0], (BaseModel, list, tuple))
    if isinstance(value, dict):
        first = next(iter(value.values()), None)
        return isinstance(first, (BaseModel, list))
    return False

"""Warnings recorded once per problem, not once per reconcile.

A level-triggered reconcile runs again on every related change and finds a standing problem (a
missing feed, a bad override, a failed Description) each time; Kubernetes' recorder folds such
repeats into one Event with a count, and this does the same by remembering, per object and
subject, the last warning recorded until the problem is resolved or says something new.
"""

from __future__ import annotations

from collections import OrderedDict

from clusternet_nats.api.meta import KubeObject
from clusternet_nats.store import EventRecorder

_Key = tuple[str, str, str, str]
MAX_REMEMBERED = 10_000


class Warnings:
    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder
        self._last: OrderedDict[_Key, tuple[str, str]] = OrderedDict()

    @staticmethod
    def _key(obj: KubeObject, subject: str) -> _Key:
        return obj.kind, obj.namespace, obj.name, subject

    async def warn(self, obj: KubeObject, subject: str, reason: str, message: str) -> None:
        key = self._key(obj, subject)
        if self._last.get(key) == (reason, message):
            return
        self._last[key] = (reason, message)
        self._last.move_to_end(key)
        if len(self._last) > MAX_REMEMBERED:
            self._last.popitem(last=False)
        await self._recorder.warning(obj, reason, message)

    def resolve(self, obj: KubeObject, subject: str) -> None:
        """The problem about `subject` is gone: its next occurrence is news again."""
        self._last.pop(self._key(obj, subject), None)

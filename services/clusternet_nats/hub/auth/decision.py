"""What an authorizer answers, as Kubernetes' authorizers do: allow, deny, or no opinion."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from clusternet_nats.hub.auth.attributes import Attributes


class Verdict(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


NO_OPINION = Decision(Verdict.NO_OPINION)


class Authorizer(Protocol):
    async def authorize(self, attrs: Attributes) -> Decision: ...


class AuthorizationError(Exception):
    """The authorizer could not decide (e.g. the Kubernetes API was unreachable): a 500, as on kube-apiserver."""

"""The identity a request was authenticated as, in Kubernetes' terms."""

from __future__ import annotations

from dataclasses import dataclass, field

SYSTEM_MASTERS = "system:masters"
"""Always admin, as on kube-apiserver (and the delegated authorizer of aggregated apiservers)."""
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    def with_authenticated(self) -> UserInfo:
        """Adds `system:authenticated`, as kube-apiserver does for every authenticated user."""
        if AUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)

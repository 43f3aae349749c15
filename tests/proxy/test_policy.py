"""The hub's own policy for `sockets/<cluster-id>/proxy`: a binding lists the clusters its users
may reach; the path is resolved as kube-apiserver resolves it (resource sockets, subresource proxy)."""

from __future__ import annotations

from clusternet_nats.api.proxy import PROXY_PREFIX
from clusternet_nats.hub.auth.attributes import resolve
from clusternet_nats.hub.auth.decision import Verdict
from clusternet_nats.hub.auth.policy import PolicyAuthorizer, parse_policy
from clusternet_nats.hub.auth.user import UserInfo

POLICY = """
bindings:
  - {role: view, users: [alice], clusters: [c-1]}
  - {role: edit, groups: [ops], clusters: ["*"]}
  - {role: edit, users: [eve]}
"""


async def _allowed(user: UserInfo, method: str, cluster: str) -> bool:
    attrs = resolve(user, method, f"{PROXY_PREFIX}{cluster}/proxy/direct/api/v1/pods", {})
    assert (attrs.resource, attrs.subresource, attrs.name) == ("sockets", "proxy", cluster)
    decision = await PolicyAuthorizer(parse_policy(POLICY)).authorize(attrs)
    return decision.verdict is Verdict.ALLOW


async def test_a_binding_reaches_the_clusters_it_lists_with_any_verb() -> None:
    alice, ops, eve = UserInfo("alice"), UserInfo("olga", groups=("ops",)), UserInfo("eve")
    assert await _allowed(alice, "GET", "c-1") and await _allowed(alice, "POST", "c-1")
    assert not await _allowed(alice, "GET", "c-2")
    assert await _allowed(ops, "DELETE", "c-2")
    assert not await _allowed(eve, "GET", "c-1"), "an unscoped edit binding without clusters reaches none"

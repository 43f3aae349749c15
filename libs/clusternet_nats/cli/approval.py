"""`cnet approve|deny clsrr NAME`: decide a ClusterRegistrationRequest the hub holds Pending
(hub started with `--manual-approval`), as an administrator does in Clusternet."""

from __future__ import annotations

from clusternet_nats.api.registration import APPROVALS_PATH, ApprovalDecision
from clusternet_nats.api.registry import resolve
from clusternet_nats.cli.client import HubClient


def check_kind(kind: str) -> None:
    """Only ClusterRegistrationRequests are approved; raises ValueError naming the kind."""
    if resolve(kind).kind != "ClusterRegistrationRequest":
        raise ValueError(f"only clusterregistrationrequests (clsrr) can be approved or denied, not {kind!r}")


async def decide(client: HubClient, name: str, approved: bool, reason: str = "") -> str:
    body = ApprovalDecision(approved=approved, reason=reason).model_dump(by_alias=True)
    _, data = await client.request("POST", f"{APPROVALS_PATH}/{name}", body)
    return str(data.get("result", ""))

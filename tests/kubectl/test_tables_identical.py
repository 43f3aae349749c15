"""`kubectl get` and `cnet get` print the same bytes: the hub's Table columns are cnet's, and cnet pads
cells as kubectl's tabwriter does (at least 6 wide, 3 spaces apart)."""

from __future__ import annotations

import re

from clusternet_nats.hub.testing import ServedHub
from clusternet_nats.testing.waiting import eventually

from tests.cli.conftest import run_cnet
from tests.hub.objects import subs_path, subscription

from .conftest import Kubectl

_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")


async def test_kubectl_and_cnet_print_identical_tables(
    kubectl: Kubectl, served_hub: ServedHub, unique_ns: str
) -> None:
    async with served_hub.session() as http:
        for name, strategy in (("web", "Replication"), ("a-much-longer-name", "Dividing")):
            body = subscription(unique_ns, name, schedulingStrategy=strategy)
            async with http.post(subs_path(unique_ns), json=body) as resp:
                assert resp.status == 201, await resp.text()

    for args in (
        ["get", "subs", "-n", unique_ns],
        ["get", "subs", "-n", unique_ns, "-o", "wide"],
        ["get", "subs", "web", "-n", unique_ns],
    ):

        async def same(args: list[str] = args) -> tuple[str, str] | None:
            """Both outputs, once they agree (an age may tick over between the two commands)."""
            printed = await kubectl(*args)
            assert printed.returncode == 0, printed.stderr
            cnet = await run_cnet(*served_hub.cnet_args(), *args)
            assert cnet.exit_code == 0, cnet.output
            ours = "".join(line for line in cnet.output.splitlines(True) if not _LOG_LINE.match(line))
            return (printed.stdout, ours) if printed.stdout == ours else None

        kubectls, cnets = await eventually(same, timeout=20, what=f"kubectl and cnet print the same for {args}")
        assert kubectls == cnets and kubectls.startswith("NAME"), args

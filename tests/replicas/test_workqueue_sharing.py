"""The work queue's side of sharing keys (store/workqueue.py: share, take_owned, let_go): keys
another replica owns wait aside and come back when this one takes them; letting go puts aside
what is queued and stops what runs, so it is never reconciled here and there at once."""

from __future__ import annotations

import asyncio

from clusternet_nats.store import WorkQueue
from clusternet_nats.testing.waiting import eventually


class Owner:
    """Which keys this replica owns: a set the test changes, as Partitions would."""

    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)

    def __call__(self, key: str) -> bool:
        return key in self.keys


async def test_keys_owned_elsewhere_wait_aside_until_taken() -> None:
    done: list[str] = []

    async def reconcile(key: str) -> None:
        done.append(key)

    owner = Owner("a")
    queue = WorkQueue("sharing", reconcile)
    queue.share(owner)
    queue.start()
    try:
        for key in ("a", "b", "c"):
            queue.add(key)
        await asyncio.wait_for(queue.wait_idle(), 10)
        assert done == ["a"]  # b and c belong to another replica: not reconciled, not lost
        owner.keys |= {"b"}
        queue.take_owned()
        await eventually(lambda: done == ["a", "b"], what="b reconciled once taken")
        await asyncio.wait_for(queue.wait_idle(), 10)
        assert "c" not in done
    finally:
        await queue.stop()


async def test_let_go_stops_a_running_reconcile_and_keeps_its_key() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    runs: list[str] = []

    async def reconcile(key: str) -> None:
        runs.append(key)
        started.set()
        await release.wait()  # a reconcile that would outlive the lease

    owner = Owner("k")
    queue = WorkQueue("sharing", reconcile)
    queue.share(owner)
    queue.start()
    try:
        queue.add("k")
        await asyncio.wait_for(started.wait(), 10)
        owner.keys.clear()
        await queue.let_go(timeout=0)  # returns only once nothing of "k" runs here
        await asyncio.wait_for(queue.wait_idle(), 10)
        started.clear()
        queue.add("k")  # a change while another replica owns it: kept aside
        await asyncio.wait_for(queue.wait_idle(), 10)
        assert runs == ["k"]
        owner.keys.add("k")
        release.set()
        queue.take_owned()
        await asyncio.wait_for(started.wait(), 10)
        assert runs == ["k", "k"]  # taken back: reconciled again, nothing left behind
    finally:
        release.set()
        await queue.stop()

"""Simulated clusters' state on disk: one database per state directory, a row per cluster, so an
agent process hosting thousands of clusters writes them in a few transactions, and each cluster
restarts as it was left."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from clusternet_nats.agent.backends.base import ObjectRef
from clusternet_nats.agent.backends.sim import SimCluster, Sizing
from clusternet_nats.agent.backends.sim.persistence import saved_states
from clusternet_nats.agent.statedb import StateDatabase, closed, opened
from clusternet_nats.testing.waiting import eventually

OWNER = "clusternet-abcde.app-generic"


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data}


def names(state: dict[str, Any]) -> set[str]:
    return {item["ref"][3] for item in state["objects"] if item["ref"][1] == "ConfigMap"}


async def test_clusters_sharing_a_directory_each_restart_with_their_own_objects(tmp_path: Path) -> None:
    assert saved_states(tmp_path) == {}
    first, second = SimCluster("one", Sizing(nodes=1), tmp_path), SimCluster("two", Sizing(nodes=1), tmp_path)
    for cluster in (first, second):
        await cluster.start()
    await first.apply(OWNER, [configmap("a", {"k": "1"})])
    await second.apply(OWNER, [configmap("b", {"k": "2"})])
    # Closing writes what is pending at once, whatever the debounce.
    await first.close()
    await second.close()
    states = saved_states(tmp_path)
    assert (names(states["one"]), names(states["two"])) == ({"a"}, {"b"})

    again = SimCluster("one", Sizing(nodes=1), tmp_path)
    await again.start()
    stored = again.objects.get(ObjectRef("v1", "ConfigMap", "default", "a"))
    assert stored is not None and stored.body["data"] == {"k": "1"}
    assert again.objects.get(ObjectRef("v1", "ConfigMap", "default", "b")) is None
    version = stored.body["metadata"]["resourceVersion"]
    # What was applied came back too: the same manifest again writes nothing.
    outcome = await again.apply(OWNER, [configmap("a", {"k": "1"})])
    assert outcome.failures == [] and stored.body["metadata"]["resourceVersion"] == version
    await again.apply(OWNER, [configmap("a", {"k": "3"})])
    await again.close()
    assert saved_states(tmp_path)["one"]["objects"][-1]["body"]["data"] == {"k": "3"}
    assert names(saved_states(tmp_path)["two"]) == {"b"}


async def test_a_burst_of_changes_to_many_clusters_is_written_whole_with_each_ones_last_state(tmp_path: Path) -> None:
    clusters = [SimCluster(f"c{i}", Sizing(nodes=1), tmp_path) for i in range(150)]
    for cluster in clusters:
        await cluster.start()
    for round_ in range(3):
        for cluster in clusters:
            await cluster.apply(OWNER, [configmap("cfg", {"round": str(round_)})])
    for cluster in clusters:
        await cluster.close()
    states = saved_states(tmp_path)
    assert sorted(states) == sorted(f"c{i}" for i in range(150))
    rounds = {next(o["body"]["data"]["round"] for o in s["objects"] if o["ref"][3] == "cfg") for s in states.values()}
    assert rounds == {"2"}


async def test_a_change_is_written_after_the_debounce_without_any_close(tmp_path: Path) -> None:
    # An agent killed without closing loses at most the last debounce's changes.
    cluster = SimCluster("kept", Sizing(nodes=1), tmp_path)
    await cluster.start()
    await cluster.apply(OWNER, [configmap("cfg", {"k": "1"})])

    async def written() -> bool:
        state = saved_states(tmp_path).get("kept")
        return state is not None and names(state) == {"cfg"}

    await eventually(written, 10, what="state written without a close")
    restarted = SimCluster("kept", Sizing(nodes=1), tmp_path)
    await restarted.start()
    assert restarted.objects.get(ObjectRef("v1", "ConfigMap", "default", "cfg")) is not None
    await restarted.close()
    await cluster.close()


OPEN_AND_LOAD = """
import asyncio, sys
from pathlib import Path
from clusternet_nats.agent.backends.sim.persistence import StateFile
from clusternet_nats.agent.backends.sim import persistence
sys.stdin.readline()  # every process starts, then all open the new database at once
state = StateFile(Path(sys.argv[1]), sys.argv[2], lambda: {"objects": {}})
asyncio.run(state.load())
print("opened")
"""


def test_agent_processes_opening_a_new_database_at_once_all_open_it(tmp_path: Path) -> None:
    """Agent processes sharing a state directory start together (the lifecycle system's two):
    SQLite refused one's set-up at once with "database is locked", and its agent never started."""
    for attempt in range(5):
        directory = tmp_path / f"state-{attempt}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_LOAD, str(directory), f"c{i}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(6)
        ]
        for proc in procs:  # every one is waiting on its stdin: release them together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        outcomes = []
        for proc in procs:
            assert proc.stdout is not None and proc.stderr is not None
            outcomes.append((proc.stdout.read(), proc.stderr.read()))
            proc.wait(timeout=60)
        assert all(out.strip() == "opened" for out, _ in outcomes), [err[-400:] for _, err in outcomes]


async def test_clusters_starting_at_once_read_their_rows_in_a_few_queries(tmp_path: Path) -> None:
    """A process starting thousands of clusters asks for their rows together: one query and one
    thread hop per batch, not per cluster, and each cluster still gets its own row."""
    before = [SimCluster(f"c{i}", Sizing(nodes=1), tmp_path) for i in range(600)]
    for i, cluster in enumerate(before[:400]):
        await cluster.start()
        await cluster.apply(OWNER, [configmap(f"m{i}", {"k": str(i)})])
    await asyncio.gather(*(cluster.close() for cluster in before))

    reads: list[int] = []
    read = StateDatabase._read

    def counted(self: StateDatabase, wanted: list[str]) -> dict[str, str]:
        reads.append(len(wanted))
        return read(self, wanted)

    again = [SimCluster(f"c{i}", Sizing(nodes=1), tmp_path) for i in range(600)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StateDatabase, "_read", counted)
        await asyncio.gather(*(cluster.start() for cluster in again))
    assert sum(reads) == 600 and len(reads) <= 3, reads
    for i, cluster in enumerate(again):
        mine = {o.ref.name for o in cluster.objects if o.ref.kind == "ConfigMap"}
        assert mine == ({f"m{i}"} if i < 400 else set()), cluster.name
    await asyncio.gather(*(cluster.close() for cluster in again))


async def test_loads_waiting_on_a_reader_that_is_stopped_are_cancelled_not_left_hanging(tmp_path: Path) -> None:
    """At shutdown the reader may be cancelled before it ran: its askers are cancelled too."""
    database = opened(tmp_path / "state.sqlite3")
    try:
        loads = [asyncio.create_task(database.load(f"c{i}")) for i in range(5)]
        await asyncio.sleep(0)  # the loads asked: a reader is made, and has not run yet
        assert database._reader is not None and not database._reader.done()
        database._reader.cancel()
        results = await asyncio.wait_for(asyncio.gather(*loads, return_exceptions=True), 10)
        assert all(isinstance(r, asyncio.CancelledError) for r in results), results
        assert await database.load("c0") is None  # a later load starts a reader of its own

        # Cancelled in the middle of its read: the batch it took is cancelled as well.
        reading, release = threading.Event(), threading.Event()
        read = StateDatabase._read

        def slow(self: StateDatabase, wanted: list[str]) -> dict[str, str]:
            reading.set()
            release.wait(10)
            return read(self, wanted)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(StateDatabase, "_read", slow)
            loads = [asyncio.create_task(database.load(f"c{i}")) for i in range(5)]
            await asyncio.to_thread(reading.wait, 10)
            assert database._reader is not None
            database._reader.cancel()
            results = await asyncio.wait_for(asyncio.gather(*loads, return_exceptions=True), 10)
            release.set()
        assert all(isinstance(r, asyncio.CancelledError) for r in results), results
    finally:
        await closed(database)

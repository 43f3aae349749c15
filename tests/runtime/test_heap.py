"""A service process hands its heap's free pages back now and then; a test process is left alone."""

from __future__ import annotations

import asyncio
import gc

import pytest
from clusternet_nats.runtime import heap
from clusternet_nats.testing.waiting import eventually


async def test_a_tuned_process_trims_its_heap_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: trims.append)
    task = asyncio.create_task(heap.return_freed(0.01))
    try:
        await eventually(lambda: len(trims) >= 3, timeout=10, what="three trims")
    finally:
        task.cancel()
    assert trims[:3] == [0, 0, 0], "malloc_trim(0): every arena, keeping nothing at the top"


async def test_an_untuned_process_or_a_libc_without_malloc_trim_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: trims.append)
    monkeypatch.setattr(heap, "_tuned", False)
    await asyncio.wait_for(heap.return_freed(0.01), 5)
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    await asyncio.wait_for(heap.return_freed(0.01), 5)
    assert trims == []


def test_glibc_offers_malloc_trim_here() -> None:
    """The machines we ship to run glibc (Debian images): the trim is really there."""
    assert heap._malloc_trim() is not None


async def test_a_tuned_process_builds_with_the_collector_off_then_settles_what_it_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settled: list[bool] = []
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "settle", lambda: settled.append(gc.isenabled()))
    assert gc.isenabled()
    try:
        with heap.building():
            assert not gc.isenabled(), "no collection while the clusters start"
        assert gc.isenabled() and settled == [True], "on again, and what was built settled once"
        with pytest.raises(RuntimeError), heap.building():
            raise RuntimeError("a cluster failed to start")
        assert gc.isenabled() and settled == [True], "a failed start is not settled"
    finally:
        gc.enable()


async def test_the_collector_comes_back_after_the_limit_if_the_start_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_tuned", True)
    monkeypatch.setattr(heap, "settle", lambda: None)
    try:
        with heap.building(limit=0.01):
            await eventually(gc.isenabled, timeout=10, what="the collector on again after the limit")
    finally:
        gc.enable()


async def test_an_untuned_process_builds_with_the_collector_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    settled: list[bool] = []
    monkeypatch.setattr(heap, "_tuned", False)
    monkeypatch.setattr(heap, "settle", lambda: settled.append(True))
    with heap.building():
        assert gc.isenabled()
    assert settled == []

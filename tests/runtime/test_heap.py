"""A service process hands its heap's free pages back now and then; a test process is left alone."""

from __future__ import annotations

import asyncio

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

"""Service processes run on uvloop unless told otherwise, and a wrong choice is refused by name."""

from __future__ import annotations

import asyncio

import pytest
from clusternet_nats.runtime import eventloop


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def test_runs_on_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.ENV, raising=False)
    assert eventloop.run(_loop_module()) == "uvloop"


def test_the_standard_loop_can_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.ENV, "asyncio")
    assert eventloop.run(_loop_module()) == "asyncio"


def test_an_unknown_loop_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.ENV, "trio")
    with pytest.raises(SystemExit, match="CNET_EVENT_LOOP='trio'"):
        eventloop.run(_loop_module())

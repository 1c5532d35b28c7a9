"""Checks on a running :class:`~zerda_async.AsyncContextEngine`."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from zerda_async import AsyncContextEngine

__all__ = ["assert_idle", "wait_until"]


def assert_idle(engine: AsyncContextEngine) -> None:
    """Nothing pending, no single-flight entry left, every slot free."""
    stats = engine.statistics()
    assert not stats.in_flight, f"pending requests left: {stats.in_flight}"
    assert not stats.single_flights, f"single-flight entries left: {stats.single_flights}"
    assert stats.free_slots == stats.max_in_flight


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` on the event loop until it holds (fails after ``timeout``)."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.001)

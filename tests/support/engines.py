"""Checks on a running :class:`~zerda_async.AsyncContextEngine`."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from zerda_async import AsyncContextEngine

__all__ = ["assert_idle", "wait_until"]


def assert_idle(engine: AsyncContextEngine) -> None:
    """Nothing pending, no single-flight entry left, every slot free."""
    runner = engine._runner
    assert not runner._pending, f"pending requests left: {runner._pending}"
    assert not runner._by_cache_key, f"single-flight entries left: {runner._by_cache_key}"
    assert runner.slots.value == runner.settings.max_in_flight


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` on the event loop until it holds (fails after ``timeout``)."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.001)

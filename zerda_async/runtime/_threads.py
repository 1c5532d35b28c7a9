"""The thread hop: a sync function in a worker thread that a cancelled caller can abandon.

:func:`run_in_thread` runs a sync function in a worker thread with at most
``limiter.total_tokens`` such calls at once.  Unlike
``anyio.to_thread.run_sync(..., limiter=limiter)``, the token is held by the
awaiting task, not by the thread: when the caller is cancelled (a request
timed out, the engine closed) the token is released at once on every
backend, and the thread is abandoned — it finishes its current call on its
own and its result is dropped.  (On trio an abandoned thread would otherwise
keep its token until it returns, so a few calls that never return, to a
hung vector store say, would block every later hop.)

On asyncio the call goes straight to a waiting thread of :mod:`._hop_pool`,
whose threads end with their loop (cheaper per hop than ``anyio.to_thread``,
as measured in ``bench/README.md``; a plain query embedder's calls make
one until they measure cheap; and daemon threads, so a call that never returns does not hold up the
interpreter's exit); on other backends, or with ``ZERDA_THREAD_HOP=anyio`` in
the environment (``bench/bench_hop.py`` compares the two), through
``anyio.to_thread``.

Abandoned threads are not counted against the limiter: each call that never
returns keeps one thread busy until it does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple, Unpack

import anyio
import anyio.to_thread

from zerda_async.runtime._hop_pool import start_call

__all__ = ["run_in_thread"]


def _pool_setting() -> bool:
    value = os.environ.get("ZERDA_THREAD_HOP", "pool").strip().lower()
    if value not in ("pool", "anyio"):
        raise ValueError(f"ZERDA_THREAD_HOP must be 'pool' or 'anyio', got {value!r}")
    return value == "pool"


_POOL_ON_ASYNCIO = _pool_setting()
"""Whether asyncio hops use :mod:`._hop_pool` (the environment is read once, at import)."""

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


async def run_in_thread(
    func: Callable[[Unpack[_Ts]], _T], *args: *_Ts, limiter: anyio.CapacityLimiter
) -> _T:
    """``func(*args)`` in a worker thread, at most ``limiter`` at once; see the module docstring."""
    try:
        limiter.acquire_nowait()  # a free token needs no trip round the loop
    except anyio.WouldBlock:
        await limiter.acquire()
    try:
        if _POOL_ON_ASYNCIO and _on_asyncio():
            result: _T = await start_call(func, *args)
            return result
        # A limiter of its own for the hop: the thread may hold it after an
        # abandon (trio), which then blocks nothing else.
        return await anyio.to_thread.run_sync(
            func, *args, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
    finally:
        limiter.release()


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return asyncio.current_task() is not None

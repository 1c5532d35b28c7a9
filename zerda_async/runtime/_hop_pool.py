"""The worker threads of the thread hop on asyncio: started synchronously, awaited as futures.

A hop through ``anyio.to_thread.run_sync`` costs noticeably more than a call
handed straight to a waiting thread and answered with
``loop.call_soon_threadsafe``, and the query embedding of every request makes
one (``bench/bench_overhead.py`` measures it; figures in ``bench/README.md``).
:func:`start_call` does the latter: it puts the call on an
idle worker's queue (or a new worker's) and returns an ``asyncio.Future``.

* The threads are daemon threads: one that hangs in caller code (a remote
  embedder that never answers) never blocks the interpreter's exit.
* A cancelled future abandons its call: the thread finishes it on its own
  (or skips it, if it had not started) and drops the result.
* An idle worker exits after :data:`IDLE_SECONDS`, so a process that stops
  making hops is left with no thread of ours.
* The call runs in a copy of the caller's context variables, as
  ``anyio.to_thread`` does.
* A forked child starts with no workers (the parent's threads do not exist
  in it): the idle list is emptied after a fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_SECONDS", "idle_workers", "start_call"]

IDLE_SECONDS = 10.0
"""How long a worker waits for its next call before it exits."""

_Item = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]

_lock = threading.Lock()
_idle: list[_Worker] = []  # the most recently used last: it is the warmest


def _forget_workers_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # it may have been held by a thread that is gone
    _idle.clear()


os.register_at_fork(after_in_child=_forget_workers_after_fork)


def start_call(func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """Start ``func(*args)`` in a worker thread now; the future completes on the running loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.start()
    worker.calls.put((loop, future, contextvars.copy_context(), func, args))
    return future


def idle_workers() -> int:
    """Workers waiting for a call right now (for tests and statistics)."""
    with _lock:
        return len(_idle)


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="zerda-hop", daemon=True)
        self.calls: queue.SimpleQueue[_Item] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                item = self.calls.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with _lock:
                    if self in _idle:
                        _idle.remove(self)
                        return
                continue  # start_call() took this worker meanwhile: its call is coming
            self._serve(*item)
            del item  # keep nothing of the call while idle

    def _serve(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        context: contextvars.Context,
        func: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        outcome = _call(future, context, func, args)
        # Back on the idle list before the result is delivered, so the caller's
        # next hop finds this (warm) thread rather than starting another.
        with _lock:
            _idle.append(self)
        if outcome is not None:
            # A loop closed meanwhile (RuntimeError) has nobody waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_deliver, future, *outcome)


def _call(
    future: asyncio.Future[Any],
    context: contextvars.Context,
    func: Callable[..., Any],
    args: tuple[Any, ...],
) -> tuple[Any, BaseException | None] | None:
    """Run the call in its context: (result, error), or None when it was abandoned unstarted."""
    if future.cancelled():
        return None
    try:
        return context.run(func, *args), None
    except BaseException as exc:  # delivered to the awaiting task
        return None, exc


def _deliver(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return  # the caller gave up: the result is dropped
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)

"""The worker threads of the thread hop on asyncio: started synchronously, awaited as futures.

A hop through ``anyio.to_thread.run_sync`` costs noticeably more than a call
handed straight to a waiting thread and answered with
``loop.call_soon_threadsafe``, and a plain query embedder's calls make one
until they measure cheap (``bench/bench_hop.py`` compares the two in one run; figures in
``bench/README.md``).  :func:`start_call` does the latter: it puts the call on
an idle worker's queue (or a new worker's) and returns an ``asyncio.Future``.

* **Threads end with their loop.**  A worker serves the event loop that
  started it, and only that one.  Once that loop is closed, an idle worker
  exits within :data:`POLL_SECONDS`, and a worker stuck in a call exits as
  soon as the call returns: no thread of ours outlives its loop longer than
  the call it is stuck in.  While the loop runs, a worker idle for
  :data:`IDLE_SECONDS` exits too.
* The threads are daemon threads: one that hangs in caller code (a remote
  embedder that never answers) never blocks the interpreter's exit.
* A cancelled future abandons its call: the thread finishes it on its own
  (or skips it, if it had not started) and drops the result.
* The call runs in a copy of the caller's context variables, as
  ``anyio.to_thread`` does.
* A forked child starts with no workers (the parent's threads do not exist
  in it): the idle lists are emptied after a fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_SECONDS", "POLL_SECONDS", "idle_workers", "start_call"]

IDLE_SECONDS = 10.0
"""How long a worker of a running loop waits for its next call before it exits."""

POLL_SECONDS = 0.25
"""How often an idle worker looks whether its loop was closed (no loop hook says so)."""

_Item = tuple[
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]

_lock = threading.Lock()
# Idle workers per loop, the most recently used last: it is the warmest.
_idle: dict[asyncio.AbstractEventLoop, list[_Worker]] = {}


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
        idle = _idle.get(loop)
        worker = idle.pop() if idle else None
    if worker is None:
        worker = _Worker(loop)
        worker.start()
    worker.calls.put((future, contextvars.copy_context(), func, args))
    return future


def idle_workers() -> int:
    """Workers waiting for a call right now, for every loop (for tests and statistics)."""
    with _lock:
        return sum(len(idle) for idle in _idle.values())


class _Worker(threading.Thread):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="zerda-hop", daemon=True)
        self.loop = loop
        self.calls: queue.SimpleQueue[_Item] = queue.SimpleQueue()

    def run(self) -> None:
        idle_since = time.monotonic()
        while True:
            try:
                item = self.calls.get(timeout=POLL_SECONDS)
            except queue.Empty:
                expired = time.monotonic() - idle_since >= IDLE_SECONDS
                if (expired or self.loop.is_closed()) and self._leave():
                    return
                continue  # still wanted, or start_call() took it: its call is coming
            if not self._serve(*item):
                return
            del item  # keep nothing of the call while idle
            idle_since = time.monotonic()

    def _leave(self) -> bool:
        """Take this worker off its loop's idle list: False if a call was just handed to it."""
        with _lock:
            idle = _idle.get(self.loop)
            if idle is None or self not in idle:
                return False
            idle.remove(self)
            if not idle:
                del _idle[self.loop]
            return True

    def _serve(
        self,
        future: asyncio.Future[Any],
        context: contextvars.Context,
        func: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> bool:
        """Run one call and deliver its outcome; False when the loop is gone (the worker exits)."""
        outcome = _call(future, context, func, args)
        with _lock:
            if self.loop.is_closed():
                return False  # nobody is waiting, and no call will come
            # Back on the idle list before the result is delivered, so the caller's
            # next hop finds this (warm) thread rather than starting another.
            _idle.setdefault(self.loop, []).append(self)
        if outcome is not None:
            # A loop closed meanwhile (RuntimeError) has nobody waiting; this
            # worker then leaves at its next poll.
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(_deliver, future, *outcome)
        return True


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

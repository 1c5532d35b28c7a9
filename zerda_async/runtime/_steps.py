"""Work in pieces: a generator that does one piece of its work per ``next()``.

A long computation written as a :data:`Steps` generator yields between
pieces (``yield`` with no value) and returns its result.  Whoever drives it
chooses what happens between two pieces: :func:`finish` nothing at all (the
one-shot call), the async runner's loop pacer a turn of the event loop, so a
timer that fell due meanwhile waits for one piece instead of the whole work
(:mod:`._pacing`).  :func:`timed_steps` runs pieces until a time slice is
used up, so that cheap pieces share one turn.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TypeVar

__all__ = ["SLICE_MS", "Slice", "Steps", "finish", "timed_steps"]

_T = TypeVar("_T")

Steps = Generator[None, None, _T]
"""A computation in pieces: each ``next()`` runs one piece; the return value is its result."""

SLICE_MS = 1.0
"""Pieces run back to back until they have used this much wall time (ms).

A turn of the event loop costs tens of microseconds; merging the pieces of a
slice keeps their number (and so the turns taken) small while no slice
exceeds one piece by more than this.
"""


def finish(steps: Steps[_T]) -> _T:
    """Run every piece of ``steps`` at once; its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: _T = done.value
            return result


class Slice:
    """What :func:`timed_steps` ran: CPU milliseconds spent, and whether the work is over."""

    __slots__ = ("cost_ms", "done")

    def __init__(self, cost_ms: float, done: bool) -> None:
        self.cost_ms = cost_ms
        self.done = done


def timed_steps(steps: Steps[object], slice_ms: float = SLICE_MS) -> Slice:
    """Run pieces of ``steps`` until ``slice_ms`` of wall time is used or the work is over.

    The cost reported is this thread's CPU time (``time.thread_time``), which
    leaves out the time a worker thread waited for the GIL or the machine's
    other processes took; the cut uses wall time, which is what a waiting
    timer sees.  Exceptions of the work propagate.
    """
    started = time.perf_counter()
    cpu = time.thread_time()
    done = False
    while True:
        try:
            next(steps)
        except StopIteration:
            done = True
            break
        if (time.perf_counter() - started) * 1000 >= slice_ms:
            break
    return Slice((time.thread_time() - cpu) * 1000, done)

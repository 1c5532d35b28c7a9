"""Loop pacing: at most one paced piece of inline work per event-loop iteration.

asyncio runs every callback that is ready at the start of an iteration
before it looks at its timers again.  When several requests are in flight,
the inline stage groups of several of them are often ready at once, so one
iteration runs them back to back and a timer that fell due meanwhile (a
heartbeat, a timeout, another request's socket) waits for all of them.

A :class:`LoopPacer` lets the first paced group of an iteration run and makes
the others yield first: :meth:`LoopPacer.turn` claims the iteration and
releases it two iterations later, by a ``loop.call_soon`` callback that
schedules the releasing one.  The timers that fell due during the group are
queued at the start of the next iteration, and run in it; a group that had
to yield runs in the iteration after, so a timer waits for about one group
instead of several.  With two speculation workers and the commit task only a
few tasks ever wait for a turn, so the extra iterations cost microseconds.

Only asyncio is paced: trio has no ``call_soon`` on its run loop, and
:meth:`LoopPacer.turn` returns at once there (as it does when pacing is
switched off with :func:`set_loop_pacing` or ``ZERDA_LOOP_PACING=off``, or
for one engine with ``AsyncContextEngine(loop_pacing=False)``).

A turn is given to one *piece* of work: a group of stages that can run in
pieces (:meth:`~zerda_async.pipeline.Stage.steps`: retrieval over the
engine's own index, its vector scan in blocks) takes a turn for each slice
of pieces (:func:`~._steps.timed_steps`), so a timer waits for about one
slice, not a whole request's retrieval.
Measured in ``bench/bench_loop_stall.py``.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque

import anyio.lowlevel

__all__ = ["LoopPacer", "loop_pacing", "set_loop_pacing"]

_ENV = "ZERDA_LOOP_PACING"


def _parse(value: str | bool, origin: str) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower()
    if text in ("on", "1", "true"):
        return True
    if text in ("off", "0", "false"):
        return False
    raise ValueError(f"{origin} must be 'on' or 'off', got {value!r}")


_enabled = _parse(os.environ.get(_ENV, "on"), _ENV)


def set_loop_pacing(enabled: bool) -> None:
    """Switch loop pacing on or off for the engines of this process (default: on)."""
    global _enabled
    if not isinstance(enabled, bool):
        raise TypeError(f"loop pacing must be True or False, got {enabled!r}")
    _enabled = enabled


def loop_pacing() -> bool:
    """True when loop pacing is on (see :func:`set_loop_pacing`)."""
    return _enabled


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None  # trio, or no loop


class LoopPacer:
    """Hands out one turn per event-loop iteration to inline work (see the module docstring)."""

    __slots__ = ("_taken", "_waiting", "enabled")

    def __init__(self, enabled: bool | None = None) -> None:
        # None: follow the process-wide switch (set_loop_pacing); a bool pins it.
        self.enabled = enabled
        # True from a turn being taken until the release callback of its
        # iteration has run.
        self._taken = False
        # Tokens of the callers waiting for a turn, first come first served.
        self._waiting: deque[object] = deque()

    def _on(self) -> bool:
        return _enabled if self.enabled is None else self.enabled

    def active(self) -> bool:
        """True when :meth:`turn` paces: pacing is on and this thread runs an asyncio loop."""
        return self._on() and _running_asyncio_loop() is not None

    async def turn(self) -> None:
        """Return once this loop iteration has no other turn taken, and take it.

        The caller then runs its inline work without awaiting in between.
        Waiting is shielded from cancellation (a turn comes within a few
        iterations); the caller checks whether it still wants to run.
        Waiting callers get their turns in the order they came.
        """
        if not self._on():
            return
        loop = _running_asyncio_loop()
        if loop is None:
            return
        if self._taken or self._waiting:
            token = object()
            self._waiting.append(token)
            try:
                while self._taken or self._waiting[0] is not token:
                    await anyio.lowlevel.cancel_shielded_checkpoint()
            finally:
                self._waiting.remove(token)
        self._taken = True
        loop.call_soon(loop.call_soon, self._release)

    def _release(self) -> None:
        self._taken = False

"""What a call into caller code costs the thread it runs in: time it held the thread up.

:func:`timed_call` runs a call and reports its cost for a
:class:`~._offload_policy.CallPolicy`: the call's *wall* time when it waited
on something during the call (I/O, a sleep, a lock: the thread gave up its
core of its own accord, which Linux counts as a voluntary context switch),
and otherwise its CPU time.  So a network call or a sleep counts in full,
while a cheap call that the machine's other processes preempted (an
involuntary switch) is not mistaken for a slow one; on a loaded machine that
happens to a few in a hundred calls of tens of microseconds.  Where the
per-thread counters are missing (not Linux), the wall time always counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]

__all__ = ["timed_call"]

_RUSAGE_THREAD: int | None = getattr(resource, "RUSAGE_THREAD", None)


def _voluntary_switches() -> int:
    if _RUSAGE_THREAD is None:
        return -1
    return resource.getrusage(_RUSAGE_THREAD).ru_nvcsw


def timed_call(func: Callable[[Any], Any], arg: Any) -> tuple[Any, Exception | None, float]:
    """``func(arg)``: (result, None, cost ms) or (None, its exception, cost ms).

    The cost is the wall time if the call waited (or the counters are
    missing), else the CPU time of this thread (see the module docstring).
    """
    switches = _voluntary_switches()
    cpu = time.thread_time()
    wall = time.perf_counter()
    result: Any = None
    error: Exception | None = None
    try:
        result = func(arg)
    except Exception as exc:
        error = exc
    wall_ms = (time.perf_counter() - wall) * 1000
    cpu_ms = (time.thread_time() - cpu) * 1000
    waited = switches < 0 or _voluntary_switches() != switches
    return result, error, wall_ms if waited else cpu_ms

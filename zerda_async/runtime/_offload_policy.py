"""Where a piece of CPU work runs: inline on the event loop or in a worker thread.

:class:`OffloadPolicy` decides from the work's measured CPU cost.  The
pipeline's runner places its stage groups with it, and the PostgreSQL store's
local copy its searches, so both follow one rule.  The thread hop itself is
:func:`~._threads.run_in_thread`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple, Unpack

import anyio

from zerda_async.runtime._cpu_pressure import cpu_pressure
from zerda_async.runtime._scan_threads import free_cores
from zerda_async.runtime._threads import run_in_thread

__all__ = [
    "CALL_INLINE_MS",
    "CALL_PROBATION",
    "CONTENDED",
    "CROWDED_THRESHOLD_MS",
    "OFFLOAD_MIN_CORPUS",
    "PIECES_EVERY",
    "SPARE_CORE",
    "CallPolicy",
    "OffloadPolicy",
    "default_threshold_ms",
    "run_placed",
    "spare_core",
    "thread_pays",
]

OFFLOAD_MIN_CORPUS = 20_000
"""Chunks from which work is offloaded before its cost has been measured."""

CROWDED_THRESHOLD_MS = 2.0
"""Inline budget of one piece of work while other requests are in flight, unpaced (ms).

asyncio runs every task that is ready before it looks at its timers again,
so inline pieces of concurrent requests add up: two speculation workers and
the commit task can each run one in the same loop iteration, and a timer
that falls due waits for all of them.  Where a :class:`~._pacing.LoopPacer`
lets one such piece run per iteration (asyncio, pacing on: the default), a
group over this budget runs in pieces, a turn each, and keeps the
lone-request budget of :func:`default_threshold_ms` for its largest piece;
elsewhere (trio, pacing off) it goes to a worker thread.  Measured with 256
concurrent requests at 100,000 chunks (about 8 ms of CPU each,
``bench/bench_loop_stall.py``): unpaced at the lone budget, a 10 ms heartbeat
woke 37-240 ms late; at this budget a few ms late but at about half the
throughput (the worker threads' GIL hand-offs double the CPU per request);
paced whole, about one group late; paced in pieces, a p99 of 3.4-13.6 ms at
the same throughput or up to 13 % below it.  Requests over 10,000 chunks or
fewer (about 1 ms of work each) stay inline, where they run fastest.
"""

SPARE_CORE = 0.75
"""Free cores (``runtime.free_cores``) from which a crowded group goes to a thread, unpaced.

A group in a worker thread runs its vector scan without the GIL, on a core
of its own, while the loop runs other requests: with a core free that beat
pacing the group on the loop (256 concurrent requests at 100,000 chunks,
quiet machine: 171 q/s and a worst heartbeat of 7.6 ms, against 122 q/s
paced and 132-141 q/s for the rule before).  Without one, the thread only
competes with the loop and OpenBLAS helper threads spin (the CPU per
request rose 2-4x under load), so the group is paced on the loop instead.

:func:`~._scan_threads.free_cores` reads what the cores did, not how many
threads wanted them, and credits one core of this process back: with one
or two cores kept busy by other processes it reads about one core, so the
groups then mostly go to threads, which measured faster there than pacing
(``bench/README.md``, "One core busy from outside").
"""

CONTENDED = 0.5
"""CPU pressure (``runtime.cpu_pressure``) from which a crowded group goes to a thread, unpaced.

The share of the last ~0.25 s in which some runnable thread waited for a
core (PSI ``some``).  At or above it every core has a queue: the process's
threads get their share of the time from the scheduler whatever the loop
does, so a group in a worker thread adds a share to the process (the
GIL-free scan runs while the loop runs the others), whereas a paced group
keeps the whole request on the loop's one share.  Measured with two cores
kept busy from outside (``bench/README.md``, "Busy cores"): the free-core
reading then hovers around :data:`SPARE_CORE` and paced groups ran at
55-96 q/s against 102-122 in threads.  Below it, with no core free, the
cores are busy without a queue and pacing keeps the use-based rule.
"""

PIECES_EVERY = 32
"""Every how many offloaded runs of a paced group one runs in pieces in its thread.

A run in pieces in a worker thread teaches the policy the group's largest
piece (what a paced run would block the loop for), but costs a GIL hand-off
per piece: each vector-scan block releases the GIL and must win it back from
the loop thread, up to a switch interval each while the loop is busy.  So a
thread runs the group in pieces only while no piece has been measured, and
then once in this many runs to follow a changing cost; otherwise in one
piece, with the one-shot scan, as an unpaced engine does.  Measured with one
core kept busy from outside (256 concurrent requests at 100,000 chunks,
``bench/bench_loop_stall.py --busy-cores 1``): groups in pieces in their
threads 120-128 q/s, in one piece 133-149 q/s.
"""

CALL_INLINE_MS = 0.25
"""Cost under which a call into caller code may run on the loop (ms).

The cost is :func:`~._call_cost.timed_call`'s (wall time if the call waited).

About what the thread hop it saves costs (0.12-0.35 ms measured here for a
call of a few microseconds: waking a worker thread, then the loop), so only
calls cheaper than their own hop run inline.  A network client's round trip
plus its HTTP machinery is above it; an in-process hashing or lookup
embedder is far below it (a 64-dim feature-hashing query: about 0.03 ms).
"""

CALL_PROBATION = 16
"""Calls in a row that must measure under :data:`CALL_INLINE_MS` before the next runs inline.

Doubled (up to :data:`_MAX_PROBATION`) each time a call measures over it.
"""

_MAX_PROBATION = 4096


def spare_core() -> bool:
    """True when at least :data:`SPARE_CORE` cores are free (False when unknown)."""
    free = free_cores()
    return free is not None and free >= SPARE_CORE


def thread_pays() -> bool:
    """True when a crowded group should go to a worker thread rather than be paced.

    A core is free (:func:`spare_core`), or every core is contended
    (:func:`~._cpu_pressure.cpu_pressure` at least :data:`CONTENDED`), where
    a thread gets the process another share of the scheduler.  Without a
    pressure reading (no PSI, or the first read of a process) only the free
    cores decide, as before the pressure rule.
    """
    if spare_core():
        return True
    pressure = cpu_pressure()
    return pressure is not None and pressure >= CONTENDED


_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


def default_threshold_ms() -> float:
    """Two GIL switch intervals (10 ms by default), and never below 2 ms.

    A worker thread gives the GIL up at every numpy call that releases it
    (the cosine product, sorting, BM25 arrays: about ten per request) and must
    win it back from the event-loop thread.  While the loop thread runs other
    CPU work (other requests of a web app, the caller's own code), it keeps
    the GIL until the waiting thread asks for it after one switch interval
    (``sys.getswitchinterval()``, 5 ms), so each of those hand-offs can cost a
    whole interval: measured at 100,000 chunks with the loop busy, 33-94 ms
    per request offloaded against 9-35 ms inline.  Inline work of up to two
    intervals costs the loop less than that, and stays 5 times below the
    50 ms lateness budget.
    """
    return max(2.0, 2000.0 * sys.getswitchinterval())


class OffloadPolicy:
    """Decides whether a piece of work (a stage group, a search) runs in a worker thread.

    A thread hop costs roughly 0.15-0.25 ms here, and the stages are mostly
    Python holding the GIL, so a worker thread buys loop responsiveness, not
    parallelism: measured on 2 cores, 256 concurrent requests over 10,000
    chunks (about 0.6 ms of work each) ran at ~1,250 requests/s inline and
    ~800/s offloaded, and a busy loop makes every GIL hand-off of the worker
    cost a switch interval (:func:`default_threshold_ms`).  Work up to
    ``threshold_ms`` (``None``: :func:`default_threshold_ms`; each request
    yields to the loop between groups) therefore runs inline when it is the
    only request in flight, and up to ``crowded_threshold_ms`` when others
    are (``None``: :data:`CROWDED_THRESHOLD_MS`, or ``threshold_ms`` when that
    one was given, so an explicit threshold applies to every placement).
    Before any measurement the corpus size decides.  Costs are the group's
    CPU time in its thread, as an exponential moving average.
    """

    def __init__(
        self,
        threshold_ms: float | None,
        min_corpus: int,
        crowded_threshold_ms: float | None = None,
    ) -> None:
        if crowded_threshold_ms is None:
            crowded_threshold_ms = CROWDED_THRESHOLD_MS if threshold_ms is None else threshold_ms
        self.threshold_ms = default_threshold_ms() if threshold_ms is None else threshold_ms
        # Never more inline work under concurrency than for a lone request.
        self.crowded_threshold_ms = min(crowded_threshold_ms, self.threshold_ms)
        self.min_corpus = min_corpus
        self.average_ms: float | None = None
        # The largest piece of a run in pieces (a paced run, or a thread's
        # run timed piece by piece), as a moving average: what a paced run
        # blocks the loop for at a time.
        self.largest_ms: float | None = None
        # True when the group calls caller code that may block on I/O (a plain
        # query embedder, a vector-store adapter, an injected retriever): it
        # then always runs in a worker thread, so a slow or hung call never
        # stalls the event loop, whatever it cost so far.
        self.external_calls = False
        # Pins the placement when not None (True: threads, False: inline);
        # tests use it to exercise both placements.
        self.forced: bool | None = None
        # Offloaded runs of a paced group since the last one in pieces.
        self._whole_runs = 0

    def should_offload(self, corpus_size: int, crowded: bool = False, paced: bool = False) -> bool:
        """True when the next run of the group should go to a worker thread.

        ``crowded``: other requests are in flight, so inline work of theirs
        may run in the same loop iteration (:data:`CROWDED_THRESHOLD_MS`),
        unless ``paced``: a :class:`~._pacing.LoopPacer` lets one piece of
        the group run per iteration, so the lone-request budget holds again,
        for its largest piece (:meth:`observe`).
        """
        if self.forced is not None:
            return self.forced
        if self.external_calls:
            return True
        if self.average_ms is None:
            return corpus_size >= self.min_corpus
        if paced:
            largest = self.average_ms if self.largest_ms is None else self.largest_ms
            return largest > self.threshold_ms
        limit = self.crowded_threshold_ms if crowded else self.threshold_ms
        return self.average_ms > limit

    def over_crowded_budget(self) -> bool:
        """True when the group's measured cost exceeds the crowded inline budget.

        Only such groups need pacing (:class:`~._pacing.LoopPacer`): cheaper
        ones run inline under concurrency anyway.
        """
        return self.average_ms is not None and self.average_ms > self.crowded_threshold_ms

    def pieces_in_thread(self) -> bool:
        """True when the next offloaded run should go in pieces, to measure the largest.

        Only while no piece was measured yet, and then one run in
        :data:`PIECES_EVERY`: pieces in a thread cost GIL hand-offs and are
        of use only for what they teach a paced run.
        """
        if self.largest_ms is None:
            return True
        self._whole_runs += 1
        if self._whole_runs >= PIECES_EVERY:
            self._whole_runs = 0
            return True
        return False

    def observe(self, cost_ms: float, largest_ms: float | None = None) -> None:
        """Record the measured cost of one run of the group (without the hop).

        ``largest_ms``: the run went in pieces (``runtime.timed_steps``) and
        this was its largest; ``None`` for a run in one piece, which says
        nothing about the pieces.
        """
        self.average_ms = _average(self.average_ms, cost_ms)
        if largest_ms is not None:
            self.largest_ms = _average(self.largest_ms, largest_ms)


def _average(average: float | None, value: float) -> float:
    """The moving average of the costs observed, ``value`` the latest."""
    return value if average is None else 0.8 * average + 0.2 * value


async def run_placed(
    policy: OffloadPolicy,
    size: int,
    func: Callable[[Unpack[_Ts]], _T],
    *args: *_Ts,
    limiter: anyio.CapacityLimiter,
) -> _T:
    """``func(*args)`` inline or in a worker thread (``limiter``) as ``policy`` says.

    ``size`` (the corpus searched, say) decides before any measurement; the
    call's CPU time in its own thread is then observed, so the placement
    follows what the work costs.
    """
    if policy.should_offload(size):
        result, cost = await run_in_thread(_timed, func, *args, limiter=limiter)
    else:
        result, cost = _timed(func, *args)
    policy.observe(cost)
    return result


def _timed(func: Callable[[Unpack[_Ts]], _T], *args: *_Ts) -> tuple[_T, float]:
    """``func(*args)`` and the CPU milliseconds this thread spent on it."""
    start = time.thread_time()
    result = func(*args)
    return result, (time.thread_time() - start) * 1000


class CallPolicy(OffloadPolicy):
    """Places the calls into caller code that may block: a plain query embedder.

    Such a call starts in a worker thread, as a hung call must not stall the
    loop.  Its cost is measured where it runs (:func:`~._call_cost.timed_call`:
    the wall time of a call that waited on I/O, a sleep or a lock, else its
    CPU time, so a preempted cheap call is not taken for a slow one), and once
    :attr:`probation` calls in a row measured at most ``threshold_ms``
    (:data:`CALL_INLINE_MS`; a smaller engine threshold lowers it) the
    calls run inline, saving the hop.  A call that measures over it, inline
    or in a thread, or a thread call its caller abandoned, sends the calls
    back to threads at once and doubles the probation.  A function that
    stays cheap for its probation and then blocks does block the loop: pin
    ``forced = True`` (the engine's ``offload="threads"``) for a client that
    may hang.
    """

    def __init__(self, threshold_ms: float | None = None, probation: int = CALL_PROBATION) -> None:
        budget = CALL_INLINE_MS if threshold_ms is None else min(CALL_INLINE_MS, threshold_ms)
        super().__init__(budget, 0)
        self.probation = probation
        # Calls in a row, ending with the latest, that measured within the budget.
        self.cheap_run = 0

    def should_offload(
        self, corpus_size: int = 0, crowded: bool = False, paced: bool = False
    ) -> bool:
        """True while the calls have not been cheap for :attr:`probation` calls in a row."""
        if self.forced is not None:
            return self.forced
        return self.cheap_run < self.probation

    def observe(self, cost_ms: float, largest_ms: float | None = None) -> None:
        """Record one call's cost; ``math.inf`` for a call abandoned in its thread."""
        if cost_ms <= self.threshold_ms:
            self.cheap_run += 1
        else:
            self.cheap_run = 0
            self.probation = min(2 * self.probation, _MAX_PROBATION)
        if cost_ms < float("inf"):
            super().observe(cost_ms)

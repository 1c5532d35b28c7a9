"""BLAS threads for the vector scan, matched to the cores that are actually free.

numpy's OpenBLAS starts one thread per core and splits every matrix-vector
product over all of them; the calling thread then waits for the slowest
part.  When another process keeps one of two cores busy, the helper thread
only runs when the scheduler gives it a slice (milliseconds later), so a
0.1 ms scan at 10,000 chunks can take several ms (the issue measured the
sync median rising 6x on such a machine, while single-threaded libraries
rose 1.1-2.1x).  :func:`scan_threads` therefore lets the scan use only as many
BLAS threads as there are idle cores, read from ``/proc/stat`` at most every
0.25 s: the machine's busy time minus, at most, one core of this process's
own (the thread that scans).  The async engine's other threads (the event
loop running other requests, the other worker thread) count as busy: a BLAS
helper thread competing with them for a core spin-waits and makes the scan
wait (measured at 10,000 chunks, 256 queries at concurrency 64: 101-126
requests/s against 938-1,082 with one BLAS thread).

A scan of at most :data:`SMALL_SCAN` multiply-adds (up to ~16,000 rows of
64 dimensions, so every block of a stepped scan) always uses one thread in
``auto``: a second thread saves at most tens of microseconds there and costs
milliseconds whenever its core is taken (``bench/README.md``).

The setting is process-wide while a scan runs: concurrent scans share it
(reference-counted under one lock) and the last one out restores the value
it found.  Tuned with ``ZERDA_SCAN_BLAS_THREADS``: ``auto`` (default),
``off`` (leave BLAS alone: the behaviour before this module) or a number
of threads; or with :func:`set_scan_blas_threads`.  Without threadpoolctl, or
without ``/proc/stat`` in ``auto``, BLAS is left alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy  # noqa: F401  (its BLAS must be loaded before threadpoolctl looks)

__all__ = [
    "SMALL_SCAN",
    "free_cores",
    "scan_blas_threads",
    "scan_threads",
    "set_scan_blas_threads",
]

SMALL_SCAN = 1 << 20
"""Multiply-adds up to which ``auto`` scans on one BLAS thread.

Up to, not below: a full block of a stepped scan is exactly this size and
must scan on one thread.  It took the free-cores path when the bound was
strict, so a paced request whose free-core reading came out high (the
first reading of a process counts every core as free) woke OpenBLAS's
helper thread, and with one core kept busy from outside that helper then
took CPU from the event loop: 13-22 ms of CPU per request instead of 8 in
the first rounds of 4 of 4 runs measured (``bench/README.md``).
"""

_ENV = "ZERDA_SCAN_BLAS_THREADS"
_PROBE_EVERY = 0.25  # seconds between two reads of /proc/stat
_NOT_LOADED: Any = object()

_lock = threading.Lock()
_setting: int | str = "auto"
_libs: Any = _NOT_LOADED  # threadpoolctl's BLAS controllers, loaded on first use
_active = 0  # scans running now
_saved: list[int] = []  # the thread counts found by the first scan in
_probe: dict[str, float] = {}  # last /proc/stat sample and the free cores derived


def _parse(value: int | str, origin: str) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("auto", "off"):
            return text
        if text.isdigit() and int(text) >= 1:
            return int(text)
    raise ValueError(f"{origin} must be 'auto', 'off' or a thread count >= 1, got {value!r}")


def set_scan_blas_threads(value: int | str) -> None:
    """Set how many BLAS threads a vector scan uses: ``"auto"``, ``"off"`` or a count."""
    global _setting
    _setting = _parse(value, "scan BLAS threads")


def scan_blas_threads() -> int | str:
    """The current setting (see :func:`set_scan_blas_threads`)."""
    return _setting


def _busy_jiffies() -> tuple[float, float] | None:
    """(busy, total) jiffies of all cores since boot, or None off Linux."""
    # Often called on the event-loop thread: procfs files are generated in
    # memory and never wait for a disk, which O_NONBLOCK states (so loop
    # guards such as blockbuster accept the read).
    try:
        fd = os.open("/proc/stat", os.O_RDONLY | os.O_NONBLOCK)
        try:
            first = os.read(fd, 512).split(b"\n", 1)[0]
        finally:
            os.close(fd)
        fields = [float(x) for x in first.split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def free_cores() -> float | None:
    """Usable cores not busy with other processes over the last ~0.25 s (None: unknown)."""
    now = time.monotonic()
    if _probe and now - _probe["at"] < _PROBE_EVERY:
        return _probe["free"]
    sample = _busy_jiffies()
    if sample is None:
        return None
    times = os.times()
    own = times.user + times.system
    usable = len(os.sched_getaffinity(0))
    free = float(usable)
    if _probe:
        d_total = sample[1] - _probe["total"]
        if d_total > 0:
            cores = os.cpu_count() or usable
            machine_busy = cores * (sample[0] - _probe["busy"]) / d_total
            own_busy = (own - _probe["own"]) / max(now - _probe["at"], 1e-9)
            # Only the scanning thread's own core is credited back: the
            # process's other busy threads compete with a BLAS helper too.
            others = machine_busy - min(own_busy, 1.0)
            free = min(usable, max(0.0, cores - max(0.0, others)))
    _probe.update(at=now, busy=sample[0], total=sample[1], own=own, free=free)
    return free


def _controllers() -> Any:
    global _libs
    if _libs is _NOT_LOADED:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _libs = []
        else:
            # Scanning the loaded libraries reads /proc/self/maps and costs a few
            # ms: once per process, at import (numpy is loaded by then), not on
            # the event loop at the first scan.
            _libs = ThreadpoolController().select(user_api="blas").lib_controllers
    return _libs


def _wanted(work: int) -> int | None:
    """Threads for the next scan of ``work`` multiply-adds, or None to leave BLAS as it is."""
    if _setting == "off":
        return None
    if isinstance(_setting, int):
        return _setting
    if work <= SMALL_SCAN:
        return 1
    free = free_cores()
    # Round down: a helper thread without a core of its own is what costs.
    return None if free is None else max(1, int(free + 0.25))


@contextmanager
def scan_threads(work: int = SMALL_SCAN) -> Iterator[None]:
    """Run the body (a vector scan of ``work`` multiply-adds) with the BLAS threads it should use.

    ``auto``: one thread up to :data:`SMALL_SCAN`, else the free cores.
    """
    global _active
    limit = _wanted(work)
    libs = _controllers() if limit is not None else []
    if limit is None or not libs:
        yield
        return
    with _lock:
        if _active == 0:
            _saved[:] = [lib.num_threads for lib in libs]
            for lib, found in zip(libs, _saved, strict=True):
                if min(limit, found) != found:  # never more threads than BLAS had
                    lib.set_num_threads(min(limit, found))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for lib, found in zip(libs, _saved, strict=True):
                    if lib.num_threads != found:
                        lib.set_num_threads(found)


_setting = _parse(os.environ.get(_ENV, "auto"), _ENV)
if _setting != "off":
    _controllers()

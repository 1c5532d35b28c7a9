"""CPU demand: how much of the time runnable threads waited for a core (Linux PSI).

:func:`~._scan_threads.free_cores` reads what the cores *did* (``/proc/stat``).
A saturated core cannot show more than 100 % of use, so that reading cannot
tell two cores that are merely busy from two cores with a queue of threads
waiting for them: with two processes spinning on a two-core machine it read
0.6-1.0 free cores (the process's own core credited back), hovering around
the offload rule's threshold (``bench/README.md``, "busy cores").

Pressure stall information (``/proc/pressure/cpu``, Linux 4.20+) reads the
*demand*: its ``some`` line counts the microseconds during which at least
one runnable thread waited for a CPU.  :func:`cpu_pressure` turns the
growth of that counter between two reads (at most every
:data:`PROBE_EVERY` seconds) into a share of the wall time, 0.0-1.0.  The
engine's own threads count too: a process that keeps more threads runnable
than there are cores raises it like any other.

``None`` means unknown: no ``/proc/pressure/cpu`` (other systems, kernels
built without PSI, containers that hide it), an unreadable or malformed
file, or the first read of a process (a share needs two samples).  Callers
then keep the use-based rule; nothing here raises.
"""

from __future__ import annotations

import os
import time

__all__ = ["PROBE_EVERY", "PSI_PATH", "cpu_pressure", "parse_some_total", "pressure_share"]

PSI_PATH = "/proc/pressure/cpu"

PROBE_EVERY = 0.25
"""Seconds between two reads of the pressure file (as ``free_cores`` reads ``/proc/stat``).

Long enough that a read (a few microseconds, from memory) costs nothing per
group, short enough to follow an outside load that starts or stops.
"""

_now = time.monotonic  # the probe's clock (a name of its own, so tests can move it)
_probe: dict[str, float] = {}  # last sample: at (monotonic s), total (µs), share


def parse_some_total(text: bytes) -> float | None:
    """The ``total=`` µs counter of the ``some`` line of a PSI file, or None if absent."""
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] != b"some":
            continue
        for field in fields[1:]:
            key, _, value = field.partition(b"=")
            if key == b"total":
                try:
                    return float(value)
                except ValueError:
                    return None
    return None


def pressure_share(before_total_us: float, after_total_us: float, elapsed_s: float) -> float | None:
    """The share of ``elapsed_s`` during which some thread waited for a CPU (0.0-1.0).

    None when the interval is empty or the counter went backwards (a reset).
    """
    if elapsed_s <= 0 or after_total_us < before_total_us:
        return None
    return min(1.0, (after_total_us - before_total_us) / (elapsed_s * 1e6))


def _read_total(path: str) -> float | None:
    # Called on the event-loop thread: procfs files are generated in memory,
    # so a non-blocking read never waits (and loop guards such as
    # blockbuster accept it), as for /proc/stat.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            text = os.read(fd, 256)
        finally:
            os.close(fd)
    except OSError:
        return None
    return parse_some_total(text)


def cpu_pressure(path: str = PSI_PATH) -> float | None:
    """Share of the last ~:data:`PROBE_EVERY` s with a runnable thread waiting (None: unknown)."""
    now = _now()
    if _probe and now - _probe["at"] < PROBE_EVERY:
        share = _probe["share"]
        return None if share < 0 else share
    total = _read_total(path)
    if total is None:
        _probe.clear()
        return None
    share = -1.0  # unknown until two samples
    if _probe:
        found = pressure_share(_probe["total"], total, now - _probe["at"])
        share = -1.0 if found is None else found
    _probe.update(at=now, total=total, share=share)
    return None if share < 0 else share

"""What the ``zerda`` command prints: its name, one-line messages, progress, timings.

Shared by the command line and the demo, so stage timings read the same everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from zerda_async.apps._runs import STAGE_EVENTS, TimedResult

__all__ = ["PROG", "ProgressBar", "err", "format_timings", "summary"]


PROG = "zerda"


def err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class ProgressBar:
    """``progress(done, total)`` callback drawing a bar on ``stream`` (lines when not a TTY).

    ``index()`` reports two phases, embedding then tokenising, each counting
    from 0 to the total; a count that goes back (or starts after a finished
    phase) starts the next label of ``phases``.
    """

    def __init__(
        self,
        stream: TextIO,
        phases: Sequence[str] = ("embedding", "tokenising"),
        width: int = 30,
    ) -> None:
        self.stream = stream
        self.phases = list(phases) or ["progress"]
        self.width = width
        self.tty = stream.isatty()
        self._phase = 0
        self._last = (0, -1)  # (done, total) of the previous call
        self._drawn = False

    @property
    def label(self) -> str:
        """The label of the current phase."""
        return self.phases[min(self._phase, len(self.phases) - 1)]

    def __call__(self, done: int, total: int) -> None:
        last_done, last_total = self._last
        if last_total >= 0 and (done < last_done or last_done >= last_total):
            self.close()
            self._phase += 1
        self._last = (done, total)
        if self.tty:
            filled = self.width * done // max(total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total} chunks")
            self._drawn = True
        else:
            self.stream.write(f"{self.label}: {done}/{total} chunks\n")
        self.stream.flush()

    def close(self) -> None:
        """End a bar's line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def format_timings(timings_ms: dict[str, float], total_ms: float | None = None) -> str:
    """``analysis 0.3 ms | retrieved 1.2 ms | ... | total 4.0 ms`` in pipeline order."""
    parts = [f"{name} {timings_ms[name]:.2f} ms" for name in STAGE_EVENTS if name in timings_ms]
    parts += [f"{name} {ms:.2f} ms" for name, ms in timings_ms.items() if name not in STAGE_EVENTS]
    if total_ms is not None:
        parts.append(f"total {total_ms:.2f} ms")
    return " | ".join(parts) if parts else "(no stages ran)"


def summary(timed: TimedResult) -> str:
    stats = timed.result.get_stats()
    return (
        f"intent={stats['query_intent']} budget={stats['context_budget']} "
        f"retrieved={stats['total_retrieved']} used={stats['total_included']} "
        f"chars={stats['context_length']} guard_passed={stats['guard_passed']}"
    )

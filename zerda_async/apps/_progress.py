"""A progress line with rate and time left, for work a user waits for (``zerda index``).

One small API for every long step of the command line::

    bar = Progress(total=800, label="embedding", unit="chunks")
    bar.advance(16)   # after each step (any thread)
    bar.close()       # ends the line

On a terminal it redraws one line (at most ~10 times a second)::

    embedding [#########.....................] 240/800 chunks  7.4 chunks/s  1m16s left

It is silent when the stream is not a terminal (a pipe, a log file) or when
``quiet`` is set, so scripts read only the command's result lines.  The
rate counts what was advanced since the bar was made, over the time since.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "format_duration"]

_REDRAW_EVERY = 0.1  # seconds between two redraws of the line


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class Progress:
    """``advance(n)`` / ``close()`` over ``total`` units, drawn on ``stream`` when it is a TTY."""

    def __init__(
        self,
        total: int,
        label: str = "progress",
        unit: str = "items",
        *,
        stream: TextIO | None = None,
        quiet: bool = False,
        width: int = 30,
    ) -> None:
        self.total = max(0, total)
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.done = 0
        self.shown = not quiet and self.stream.isatty()
        self._started = time.monotonic()
        self._drawn_at = 0.0
        self._drawn = False
        self._lock = threading.Lock()  # advance() may come from worker threads

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units done; redraw when the line is due."""
        with self._lock:
            self.done = min(self.total, self.done + n)
            now = time.monotonic()
            if self.shown and (now - self._drawn_at >= _REDRAW_EVERY or self.done >= self.total):
                self._drawn_at = now
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the line as it stands (what a terminal shows)."""
        elapsed = (time.monotonic() if now is None else now) - self._started
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        text = f"{self.label} [{bar}] {self.done}/{self.total} {self.unit}"
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            left = (self.total - self.done) / rate if rate > 0 else 0.0
            text += f"  {rate:.1f} {self.unit}/s"
            text += f"  {format_duration(left)} left" if self.done < self.total else ""
        return text

    def _draw(self, now: float) -> None:
        self.stream.write("\r\x1b[2K" + self.line(now))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the line (a final redraw first); nothing is written when the bar is silent."""
        with self._lock:
            if self._drawn:
                self._draw(time.monotonic())
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False

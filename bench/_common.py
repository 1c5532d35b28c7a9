"""Shared helpers of the benchmarks: timing, tables, plots and summaries.

Nothing here is timed.  The machine line (``_machine.py``), the synthetic
corpus and queries (``_corpus.py``) and the hashing embedder
(``_hashed_embedder.py``) live in modules of their own; they are named here
too, so a script takes its shared helpers from one import.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _corpus import BenchChunk, make_corpus, make_queries
from _hashed_embedder import HashedEmbedder
from _machine import command_line, describe_load, describe_machine, describe_revision

__all__ = [
    "OUT_DIR",
    "BenchChunk",
    "HashedEmbedder",
    "Timer",
    "command_line",
    "describe_load",
    "describe_machine",
    "describe_revision",
    "format_table",
    "label_plot",
    "make_corpus",
    "make_queries",
    "percentile",
    "print_report",
    "pyplot",
    "save_png",
    "summarise",
    "time_calls",
    "write_summary",
]

OUT_DIR = Path(__file__).resolve().parent / "out"


# -- measuring -----------------------------------------------------------------------------


class Timer:
    """``with Timer() as t: ...`` then ``t.ms``."""

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self._start) * 1000


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile with linear interpolation (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def summarise(values: Sequence[float]) -> tuple[float, float]:
    """(median, p90) of ``values``."""
    return statistics.median(values), percentile(values, 90)


def time_calls(fn: Callable[[Any], Any], args: Sequence[Any]) -> list[float]:
    """Milliseconds of ``fn(a)`` for each ``a``, one call at a time."""
    out = []
    for a in args:
        t0 = time.perf_counter()
        fn(a)
        out.append((time.perf_counter() - t0) * 1000)
    return out


# -- output --------------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown pipe table, columns padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


def print_report(
    caption: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], started: float
) -> None:
    """Print the machine and load lines, ``caption``, the table and the seconds since
    ``started`` (a ``time.perf_counter()`` reading)."""
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}\n")
    print(f"{caption}\n")
    print(format_table(headers, rows))
    print(f"\n{time.perf_counter() - started:.0f} s")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def save_png(fig: Any, name: str) -> Path:
    """Save a matplotlib figure as ``bench/out/<name>.png`` and close it."""
    import matplotlib.pyplot as plt

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def write_summary(name: str, text: str) -> Path:
    """Write ``bench/out/<name>.md``."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label_plot(fig: Any, ax: Any, machine: str, *, xlabel: str, ylabel: str, title: str) -> None:
    """Labels, title, grid and legend of a one-axes plot, and the machine line under it."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.text(0.01, -0.02, machine, fontsize=6)


def quality_data_dir() -> Path:
    """``shared/quality-data`` beside the checkout (../shared), also from a worktree deeper down."""
    return next(
        (
            p / "shared" / "quality-data"
            for p in Path(__file__).resolve().parents
            if (p / "shared" / "quality-data").is_dir()
        ),
        Path("../shared/quality-data"),
    )

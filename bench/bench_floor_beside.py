"""The floor's margin for the other script's chunks beside chunks of the question's script.

``E5_FLOOR`` judges the vector-listed chunks in the other script than the
question by ``E5_MARGIN_FLOOR``'s margin (``accept`` 0.05) both when they are
alone in the list and when chunks of the question's script are listed too
(*beside*: a bilingual corpus).  Beside, the tune half's off-topic questions
are all flagged while a third of the answerable Arabic questions whose
answer is English are too.  This bench sweeps that margin over the rows of
``bench_floor_fit.collect`` (same plan, halves and features), by question
script and half: the share of answerable rows flagged (false flags) and of
off-topic rows flagged at each ``accept``, and the smallest ``accept`` (the
fewest false flags) at which the tune half's off-topic rows are still flagged
at 97.5% (the issue's target), with the held-out rates there.

    PYTHONPATH=$PWD python bench/bench_floor_beside.py      # ~4 min with the e5 cache filled
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe_load, describe_machine, format_table
from bench_floor import add_plan_arguments
from bench_floor_fit import HALVES, collect

from zerda_async.core.floor_model import FEATURES
from zerda_async.embedders import E5_MARGIN_FLOOR

ACCEPTS = tuple(round(0.005 * i, 3) for i in range(11))
"""Margins swept: 0 to the shipped 0.05, by 0.005."""
TARGET = 0.975
"""Off-topic rows flagged at least this often (the issue's target)."""


def share(flagged: NDArray[np.bool_], rows: NDArray[np.bool_]) -> float | None:
    """The share of ``rows`` that are ``flagged`` (``None``: no such row)."""
    return float(flagged[rows].mean()) if rows.any() else None


def cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_plan_arguments(parser)
    args = parser.parse_args(argv)
    rows = collect(args.per_half, args.covid_articles)
    margin, arabic = FEATURES.index("margin"), FEATURES.index("arabic_question")
    table, chosen = [], []
    for script, flag in (("Arabic", 1.0), ("other", 0.0)):
        best: float | None = None
        for half in HALVES:
            x = np.asarray(rows.features[(half, True)], dtype=np.float64)
            y = np.asarray(rows.relevant[(half, True)], dtype=bool)
            alone = np.asarray(rows.margin[(half, True)], dtype=bool)[:, 0]
            beside = ~alone & (x[:, arabic] == flag)
            answerable, off_topic = beside & y, beside & ~y
            for accept in ACCEPTS:
                flagged = x[:, margin] < accept
                false = share(flagged, answerable)
                caught = share(flagged, off_topic)
                label = f"{script} questions, {half}"
                counts = f"{int(answerable.sum())} / {int(off_topic.sum())}"
                table.append([label, counts, f"{accept:.3f}", cell(false), cell(caught)])
                if half == "tune" and best is None and caught is not None and caught >= TARGET:
                    best = accept
            if half == "held-out" and best is not None:
                flagged = x[:, margin] < best
                chosen.append(
                    f"{script} questions: accept {best:.3f} flags {TARGET:.1%}+ of the tune"
                    f" half's off-topic rows; held-out there: false flags"
                    f" {cell(share(flagged, answerable))}, off-topic flagged"
                    f" {cell(share(flagged, off_topic))}"
                    f" (E5_MARGIN_FLOOR: {E5_MARGIN_FLOOR.accept})"
                )
    headers = ["rows beside", "answerable / off-topic", "accept", "false flags", "off-topic"]
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}\n")
    print(format_table(headers, table))
    print("\n" + "\n".join(chosen))


if __name__ == "__main__":
    main()

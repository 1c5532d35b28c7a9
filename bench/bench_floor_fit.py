"""Fit the relevance floor's model (``E5_FLOOR``) on the tune half of the floor bench.

For every question of ``bench_floor.py``'s plan (same corpora, same halves:
even articles tune, odd ones held-out) the recommended profile retrieves the
chunks, and :func:`~zerda_async.core.floor_model.group_features` gives one
feature row per script of the vector-listed chunks.  Rows are labelled:

* an answerable question's row of the answer's script is relevant (its other
  rows are left out: in a bilingual corpus the other script's chunks are not
  where its answer is, and must not teach the model that they are);
* every row of an off-topic question is irrelevant.

Rows in the question's script fit the ``same`` weights, the others the
``cross`` weights (an L2-regularised logistic regression on standardised
features, by gradient descent).  The thresholds, folded into the biases:

* ``same``: at most 0.5% of the tune half's relevant rows fall below it
  (half of a 1% false-flag budget, the other half for data it was not fitted
  on);
* ``cross``: where the tune half's false flags equal its missed off-topic
  rows (a lost answer and a missed flag weigh alike): e5-small's
  cross-language evidence cannot meet a 1% budget with most off-topic
  questions flagged (the run prints the trade-off).

It prints the fitted model as code (paste it into
``zerda_async/embedders/_e5_floor.py``) and each side's rates on both halves.

    PYTHONPATH=$PWD python bench/bench_floor_fit.py [--per-half 150]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe_load, describe_machine
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA
from bench_floor import build, halves, make_engine

from zerda_async.core.floor_model import FEATURES, FloorWeights, group_features, script_of

Rows = dict[tuple[str, bool], tuple[list[list[float]], list[bool]]]
"""(half, cross) -> (feature rows, relevant?)."""

SAME_BUDGET = 0.005


def collect(per_half: int, covid_articles: int) -> Rows:
    """Feature rows of every question of the plan, by half and side."""
    corpora, plan = build(DATA, covid_articles)
    e5 = E5Embedder(E5Vectors())
    rows: Rows = {}
    engines = {}
    for kind, _, questions, corpus in plan:
        if corpus not in engines:
            engines[corpus] = make_engine(corpora[corpus], e5)
        state = engines[corpus]._state
        retriever = state.retriever
        assert retriever is not None
        scripts = {c.doc_id: script_of(c.text) for c in corpora[corpus]}
        top_k = state.config.retriever.top_k
        for half, picked in halves(questions, per_half).items():
            for q in picked:
                answer = scripts.get(sorted(q.relevant)[0]) if kind[0] == "a" else None
                asked = script_of(q.text)
                for cross, features in group_features(retriever.retrieve(q.text, top_k), q.text):
                    group = ("other" if asked == "ar" else "ar") if cross else asked
                    if answer is not None and group != answer:
                        continue
                    xs, ys = rows.setdefault((half, cross), ([], []))
                    xs.append(features)
                    ys.append(answer is not None)
    return rows


def fit(x: NDArray[np.float64], y: NDArray[np.float64], l2: float = 1e-3) -> FloorWeights:
    """Logistic regression (threshold 0.5 folded into the bias) in raw feature units."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / scale
    w = np.zeros(z.shape[1])
    b = 0.0
    for _ in range(4000):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        g = p - y
        w -= 0.5 * (z.T @ g / len(y) + l2 * w)
        b -= 0.5 * float(g.mean())
    raw = w / scale
    return FloorWeights(float(b - raw @ mean), tuple(float(v) for v in raw))


def scores(weights: FloorWeights, x: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = weights.bias + x @ np.asarray(weights.weights)
    return out


def threshold(s: NDArray[np.float64], y: NDArray[np.bool_], cross: bool) -> float:
    """The score at which to flag (see the module notes)."""
    if not cross:
        return float(np.quantile(s[y], SAME_BUDGET))
    grid = np.sort(s)
    gaps = [abs(float(np.mean(s[y] < t)) - float(np.mean(s[~y] >= t))) for t in grid]
    return float(grid[int(np.argmin(gaps))])


def rates(s: NDArray[np.float64], y: NDArray[np.bool_], at: float) -> str:
    false = float(np.mean(s[y] < at)) if y.any() else 0.0
    flagged = float(np.mean(s[~y] < at)) if (~y).any() else 0.0
    return (
        f"false flags {false:.1%} of {int(y.sum())},"
        f" off-topic flagged {flagged:.1%} of {int((~y).sum())}"
    )


def rounded(weights: FloorWeights, shift: float) -> FloorWeights:
    """``weights`` with the threshold ``shift`` folded in, rounded to 4 decimals."""
    return FloorWeights(round(weights.bias - shift, 4), tuple(round(w, 4) for w in weights.weights))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)
    args = parser.parse_args(argv)
    rows = collect(args.per_half, args.covid_articles)
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}")
    print(f"Features: {', '.join(FEATURES)}")
    fitted: dict[bool, FloorWeights] = {}
    for cross in (False, True):
        side = "cross" if cross else "same"
        x = np.asarray(rows[("tune", cross)][0], dtype=np.float64)
        y = np.asarray(rows[("tune", cross)][1], dtype=bool)
        raw = fit(x, y.astype(np.float64))
        tuned = scores(raw, x)
        fitted[cross] = rounded(raw, threshold(tuned, y, cross))
        for half in ("tune", "held-out"):
            hx = np.asarray(rows[(half, cross)][0], dtype=np.float64)
            hy = np.asarray(rows[(half, cross)][1], dtype=bool)
            print(f"{side} {half}: {rates(scores(fitted[cross], hx), hy, 0.0)}")
        if cross:
            for budget in (0.01, 0.05, 0.1, 0.2):
                at = float(np.quantile(scores(fitted[cross], x)[y], budget))
                hx = np.asarray(rows[("held-out", cross)][0], dtype=np.float64)
                hy = np.asarray(rows[("held-out", cross)][1], dtype=bool)
                print(
                    f"  cross at {budget:.0%} tune false flags: held-out"
                    f" {rates(scores(fitted[cross], hx), hy, at)}"
                )
    print("\nE5_FLOOR = FloorModel(")
    for name, cross in (("same", False), ("cross", True)):
        weights = ", ".join(repr(w) for w in fitted[cross].weights)
        print(f"    {name}=FloorWeights({fitted[cross].bias!r}, ({weights})),")
    print("    depth=50,\n)")


if __name__ == "__main__":
    main()

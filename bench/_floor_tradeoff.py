"""The floor benches' separability table: one logistic fit per feature set, three thresholds.

Shared by ``bench_pair.py`` (``_pair_floor.py``) and ``bench_floor_features.py``:
the rows are ``bench_floor_fit.py``'s, the fit its :func:`~bench_floor_fit.fit`
on the tune half, and each threshold is set on the tune half's scores, then
read on both halves.
"""

from __future__ import annotations

import numpy as np
from bench_floor_fit import Rows, auc, fit

from zerda_async.embedders import E5_FLOOR

__all__ = ["HALVES", "TRADEOFF_HEADERS", "at", "shipped_flags", "tradeoff"]

Matrix = np.ndarray
HALVES = ("tune", "held-out")

TRADEOFF_HEADERS = [
    "side",
    "features",
    "rows tune / held-out",
    "AUC tune / held-out",
    "at 1% false (tune → held-out: false / flagged)",
    "at 97.5% flagged",
    "at E5_FLOOR's tune flag rate",
]
"""The columns of a trade-off table: a feature set per row, then :func:`tradeoff`'s cells."""


def shipped_flags(rows: Rows, side: tuple[str, bool]) -> np.ndarray:
    """Per row: does ``E5_FLOOR`` flag it (the same weights; the margin rule across)?"""
    if side[1]:
        return np.asarray([m[2] for m in rows.margin[side]], dtype=bool)
    x = np.asarray(rows.features[side], dtype=np.float64)
    same = E5_FLOOR.same
    flagged: np.ndarray = (same.bias + x @ np.asarray(same.weights)) < 0
    return flagged


def at(s: Matrix, y: np.ndarray, threshold: float) -> str:
    """``false flags / off-topic flagged`` of the scores ``s`` flagged below ``threshold``."""
    false = float(np.mean(s[y] < threshold)) if y.any() else 0.0
    flagged = float(np.mean(s[~y] < threshold)) if (~y).any() else 0.0
    return f"{false:.1%} / {flagged:.1%}"


def tradeoff(x: dict[str, Matrix], y: dict[str, np.ndarray], rate: float) -> list[str]:
    """AUC (tune, held-out) and tune → held-out false / flagged at three tune thresholds:
    1% false flags, 97.5% of off-topic rows flagged, and ``rate`` of them flagged."""
    bias, w = fit(x["tune"], y["tune"])
    s = {h: bias + x[h] @ w for h in HALVES}
    tune_s, tune_y = s["tune"], y["tune"]
    points = [
        float(np.quantile(tune_s[tune_y], 0.01)),
        float(np.quantile(tune_s[~tune_y], 0.975)),
        float(np.quantile(tune_s[~tune_y], rate)),
    ]
    cells = [f"{auc(tune_s, tune_y):.3f} / {auc(s['held-out'], y['held-out']):.3f}"]
    cells += [f"{at(tune_s, tune_y, p)} → {at(s['held-out'], y['held-out'], p)}" for p in points]
    return cells

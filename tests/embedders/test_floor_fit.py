"""The threshold rule of ``bench/bench_floor_fit.py``, which prints ``E5_FLOOR``."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zerda_async.core.floor_model import FEATURES

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def fit(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("bench_floor_fit")


@pytest.mark.parametrize("n", [150, 199, 200, 830, 1001])
def test_the_same_threshold_flags_half_a_percent_at_most(fit: Any, n: int) -> None:
    rng = np.random.default_rng(n)
    scores = rng.normal(size=n)
    relevant = np.ones(n, dtype=bool)
    at = fit.threshold(scores, relevant)
    # floor(0.005 n) rows exactly: a budget of 4.15 rows flags 4, not 5.
    assert int((scores < at).sum()) == int(0.005 * n)


def test_the_printed_weights_flag_no_more_than_the_rule(fit: Any) -> None:
    rng = np.random.default_rng(11)
    n = 830
    x = np.column_stack(
        [
            rng.uniform(0.7, 0.95, n),
            rng.uniform(0, 0.1, n),
            rng.uniform(0, 1, n),
            rng.integers(0, 2, n),
        ]
    )
    y = rng.random(n) < 0.5
    bias, w = 0.123456789, rng.normal(size=len(FEATURES)) * 10.123456
    printed = fit.thresholded(bias, w, x, y, None)
    assert all(round(v, 4) == v for v in (printed.bias, *printed.weights))
    scores = np.asarray([printed.score(row) for row in x])
    assert int((scores[y] < 0).sum()) <= int(0.005 * y.sum())

"""Logistic regression by plain gradient descent, shared by the bench fits.

From zero, with a fixed step count and step size: deterministic, and no
dependency beyond numpy.  ``bench_floor_fit.py`` fits the relevance floor's
weights with it (standardised features, a bias of its own), ``_rerank_fit.py``
the learned reranker (a column of ones as its bias, penalised like the rest).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["descend"]


def descend(
    x: NDArray[np.float64],
    y: NDArray[np.float64] | NDArray[np.bool_],
    steps: int,
    *,
    rate: float = 0.5,
    l2: float = 1e-3,
    bias: bool = True,
) -> tuple[float, NDArray[np.float64]]:
    """(bias, weights) of the L2-penalised logistic loss of ``x`` against the labels ``y``.

    The penalty is on the weights only; with ``bias`` False the bias stays 0
    (a column of ones in ``x`` then plays its part, penalised too).
    """
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = p - y
        w -= rate * (x.T @ g / len(y) + l2 * w)
        if bias:
            b -= rate * float(g.mean())
    return b, w

"""A learned combination of a question's candidate evidence, for ``bench_rerank.py``.

The question it answers: does *some* weighting of the evidence the engine
already has (ranker score, fused score, query coverage, chunk cosine, BM25,
both methods' agreement, the base position; optionally the best sentence
cosine) order the candidates better than the recommended profile?  A
pointwise logistic regression, fitted on the tune half's candidates (a
candidate is positive when it is a relevant chunk), each feature min-max
scaled within its question's candidates.  Plain gradient descent from zero
with a fixed step count (:mod:`_logistic`): deterministic, no dependency.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _logistic import descend
from numpy.typing import NDArray

__all__ = ["CHEAP", "fit", "learned"]

CHEAP = ("composite", "fused", "coverage", "cosine", "bm25", "both")
"""Evidence the engine holds at query time without new vectors."""

_STEPS = 3000
_RATE = 0.5
_L2 = 1e-3


def _features(asked: Any, names: Sequence[str]) -> NDArray[np.float64]:
    cands = asked.candidates
    cols = []
    for name in names:
        values = np.array([float(getattr(c, name)) for c in cands])
        low, high = values.min(), values.max()
        cols.append((values - low) / (high - low) if high > low else np.ones_like(values))
    cols.append(np.array([1 - i / len(cands) for i in range(len(cands))]))  # base position
    return np.stack(cols, axis=1)


def fit(asked: Sequence[Any], names: Sequence[str]) -> NDArray[np.float64]:
    """Weights (features, the base position, then a bias) fitted on ``asked``."""
    rows, labels = [], []
    for a in asked:
        if a.candidates:
            rows.append(_features(a, names))
            labels += [c.doc_id in a.question.relevant for c in a.candidates]
    x = np.concatenate(rows)
    x = np.hstack([x, np.ones((x.shape[0], 1))])
    y = np.array(labels, dtype=np.float64)
    return descend(x, y, _STEPS, rate=_RATE, l2=_L2, bias=False)[1]


def learned(weights: NDArray[np.float64], names: Sequence[str]) -> Callable[[Any], list[str]]:
    """The ordering of a question's candidates by the fitted weights (best first)."""

    def order(asked: Any) -> list[str]:
        if not asked.candidates:
            return []
        scores = _features(asked, names) @ weights[:-1]
        return [asked.candidates[i].doc_id for i in np.argsort(-scores, kind="stable")]

    return order

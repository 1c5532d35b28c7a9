"""Two ways of fitting a linear map ``q -> q W`` on e5's centred question vectors.

* :func:`fit_pairs` (*answer pairs*): Adam on a softmax loss.  For each
  training question, its cosines to every chunk of its corpus divided by a
  temperature ``tau``; the loss is minus the log of the probability mass on its
  relevant chunks (XQuAD's twins make several relevant), averaged per
  question within a group and over groups, plus ``lam * |W - I|^2`` so the map
  stays near the identity unless the pairs pay for moving.
* :func:`fit_twins` (*twin alignment*): ridge regression, in closed form, of
  each question onto ``blend`` of the way to its twin in the other language
  (XQuAD's questions are translations of each other), pulled toward the
  identity with weight ``lam``:
  ``W = (X^T X + lam I)^-1 (X^T Y + lam I)`` with ``Y = blend T + (1 - blend) X``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float64]


@dataclass(frozen=True)
class Group:
    """Questions over one corpus: unit question rows, unit chunk rows, and per question
    the row indices of its relevant chunks (at least one)."""

    name: str
    questions: Matrix
    chunks: Matrix
    relevant: list[list[int]]


def unit(rows: NDArray[np.floating]) -> Matrix:
    """Rows scaled to length 1 (float64)."""
    m = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0.0, 1.0, norms)


def _loss_grad(w: Matrix, group: Group, tau: float) -> Matrix:
    """The gradient in ``w`` of the group's mean softmax loss (module notes)."""
    mapped_rows = group.questions @ w
    norms = np.linalg.norm(mapped_rows, axis=1, keepdims=True)
    n = mapped_rows / norms
    s = n @ group.chunks.T / tau
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    z = e.sum(axis=1, keepdims=True)
    target = np.zeros_like(e)
    for i, rows in enumerate(group.relevant):
        mass = e[i, rows]
        target[i, rows] = mass / mass.sum()
    g_s = (e / z - target) / (tau * len(group.relevant))
    g_n = g_s @ group.chunks
    g_mapped = (g_n - (g_n * n).sum(axis=1, keepdims=True) * n) / norms
    grad: Matrix = group.questions.T @ g_mapped
    return grad


def fit_pairs(groups: Sequence[Group], tau: float, lam: float, steps: int = 100) -> Matrix:
    """The answer-pairs map fitted on ``groups`` (module notes), Adam at rate 1e-3."""
    eye = np.eye(groups[0].questions.shape[1])
    w, m, v = eye.copy(), np.zeros_like(eye), np.zeros_like(eye)
    for t in range(1, steps + 1):
        grad = 2.0 * lam * (w - eye)
        for group in groups:
            grad += _loss_grad(w, group, tau) / len(groups)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= 1e-3 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def fit_twins(questions: Matrix, twins: Matrix, lam: float, blend: float) -> Matrix:
    """The twin-alignment map of ``questions`` toward ``twins`` (rows paired; module notes)."""
    eye = np.eye(questions.shape[1])
    target = blend * twins + (1.0 - blend) * questions
    gram = questions.T @ questions + lam * eye
    w: Matrix = np.linalg.solve(gram, questions.T @ target + lam * eye).astype(np.float64)
    return w


def ranks(questions: Matrix, group: Group) -> list[int]:
    """Each question's 1-based rank of its best relevant chunk by cosine (ties count
    against it: a chunk scoring the same is placed first)."""
    scores = unit(questions) @ group.chunks.T
    out = []
    for row, rows in zip(scores, group.relevant, strict=True):
        best = float(row[rows].max())
        out.append(1 + int((row > best).sum()))
    return out

"""``bench_feedback.py``'s part 3: other cheap changes to e5's vector list, measured alike.

Each idea re-scores the centred e5 vector list of a set (every chunk ranked
by numpy over cached vectors) and is compared, question by question, with
that list:

* ``mean-centred Rocchio``: the feedback of part 1 with each top chunk's
  vector less the mean chunk vector of the corpus (e5's vectors share a
  large common component; adding whole chunk vectors pulls the question
  toward every chunk alike);
* ``keyword feedback``: when most of the top ``k`` are in the other script
  than the question (``cross``), the text of those ``k`` chunks is run as a
  keyword query (the recommended profile's BM25) and the vector list's top
  50 re-scored by ``minmax(cosine) + beta * minmax(bm25)``: the words of
  the documents' language that the question could not share;
* ``hubness (CSLS)``: a chunk's cosine less ``gamma`` times its mean cosine
  to its 10 nearest other chunks (cross-domain similarity local scaling,
  with the corpus standing in for the questions): chunks near everything
  ("hubs") stop outranking the answer;
* ``script component from the top``: the centred question given back, along
  ``E5_DIRECTION``, ``lam`` times the mean component of its top 5 (one
  dimension of Rocchio), when ``cross``;
* ``query + passage form``: the question's ``passage: `` vector added to its
  ``query: `` one (``beta``), centred, when ``cross`` (one more query
  embedding).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _e5_vectors import E5Vectors

from zerda_async import ContextEngineConfig
from zerda_async.core.retrieval.keyword import KeywordRetriever

Matrix = np.ndarray
Idea = Callable[[Any], Matrix]
"""A set's data (``bench_feedback.SetData``) -> a score per question and chunk."""


def _top(data: Any, k: int) -> Matrix:
    sims = data.queries @ data.passages.T
    top: Matrix = np.argsort(-np.round(sims, 12), axis=1, kind="stable")[:, :k]
    return top


def _cross(data: Any, top: Matrix) -> Matrix:
    """Questions whose top chunks are mostly in the other script."""
    gate: Matrix = (data.p_ar[top] != data.q_ar[:, None]).mean(axis=1) > 0.5
    return gate


def _unit(rows: Matrix) -> Matrix:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Matrix = rows / np.where(norms > 0, norms, 1.0)
    return out


def _minmax(values: Matrix) -> Matrix:
    low, high = values.min(), values.max()
    out: Matrix = (values - low) / (high - low) if high > low else np.ones_like(values)
    return out


def mean_centred(k: int, alpha: float, cross: bool) -> Idea:
    """Rocchio over the top ``k`` chunk vectors less the corpus's mean chunk vector."""

    def score(data: Any) -> Matrix:
        top = _top(data, k)
        shift = (data.passages[top] - data.passages.mean(axis=0)).mean(axis=1)
        if cross:
            shift = shift * _cross(data, top)[:, None]
        moved: Matrix = _unit(data.queries + alpha * shift) @ data.passages.T
        return moved

    return score


def keyword_feedback(k: int, beta: float) -> Idea:
    """The top ``k`` chunks' text as a keyword query, re-scoring the top 50 (``cross`` only)."""

    def score(data: Any) -> Matrix:
        chunks = data.corpus.chunks
        keyword = KeywordRetriever(ContextEngineConfig.recommended(), chunks)
        at = {c.doc_id: i for i, c in enumerate(chunks)}
        sims = data.queries @ data.passages.T
        out: Matrix = sims.copy()
        tops = _top(data, 50)
        gate = _cross(data, tops[:, :k])
        for row in np.flatnonzero(gate):
            listed = tops[row]
            bm25 = np.zeros(len(chunks))
            text = " ".join(chunks[j].text for j in listed[:k])
            for hit in keyword.retrieve(text, 50):
                bm25[at[hit.doc_id]] = hit.keyword_score
            out[row] = -1e9
            out[row, listed] = _minmax(sims[row, listed]) + beta * _minmax(bm25[listed])
        return out

    return score


def hubness(gamma: float, neighbours: int = 10) -> Idea:
    """Cosine less ``gamma`` times the chunk's mean cosine to its nearest other chunks."""

    def score(data: Any) -> Matrix:
        between = data.passages @ data.passages.T
        np.fill_diagonal(between, -1.0)
        crowd = -np.sort(-between, axis=1)[:, :neighbours].mean(axis=1)
        out: Matrix = data.queries @ data.passages.T - gamma * crowd[None, :]
        return out

    return score


def script_from_top(lam: float, direction: Matrix) -> Idea:
    """The question's script component set to ``lam`` times its top 5's (``cross`` only)."""

    def score(data: Any) -> Matrix:
        top = _top(data, 5)
        target = (data.passages[top] @ direction).mean(axis=1) * _cross(data, top)
        out: Matrix = (data.queries + lam * np.outer(target, direction)) @ data.passages.T
        return out

    return score


def passage_form(vectors: E5Vectors, beta: float, centre: Callable[[Matrix], Matrix]) -> Idea:
    """The question's ``passage: `` vector added to its ``query: `` one (``cross`` only)."""

    def score(data: Any) -> Matrix:
        asked = [q.text for q in data.corpus.questions]
        extra = centre(vectors.passages(asked, progress=True).astype(np.float64))
        gate = _cross(data, _top(data, 5))
        moved = data.queries + beta * extra * gate[:, None]
        out: Matrix = moved @ data.passages.T
        return out

    return score


def ideas(
    vectors: E5Vectors, direction: Matrix, centre: Callable[[Matrix], Matrix]
) -> dict[str, Idea]:
    """Every idea of part 3, by label."""
    return {
        "mean-centred Rocchio k 3, α 0.25": mean_centred(3, 0.25, False),
        "mean-centred Rocchio k 3, α 0.25, cross only": mean_centred(3, 0.25, True),
        "mean-centred Rocchio k 5, α 0.25, cross only": mean_centred(5, 0.25, True),
        "keyword feedback k 3, β 0.3, cross only": keyword_feedback(3, 0.3),
        "keyword feedback k 5, β 0.3, cross only": keyword_feedback(5, 0.3),
        "hubness (CSLS) γ 0.25": hubness(0.25),
        "hubness (CSLS) γ 0.5": hubness(0.5),
        "script component from the top 5, ×0.5, cross only": script_from_top(0.5, direction),
        "query + passage form, β 0.25, cross only": passage_form(vectors, 0.25, centre),
    }


def part_three(
    sets: Sequence[Any], table: dict[str, Idea], rank: Callable[[Matrix, Any], list[Any]]
) -> dict[str, dict[str, list[Any]]]:
    """Per idea and set: the re-scored list's ranks (``rank(scores, data)``)."""
    return {name: {d.corpus.name: rank(idea(d), d) for d in sets} for name, idea in table.items()}

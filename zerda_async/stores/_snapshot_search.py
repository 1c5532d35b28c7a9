"""Top-k searches over one :class:`~zerda_async.core.index.CorpusIndex` snapshot.

Shared by :class:`~._memory.MemoryIndexStore` and the PostgreSQL store's
local copy (:mod:`._pg_local_copy`), so both rank exactly as the in-memory
retrievers do: the same index code, the same filter masks, ties by corpus
position.  Each function is plain (no awaiting), so a caller may run it in a
worker thread; ``positions``, the second argument of each, maps the
snapshot's positions to the store's (``None``: the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.index import CorpusIndex
from ..core.retrieval._common import stable_top
from ._filters import Condition
from ._protocols import Hit

__all__ = ["keyword_hits", "metadata_hits", "vector_hits"]


def vector_hits(
    index: CorpusIndex,
    positions: NDArray[np.int64] | None,
    query_vector: ArrayLike,
    k: int,
    conditions: tuple[Condition, ...],
) -> list[Hit]:
    """Top ``k`` live chunks by rounded cosine; ``[]`` when the index holds no vectors."""
    vectors = index.vectors
    if vectors is None or index.n_live == 0 or k <= 0:
        return []
    dim = np.asarray(query_vector).size
    if dim != vectors.dim:
        raise ValueError(
            f"query vector dimension {dim} does not match the index store ({vectors.dim})"
        )
    rows, sims = vectors.similarities(query_vector)
    if rows is None:
        rows = np.arange(sims.shape[0], dtype=np.intp)
    return _hits(index, rows, sims, k, conditions, positions)


def keyword_hits(
    index: CorpusIndex,
    positions: NDArray[np.int64] | None,
    query: str,
    k: int,
    conditions: tuple[Condition, ...],
) -> list[Hit]:
    """Top ``k`` live chunks by BM25 of ``query``'s tokens (the index's analyser), score > 0."""
    if k <= 0:
        return []
    keyword = index.keyword
    terms = list(dict.fromkeys(keyword.analyzer.tokenize(query)))
    rows, scores = keyword.scores(terms)
    return _hits(index, rows, scores, k, conditions, positions)


def metadata_hits(
    index: CorpusIndex,
    positions: NDArray[np.int64] | None,
    pairs: Mapping[str, Any],
    k: int,
) -> list[Hit]:
    """Chunks whose metadata equals at least one pair, scored by the fraction matched."""
    if not pairs or k <= 0:
        return []
    rows, counts = index.metadata.matches(pairs)
    return _hits(index, rows, counts / len(pairs), k, (), positions)


def _hits(
    index: CorpusIndex,
    rows: NDArray[np.intp],
    scores: NDArray[np.float64],
    k: int,
    conditions: tuple[Condition, ...],
    positions: NDArray[np.int64] | None,
) -> list[Hit]:
    if conditions:
        keep = index.metadata.mask(conditions)[rows]
        rows, scores = rows[keep], scores[keep]
    order = stable_top(scores, k)
    chunks = index.chunks
    picked = rows[order]
    named = picked if positions is None else positions[picked]
    return [
        Hit(position=p, chunk=chunks[r], score=s)
        for p, r, s in zip(named.tolist(), picked.tolist(), scores[order].tolist(), strict=True)
    ]

"""The in-memory index's searches: top-k hits with their evidence over one corpus snapshot.

One implementation of the searches an index store answers, over a
:class:`~zerda_async.core.index.CorpusIndex`: the async engine's own index
(a built one or a saved directory loaded), the memory index store and the
PostgreSQL store's local copy all search through it, with the index code the
retrievers use — the same scores, filter masks and ties (by corpus position).
Plain calls (no awaiting), so a caller may run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from zerda_async.runtime import Steps, finish

from ..filter_language import Condition
from ..index import STEP_WORK, CorpusIndex
from ._common import HashMemo, stable_top
from .coverage import QueryWeights
from .hits import Hit

__all__ = ["IndexSearches"]


class IndexSearches:
    """Vector, keyword and metadata searches over one immutable ``index`` snapshot.

    ``positions`` maps the snapshot's positions to the ones its hits name
    (a store's; ``None``: the snapshot's own).  ``k`` cuts every list like a
    slice (``[:k]``).  Each chunk's content hash is memoised on its first hit.
    """

    __slots__ = ("_hashes", "index", "positions")

    def __init__(self, index: CorpusIndex, positions: NDArray[np.int64] | None = None) -> None:
        self.index = index
        self.positions = positions
        self._hashes = HashMemo(index.chunks)

    def vector(
        self, query_vector: ArrayLike, k: int, conditions: tuple[Condition, ...] = ()
    ) -> list[Hit]:
        """The best live chunks by rounded cosine; ``[]`` when the index holds no vectors.

        A query vector of another dimension than the index's raises ``ValueError``.
        """
        return finish(self.vector_steps(query_vector, k, conditions, 0))

    def vector_steps(
        self,
        query_vector: ArrayLike,
        k: int,
        conditions: tuple[Condition, ...] = (),
        step_work: int = STEP_WORK,
    ) -> Steps[list[Hit]]:
        """:meth:`vector` in pieces: the scan in blocks of ``step_work`` multiply-adds, the cut."""
        vectors = self.index.vectors
        if vectors is None or self.index.n_live == 0:
            return []
        dim = np.asarray(query_vector).size
        if dim != vectors.dim:
            raise ValueError(
                f"query vector dimension {dim} does not match the index ({vectors.dim})"
            )
        rows, sims = yield from vectors.similarity_steps(query_vector, step_work)
        if step_work > 0:
            yield
        if rows is None:
            rows = np.arange(sims.shape[0], dtype=np.intp)
        return self._hits(*self._top(rows, sims, k, conditions))

    def keyword(self, query: str, k: int, conditions: tuple[Condition, ...] = ()) -> list[Hit]:
        """The best live chunks by BM25 of ``query``'s terms (score > 0), with their coverage."""
        keyword = self.index.keyword
        terms = list(dict.fromkeys(keyword.analyzer.tokenize(query)))
        rows, scores = keyword.scores(terms)
        picked, values = self._top(rows, scores, k, conditions)
        return self._hits(picked, values, keyword.coverage(terms, picked).tolist())

    def metadata(
        self, pairs: Mapping[str, Any], k: int, conditions: tuple[Condition, ...] = ()
    ) -> list[Hit]:
        """Chunks whose metadata equals at least one pair, scored by the share of pairs matched."""
        if not pairs:
            return []
        rows, counts = self.index.metadata.matches(pairs)
        return self._hits(*self._top(rows, counts / len(pairs), k, conditions))

    def query_weights(self, query: str) -> QueryWeights:
        """``query``'s distinct analysed terms with their idf over the live chunks."""
        return self.index.keyword.query_weights(query)

    def _top(
        self,
        rows: NDArray[np.intp],
        scores: NDArray[np.float64],
        k: int,
        conditions: tuple[Condition, ...],
    ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """The best ``k`` of ``rows`` that satisfy ``conditions``, and their scores."""
        if conditions:
            keep = self.index.metadata.mask(conditions)[rows]
            rows, scores = rows[keep], scores[keep]
        order = stable_top(scores, k)
        return rows[order], scores[order]

    def _hits(
        self,
        picked: NDArray[np.intp],
        values: NDArray[np.float64],
        coverage: list[float] | None = None,
    ) -> list[Hit]:
        chunks = self.index.chunks
        rows = picked.tolist()
        named = rows if self.positions is None else self.positions[picked].tolist()
        shares = coverage if coverage is not None else [-1.0] * len(rows)
        hashes = self._hashes.digests(rows)
        return [
            Hit(p, chunks[r], s, c, h)
            for p, r, s, c, h in zip(named, rows, values.tolist(), shares, hashes, strict=True)
        ]

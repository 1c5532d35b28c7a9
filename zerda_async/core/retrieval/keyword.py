"""BM25 keyword retrieval over per-term postings (:mod:`zerda_async.core.index.keyword_index`).

The retriever holds one immutable view (chunks + :class:`KeywordIndex`) and
swaps it whole on :meth:`KeywordRetriever.index_chunks`, so a ``retrieve``
running in a worker thread never sees a half-built index.  A query costs one
vectorised accumulation per distinct query term; no Python code runs per chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import ContextEngineConfig, RetrieverConfig
from ..index.keyword_index import BM25_B, BM25_K1, KeywordIndex
from ..models import RetrievalMethod, ScoredChunk
from ._common import HashMemo, chunk_text, live_items, stable_top
from .tokenize import tokenize

__all__ = ["BM25_B", "BM25_K1", "KeywordRetriever"]


@dataclass(frozen=True, slots=True)
class _View:
    """The chunks (by position) and the index over them; replaced as a whole."""

    chunks: Sequence[Any]
    index: KeywordIndex
    hashes: HashMemo


class KeywordRetriever:
    """BM25 retrieval (``k1 = 1.5``, ``b = 0.75``) with scores normalised to the best hit.

    ``chunks`` (if truthy) are indexed immediately.  Chunk text is read with the
    :class:`ScoredChunk` duck-typing rules and tokenised with
    :func:`~zerda_async.core.retrieval.tokenize.tokenize`.
    """

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._view = _View((), KeywordIndex.build([]), HashMemo(()))
        if chunks:
            self.index_chunks(chunks)

    @classmethod
    def over(
        cls, config: ContextEngineConfig, chunks: Sequence[Any], index: KeywordIndex
    ) -> KeywordRetriever:
        """A retriever serving a prebuilt ``index`` whose positions hold ``chunks``."""
        retriever = cls(config)
        retriever._view = _View(chunks, index, HashMemo(chunks))
        return retriever

    @property
    def chunks(self) -> list[Any]:
        """The indexed chunks, in index order."""
        return live_items(self._view.chunks, self._view.index.live)

    def index_chunks(self, chunks: Iterable[Any]) -> None:
        """Build a fresh index over ``chunks``, replacing any previous one.

        A text that cannot be lower-cased (``None`` once ``page_content`` is
        consulted) raises :class:`AttributeError` and leaves the old index in place.
        """
        items = tuple(chunks)
        self._view = _View(
            items, KeywordIndex.build([chunk_text(c) for c in items]), HashMemo(items)
        )

    def retrieve(self, query: str, top_k: int) -> list[ScoredChunk]:
        """Best BM25 matches for ``query``, at most ``top_k`` (Python slice semantics).

        Only chunks sharing at least one token with the query are returned,
        best first (ties keep index order); ``keyword_score`` is the BM25 score
        divided by the best score, so the first result scores ``1.0``.
        """
        view = self._view
        terms = list(dict.fromkeys(tokenize(query)))
        hits, hit_scores = view.index.scores(terms)
        if hits.shape[0] == 0:
            return []
        order = stable_top(hit_scores, top_k)
        if order.shape[0] == 0:
            return []
        picked = hits[order].tolist()
        values = hit_scores[order]
        normalised = (values / values[0]).tolist()
        return [
            view.hashes.scored(
                doc,
                keyword_score=score,
                retrieval_method=RetrievalMethod.KEYWORD,
                retrieval_rank=rank,
            )
            for rank, (doc, score) in enumerate(zip(picked, normalised, strict=True))
        ]

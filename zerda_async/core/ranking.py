"""Composite ranking of filtered chunks.

The ranker recomputes every chunk's ``composite_score`` from five weighted
factors (vector score, keyword overlap, source quality, recency, retrieval
position), overwriting whatever the retriever stored, and keeps the best ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .config import ContextEngineConfig
from .models import QueryAnalysis, ScoredChunk
from .strategy import ChunkRankingStrategy

__all__ = ["CompositeRanker"]

logger = logging.getLogger(__name__)


class CompositeRanker(ChunkRankingStrategy):
    """Scores chunks with the weights of ``config.ranking`` and sorts them.

    The weights and ``max_chunks_to_rank`` are read live from the
    configuration on every call.
    """

    def __init__(self, config: ContextEngineConfig) -> None:
        self.cfg = config.ranking

    def rank(
        self,
        chunks: list[ScoredChunk],
        analysis: QueryAnalysis,
        max_n: int | None = None,
    ) -> list[ScoredChunk]:
        """Score every chunk in place, sort best first (stably) and keep the top ones.

        ``max_n`` falls back to ``max_chunks_to_rank`` when it is ``None`` *or*
        ``0``; a negative value slices from the end like any Python slice.
        The caller's chunk objects have their ``composite_score`` overwritten.
        """
        if not chunks:
            return []
        for sc in chunks:
            sc.composite_score = self._compute_composite(sc, analysis)
        ranked = sorted(chunks, key=lambda sc: sc.composite_score, reverse=True)
        limit = max_n or self.cfg.max_chunks_to_rank
        result = ranked[:limit]
        logger.debug(
            "CompositeRanker: %d → %d | top score=%.4f",
            len(chunks),
            len(result),
            result[0].composite_score if result else 0,
        )
        return result

    def _compute_composite(self, sc: ScoredChunk, analysis: QueryAnalysis) -> float:
        """The weighted five-factor score of one chunk, rounded to 6 decimals."""
        w = self.cfg
        quality = sc.source_quality.value / 3.0
        keyword = self._keyword_boost(sc.text, analysis.keywords)
        # No upper clamp: a negative retrieval rank yields a position term above 1.
        position = max(0.0, 1.0 - sc.retrieval_rank * 0.01)
        # The terms are added left to right in this exact order; regrouping
        # them can change the sixth decimal after rounding.
        score = (
            sc.vector_score * w.weight_vector_score
            + keyword * w.weight_keyword_score
            + quality * w.weight_source_quality
            + sc.recency_score * w.weight_recency
            + position * w.weight_position
        )
        return round(score, 6)

    @staticmethod
    def _keyword_boost(text: str, keywords: Sequence[str]) -> float:
        """Share of ``keywords`` found as substrings of the lower-cased text, at most 1.

        Keywords are used as given (the analyzer already lower-cased and
        normalised them) and duplicates count once per occurrence.
        """
        if not keywords or not text:
            return 0.0
        text_l = text.lower()
        matches = sum(1 for kw in keywords if kw in text_l)
        return min(matches / len(keywords), 1.0)

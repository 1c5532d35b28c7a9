"""Composite ranking of filtered chunks.

The ranker recomputes every chunk's ``composite_score`` from five weighted
factors (vector score, keyword overlap, source quality, recency, retrieval
position), overwriting whatever the retriever stored, and keeps the best ones.
``ranking.mode = "evidence"`` (opt-in) replaces the vector factor by the fused
retrieval score and substring matching by overlap of analysed terms.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import ConfigError
from .config import ContextEngineConfig
from .index.analysis import TermMemo, analyzer_for
from .models import QueryAnalysis, ScoredChunk, SourceQuality
from .strategy import ChunkRankingStrategy

__all__ = ["CompositeRanker"]

logger = logging.getLogger(__name__)

# Lower-cased chunk texts kept at most (then the memo starts over).
_LOWER_MEMO = 4096


class CompositeRanker(ChunkRankingStrategy):
    """Scores chunks with the weights of ``config.ranking`` and sorts them.

    The weights and ``max_chunks_to_rank`` are read live from the
    configuration on every call.
    """

    def __init__(self, config: ContextEngineConfig) -> None:
        self.cfg = config.ranking
        self._retriever_cfg = config.retriever
        self._terms = TermMemo()
        # Chunk text -> its lower-cased form: a candidate returns query after
        # query, and lower-casing it was a fifth of the ranker's time.
        self._lower: dict[str, str] = {}

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
        mode = self.cfg.mode
        if mode == "evidence":
            self._score_by_evidence(chunks, analysis)
        elif mode == "documented":
            for sc in chunks:
                sc.composite_score = self._compute_composite(sc, analysis)
        else:
            raise ConfigError(f"unknown ranking.mode {mode!r}; expected 'documented' or 'evidence'")
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
        quality = _quality_value(sc.source_quality) / 3.0
        keyword = self._keyword_share(sc.text, analysis.keywords)
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

    def _score_by_evidence(self, chunks: list[ScoredChunk], analysis: QueryAnalysis) -> None:
        """``ranking.mode = "evidence"``: retrieval evidence first, then the documented boosts.

        The evidence is each chunk's ``fused_score`` (RRF) divided by the best
        one, or, when no chunk carries a fused score (documented fusion, an
        injected retriever), its ``composite_score`` from retrieval likewise.
        Keyword overlap is the share of the query's analysed terms (by the
        ``retriever.text_analyzer``) that the chunk's analysed terms contain.  (The
        idf-weighted ``query_coverage`` measured as well as this, and only this
        package's keyword index sets it, so a store-backed index would rank
        differently: it serves the composer's ``min_query_coverage`` only.)
        """
        w = self.cfg
        fused = any(sc.fused_score > 0 for sc in chunks)
        evidence = [sc.fused_score if fused else sc.composite_score for sc in chunks]
        best = max(evidence)
        analyzer = analyzer_for(self._retriever_cfg.text_analyzer)
        query_terms = set(analyzer.tokenize(analysis.original_query))
        n_terms = len(query_terms)
        terms = self._terms.terms
        # The weights are read once per call (the same values for every chunk).
        w_evidence, w_keyword = w.weight_evidence, w.weight_keyword_score
        w_quality, w_recency, w_position = (
            w.weight_source_quality,
            w.weight_recency,
            w.weight_position,
        )
        for sc, raw in zip(chunks, evidence, strict=True):
            share = raw / best if best > 0 else 0.0
            overlap = 0.0
            if query_terms:
                overlap = len(query_terms & terms(sc, analyzer)) / n_terms
            position = 1.0 - sc.retrieval_rank * 0.01
            if not position > 0.0:  # ``max(0.0, position)``, NaN to 0.0 alike
                position = 0.0
            score = (
                share * w_evidence
                + overlap * w_keyword
                + _quality_value(sc.source_quality) / 3.0 * w_quality
                + sc.recency_score * w_recency
                + position * w_position
            )
            sc.composite_score = round(score, 6)

    def _keyword_share(self, text: str, keywords: Sequence[str]) -> float:
        """:meth:`_keyword_boost` with the lower-cased text memoised (same value)."""
        if not keywords or not text or type(text) is not str:
            return self._keyword_boost(text, keywords)
        memo = self._lower
        text_l = memo.get(text)
        if text_l is None:
            if len(memo) >= _LOWER_MEMO:
                memo.clear()
            text_l = memo[text] = text.lower()
        return _share_in(text_l, keywords)

    @staticmethod
    def _keyword_boost(text: str, keywords: Sequence[str]) -> float:
        """Share of ``keywords`` found as substrings of the lower-cased text, at most 1.

        Keywords are used as given (the analyzer already lower-cased and
        normalised them) and duplicates count once per occurrence.
        """
        if not keywords or not text:
            return 0.0
        return _share_in(text.lower(), keywords)


def _share_in(text_l: str, keywords: Sequence[str]) -> float:
    """Share of (non-empty) ``keywords`` that are substrings of the lower-cased ``text_l``."""
    matches = 0
    for kw in keywords:
        if kw in text_l:
            matches += 1
    return min(matches / len(keywords), 1.0)


def _quality_value(level: SourceQuality) -> int:
    """``level.value``; a plain member's ``_value_`` is read without the descriptor call."""
    value: int = level._value_ if type(level) is SourceQuality else level.value
    return value

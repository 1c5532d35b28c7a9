"""Tests of CompositeRanker (pipeline spec §3 and quirks §7.5, 7.6, 7.15)."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
from support.chunks import Chunk

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import QueryAnalysis, ScoredChunk, SourceQuality
from zerda_async.core.ranking import CompositeRanker
from zerda_async.core.strategy import ChunkRankingStrategy

EN_KEYWORDS = ["learning", "machine", "what"]


def analysis(keywords: list[str]) -> QueryAnalysis:
    return QueryAnalysis(original_query="q", normalized="q", keywords=list(keywords))


def sc(text: str, doc_id: str = "", **scores: Any) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(doc_id, text), **scores)


def ranker(**weights: Any) -> CompositeRanker:
    cfg = ContextEngineConfig()
    for key, value in weights.items():
        setattr(cfg.ranking, key, value)
    return CompositeRanker(cfg)


def test_is_a_ranking_strategy() -> None:
    assert isinstance(ranker(), ChunkRankingStrategy)


def test_worked_examples_default_weights() -> None:
    a = analysis(EN_KEYWORDS)
    c1 = sc("Machine learning is a field of AI that learns from data.", "d1", vector_score=0.9)
    c2 = sc(
        "Deep learning uses neural networks with many layers.",
        "d2",
        vector_score=0.5,
        retrieval_rank=1,
    )
    r = ranker()
    assert r._compute_composite(c1, a) == 0.576667
    assert r._compute_composite(c2, a) == 0.332833


GRID: dict[str, list[float]] = {
    "HIGH": [0.746667, 0.744167, 0.721667, 0.696667, 0.696667],
    "MEDIUM": [0.68, 0.6775, 0.655, 0.63, 0.63],
    "LOW": [0.613333, 0.610833, 0.588333, 0.563333, 0.563333],
    "UNKNOWN": [0.546667, 0.544167, 0.521667, 0.496667, 0.496667],
}
RANKS = [0, 5, 50, 100, 150]


@pytest.mark.parametrize("quality", list(GRID))
def test_source_quality_rank_grid(quality: str) -> None:
    a = analysis(EN_KEYWORDS)
    r = ranker()
    for rank, expected in zip(RANKS, GRID[quality], strict=True):
        chunk = sc(
            "machine learning",
            vector_score=0.7,
            recency_score=0.5,
            source_quality=SourceQuality[quality],
            retrieval_rank=rank,
        )
        assert r._compute_composite(chunk, a) == expected


def test_summation_order_is_left_to_right() -> None:
    w = ContextEngineConfig().ranking
    chunk = sc(
        "machine learning",
        vector_score=0.123457,
        recency_score=0.987651,
        source_quality=SourceQuality.MEDIUM,
        retrieval_rank=7,
    )
    k = 2 / 3
    raw = (
        0.123457 * w.weight_vector_score
        + k * w.weight_keyword_score
        + (2 / 3.0) * w.weight_source_quality
        + 0.987651 * w.weight_recency
        + max(0.0, 1.0 - 7 * 0.01) * w.weight_position
    )
    assert ranker()._compute_composite(chunk, analysis(EN_KEYWORDS)) == round(raw, 6)


def test_keyword_and_metadata_scores_are_ignored() -> None:
    a = analysis([])
    plain = sc("some text", vector_score=0.5)
    extra = sc("some text", vector_score=0.5, keyword_score=0.9, metadata_score=0.9)
    assert ranker()._compute_composite(plain, a) == ranker()._compute_composite(extra, a)


def test_position_term_bounds() -> None:
    r = ranker(
        weight_vector_score=0.0,
        weight_keyword_score=0.0,
        weight_source_quality=0.0,
        weight_recency=0.0,
        weight_position=1.0,
    )
    a = analysis([])
    assert r._compute_composite(sc("t", retrieval_rank=0), a) == 1.0
    assert r._compute_composite(sc("t", retrieval_rank=99), a) == 0.01
    assert r._compute_composite(sc("t", retrieval_rank=100), a) == 0.0
    assert r._compute_composite(sc("t", retrieval_rank=1000), a) == 0.0
    # No upper clamp for negative ranks.
    assert r._compute_composite(sc("t", retrieval_rank=-50), a) == 1.5


def test_negative_and_zero_weights() -> None:
    r = ranker(weight_vector_score=-1.0, weight_position=0.0)
    chunk = sc("t", vector_score=0.25)
    assert r._compute_composite(chunk, analysis([])) == -0.25


def test_rounding_to_six_decimals() -> None:
    r = ranker(
        weight_vector_score=1.0,
        weight_keyword_score=0.0,
        weight_source_quality=0.0,
        weight_recency=0.0,
        weight_position=0.0,
    )
    assert r._compute_composite(sc("t", vector_score=0.1234565), analysis([])) == round(
        0.1234565, 6
    )
    assert r._compute_composite(sc("t", vector_score=1 / 3), analysis([])) == 0.333333


def test_keyword_boost_rules() -> None:
    boost = CompositeRanker._keyword_boost
    assert boost("", ["a"]) == 0.0
    assert boost("abc", []) == 0.0
    assert boost("Machine Learning", ["machine", "learning"]) == 1.0
    # Keywords are not lower-cased, only the text is.
    assert boost("Machine Learning", ["Machine"]) == 0.0
    # Plain substring match.
    assert boost("relearning", ["learn"]) == 1.0
    # Duplicates count per occurrence; the share is capped at 1.
    assert boost("machine", ["machine", "machine", "deep"]) == pytest.approx(2 / 3)
    assert boost("machine", ["machine", "machine"]) == 1.0


def test_keyword_boost_arabic_normalisation_mismatch_quirk() -> None:
    text = "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي"
    assert CompositeRanker._keyword_boost(text, ["التعلم", "الالي؟"]) == 0.5
    # Even the bare normalised form does not match the hamza-bearing text.
    assert CompositeRanker._keyword_boost(text, ["الالي"]) == 0.0


def test_rank_sorts_descending_and_is_stable() -> None:
    chunks = [
        sc("t", "a", vector_score=0.1),
        sc("t", "b", vector_score=0.5),
        sc("t", "c", vector_score=0.1),
        sc("t", "d", vector_score=0.5),
    ]
    out = ranker().rank(chunks, analysis([]))
    assert [c.doc_id for c in out] == ["b", "d", "a", "c"]


def test_rank_overwrites_composite_in_place_quirk() -> None:
    chunks = [sc("t", "a", composite_score=9.9), sc("t", "b", composite_score=9.9)]
    out = ranker().rank(chunks, analysis([]), max_n=1)
    assert len(out) == 1
    assert [c.composite_score for c in chunks] == [0.05, 0.05]


def test_rank_max_n_zero_or_none_uses_config_quirk() -> None:
    chunks = [sc("t", str(i), vector_score=i / 100) for i in range(20)]
    r = ranker()
    assert len(r.rank(chunks, analysis([]))) == 15
    assert len(r.rank(chunks, analysis([]), max_n=0)) == 15
    assert len(r.rank(chunks, analysis([]), max_n=3)) == 3
    assert len(r.rank(chunks, analysis([]), max_n=100)) == 20


def test_rank_negative_max_n_slices_from_end() -> None:
    chunks = [sc("t", str(i), vector_score=i / 10) for i in range(5)]
    out = ranker().rank(chunks, analysis([]), max_n=-2)
    assert [c.doc_id for c in out] == ["4", "3", "2"]


def test_rank_reads_config_live() -> None:
    cfg = ContextEngineConfig()
    r = CompositeRanker(cfg)
    cfg.ranking.max_chunks_to_rank = 2
    cfg.ranking.weight_position = 0.0
    chunks = [sc("t", str(i)) for i in range(5)]
    out = r.rank(chunks, analysis([]))
    assert len(out) == 2
    assert out[0].composite_score == 0.0


def test_rank_empty_or_none_returns_new_empty_list() -> None:
    r = ranker()
    empty: list[ScoredChunk] = []
    out = r.rank(empty, analysis([]))
    assert out == []
    assert out is not empty
    assert r.rank(None, analysis([])) == []  # type: ignore[arg-type]


def test_rank_input_list_not_reordered() -> None:
    chunks = [sc("t", "a", vector_score=0.1), sc("t", "b", vector_score=0.9)]
    ranker().rank(chunks, analysis([]))
    assert [c.doc_id for c in chunks] == ["a", "b"]


def test_rank_logs_summary(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.ranking"):
        ranker().rank([sc("t", "a", vector_score=1.0)], analysis([]), max_n=1)
    assert [r.getMessage() for r in caplog.records] == ["CompositeRanker: 1 → 1 | top score=0.4500"]


def test_string_source_quality_raises_attribute_error() -> None:
    chunk = sc("t")
    chunk.source_quality = "HIGH"  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        ranker().rank([chunk], analysis([]))


def test_non_chunk_items_raise() -> None:
    with pytest.raises(AttributeError):
        ranker().rank(["text"], analysis([]))  # type: ignore[list-item]


def test_nan_scores_propagate() -> None:
    chunk = sc("t", vector_score=math.nan)
    assert math.isnan(ranker()._compute_composite(chunk, analysis([])))


def test_rank_huge_pool() -> None:
    chunks = [sc("machine", str(i), vector_score=(i % 97) / 97) for i in range(20000)]
    out = ranker().rank(chunks, analysis(["machine"]), max_n=5)
    assert [c.composite_score for c in out] == sorted(
        (c.composite_score for c in chunks), reverse=True
    )[:5]

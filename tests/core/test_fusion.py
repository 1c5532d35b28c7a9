"""Weighted Reciprocal Rank Fusion on hand-computed cases, and the hybrid retriever's rrf mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import HybridRetriever, KeywordRetriever
from zerda_async.core.retrieval.fusion import fuse_rrf
from zerda_async.errors import ConfigError

V, K, M = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD, RetrievalMethod.METADATA
EQUAL = {V: 1.0, K: 1.0, M: 1.0}


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def hits(method: RetrievalMethod, *names: str) -> list[ScoredChunk]:
    out = []
    for i, name in enumerate(names):
        score = 1.0 - i / 10
        sc = ScoredChunk(chunk=Doc(name, f"text of {name}"), retrieval_method=method)
        if method is V:
            sc.vector_score = score
        elif method is K:
            sc.keyword_score = score
        else:
            sc.metadata_score = score
        out.append(sc)
    return out


def test_two_lists_hand_computed() -> None:
    fused = fuse_rrf([(V, hits(V, "a", "b")), (K, hits(K, "b", "c"))], 10, EQUAL, k=60)
    assert [sc.doc_id for sc in fused] == ["b", "a", "c"]
    b, a, c = fused
    assert b.fused_score == pytest.approx(1 / 62 + 1 / 61)
    assert a.fused_score == pytest.approx(1 / 61)
    assert c.fused_score == pytest.approx(1 / 62)
    assert (b.vector_rank, b.keyword_rank) == (2, 1)
    assert (b.vector_score, b.keyword_score) == (0.9, 1.0)
    assert b.retrieval_method is RetrievalMethod.HYBRID and a.retrieval_method is V
    assert (a.keyword_rank, c.vector_rank) == (0, 0)
    assert [sc.retrieval_rank for sc in fused] == [0, 1, 2]
    assert b.composite_score == b.fused_score


def test_ties_keep_first_seen_order() -> None:
    # a and c both sit at rank 1 of one list: equal scores, vector list seen first.
    fused = fuse_rrf([(V, hits(V, "a")), (K, hits(K, "c"))], 10, EQUAL, k=60)
    assert [sc.doc_id for sc in fused] == ["a", "c"]
    assert fused[0].fused_score == fused[1].fused_score


def test_weights_are_honoured() -> None:
    weights = {V: 0.5, K: 2.0, M: 1.0}
    fused = fuse_rrf([(V, hits(V, "a")), (K, hits(K, "c"))], 10, weights, k=10)
    assert [sc.doc_id for sc in fused] == ["c", "a"]
    assert fused[0].fused_score == pytest.approx(2.0 / 11)
    assert fused[1].fused_score == pytest.approx(0.5 / 11)


def test_one_method_empty_and_cut() -> None:
    fused = fuse_rrf([(V, []), (K, hits(K, "a", "b", "c"))], 2, EQUAL, k=1)
    assert [sc.doc_id for sc in fused] == ["a", "b"]
    assert [sc.fused_score for sc in fused] == [pytest.approx(1 / 2), pytest.approx(1 / 3)]
    assert fuse_rrf([(V, []), (K, [])], 5, EQUAL) == []


def test_repeat_in_one_list_counts_once() -> None:
    fused = fuse_rrf([(K, hits(K, "a", "a", "b"))], 10, EQUAL, k=60)
    assert [sc.doc_id for sc in fused] == ["a", "b"]
    assert fused[1].keyword_rank == 3 and fused[0].fused_score == pytest.approx(1 / 61)


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rrf_k"):
        fuse_rrf([(K, hits(K, "a"))], 10, EQUAL, k=0)


def test_hybrid_rrf_mode_and_documented_default() -> None:
    docs = [Doc("d1", "the nile flows north"), Doc("d2", "coffee is served hot")]
    documented = ContextEngineConfig()
    found = HybridRetriever(documented, keyword_retriever=KeywordRetriever(documented, docs))
    plain = found.retrieve("nile", 5)
    assert plain[0].fused_score == 0.0 and plain[0].keyword_rank == 0

    config = ContextEngineConfig()
    config.retriever.fusion = "rrf"
    fused = HybridRetriever(config, keyword_retriever=KeywordRetriever(config, docs)).retrieve(
        "nile", 5
    )
    assert [sc.doc_id for sc in fused] == ["d1"]
    assert fused[0].keyword_rank == 1
    assert fused[0].fused_score == pytest.approx(0.30 / 61)

    config.retriever.fusion = "borda"
    with pytest.raises(ConfigError, match=r"retriever\.fusion 'borda'"):
        HybridRetriever(config, keyword_retriever=KeywordRetriever(config, docs)).retrieve("x", 5)

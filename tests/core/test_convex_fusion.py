"""Convex score fusion on hand-computed cases, the vector-evidence floor and their config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.config import ContextEngineConfig, config_from_json
from zerda_async.core.models import QueryAnalysis, RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import (
    HybridRetriever,
    KeywordRetriever,
    VectorRetriever,
    plan_search,
    search_depth,
)
from zerda_async.core.retrieval.fusion import fuse_convex
from zerda_async.errors import ConfigError

V, K, M = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD, RetrievalMethod.METADATA
EQUAL = {V: 0.5, K: 0.5, M: 0.5}


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def vec(*pairs: tuple[str, float]) -> list[ScoredChunk]:
    """A vector list: (name, cosine), best first."""
    return [
        ScoredChunk(chunk=Doc(n, f"text of {n}"), vector_score=s, retrieval_method=V)
        for n, s in pairs
    ]


def kw(*pairs: tuple[str, float]) -> list[ScoredChunk]:
    """A keyword list: (name, query coverage), BM25 order; keyword_score falls by rank."""
    return [
        ScoredChunk(
            chunk=Doc(n, f"text of {n}"),
            keyword_score=1.0 - i / 10,
            query_coverage=cov,
            retrieval_method=K,
        )
        for i, (n, cov) in enumerate(pairs)
    ]


def ids(chunks: list[ScoredChunk]) -> list[str]:
    return [sc.doc_id for sc in chunks]


def test_scores_are_weighted_coverage_plus_min_max_cosine() -> None:
    lists = [
        (V, vec(("a", 0.90), ("b", 0.85), ("c", 0.80))),
        (K, kw(("c", 1.0), ("d", 0.4))),
    ]
    fused = fuse_convex(lists, 10, EQUAL)
    # a: 0.5*1; b: 0.5*0.5; c: 0.5*0 (last of the vector list) + 0.5*1.0; d: 0.5*0.4.
    assert ids(fused) == ["a", "c", "b", "d"]
    a, c, b, d = fused
    assert a.fused_score == pytest.approx(0.5)
    assert c.fused_score == pytest.approx(0.5)
    assert b.fused_score == pytest.approx(0.25)
    assert d.fused_score == pytest.approx(0.2)
    assert c.retrieval_method is RetrievalMethod.HYBRID and a.retrieval_method is V
    assert (c.vector_rank, c.keyword_rank, d.vector_rank) == (3, 1, 0)
    assert (c.vector_score, c.keyword_score, c.query_coverage) == (0.80, 1.0, 1.0)
    assert [sc.retrieval_rank for sc in fused] == [0, 1, 2, 3]
    assert all(sc.composite_score == sc.fused_score for sc in fused)


def test_vector_margin_is_the_cosine_above_the_lists_last() -> None:
    fused = fuse_convex([(V, vec(("a", 0.9), ("b", 0.8), ("c", 0.75))), (K, [])], 10, EQUAL)
    assert [sc.vector_margin for sc in fused] == pytest.approx([0.15, 0.05, 0.0])
    only_keyword = fuse_convex([(V, []), (K, kw(("x", 0.5)))], 10, EQUAL)
    assert only_keyword[0].vector_margin == 0.0 and only_keyword[0].fused_score == 0.25


def test_ties_keep_first_seen_order_and_flat_lists_count_fully() -> None:
    # a tops the vector list, c has full coverage: equal scores, vector list seen first.
    fused = fuse_convex([(V, vec(("a", 0.8))), (K, kw(("c", 1.0)))], 10, EQUAL)
    assert ids(fused) == ["a", "c"] and fused[0].fused_score == fused[1].fused_score
    flat = fuse_convex([(V, vec(("a", 0.7), ("b", 0.7)))], 10, EQUAL)
    assert [sc.fused_score for sc in flat] == [0.5, 0.5]


def test_weights_are_honoured_and_top_k_cuts() -> None:
    lists = [(V, vec(("a", 0.9), ("b", 0.1))), (K, kw(("b", 1.0)))]
    assert ids(fuse_convex(lists, 10, {V: 0.2, K: 0.8, M: 0.0})) == ["b", "a"]
    lists = [(V, vec(("a", 0.9), ("b", 0.1))), (K, kw(("b", 1.0)))]
    assert ids(fuse_convex(lists, 1, {V: 0.8, K: 0.1, M: 0.0})) == ["a"]


def test_empty_lists_repeats_and_unmeasured_coverage() -> None:
    assert fuse_convex([(V, []), (K, [])], 5, EQUAL) == []
    assert fuse_convex([], 5, EQUAL) == []
    fused = fuse_convex([(K, kw(("a", 0.6), ("a", 0.6), ("b", 0.2)))], 10, EQUAL)
    assert ids(fused) == ["a", "b"] and fused[1].keyword_rank == 3
    # A keyword retriever that measures no coverage (an injected one): its scores count.
    plain = [
        ScoredChunk(chunk=Doc("p", "text of p"), keyword_score=1.0),
        ScoredChunk(chunk=Doc("q", "text of q"), keyword_score=0.4),
    ]
    scores = [sc.fused_score for sc in fuse_convex([(K, plain)], 5, EQUAL)]
    assert scores == pytest.approx([0.5, 0.2])


def test_metadata_scores_are_clamped_evidence() -> None:
    meta = [ScoredChunk(chunk=Doc("m", "text of m"), metadata_score=3.0, retrieval_method=M)]
    fused = fuse_convex([(M, meta)], 5, EQUAL)
    assert fused[0].fused_score == 0.5 and fused[0].metadata_rank == 1


def test_a_reused_object_starts_clean() -> None:
    [sc] = vec(("a", 0.9))
    sc.fused_score, sc.keyword_rank, sc.vector_margin = 9.0, 4, 7.0
    [fused] = fuse_convex([(V, [sc])], 5, EQUAL)
    assert (fused.fused_score, fused.keyword_rank, fused.vector_margin) == (0.5, 0, 0.0)


# -- the hybrid retriever and the floor ---------------------------------------------------

DOCS = [
    Doc("nile", "the nile flows north through egypt"),
    Doc("coffee", "coffee is served hot in small cups"),
    Doc("desert", "the desert is dry and the nights are cold"),
    Doc("sea", "the red sea lies between africa and arabia"),
]
# Hand-made 2-d "embeddings": the question below points at the nile chunk.
VECTORS = {
    "the nile flows north through egypt": [1.0, 0.0],
    "coffee is served hot in small cups": [0.0, 1.0],
    "the desert is dry and the nights are cold": [0.6, 0.8],
    "the red sea lies between africa and arabia": [0.3, 0.95],
    "أين يجري النيل": [0.95, 0.1],  # "where does the Nile flow": no shared keyword
    "the nile": [1.0, 0.05],
}


def embed(text: str) -> Any:
    return np.asarray(VECTORS[text], dtype=np.float64)


def convex_config() -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.fusion_depth = 4
    return config


def hybrid(config: ContextEngineConfig) -> HybridRetriever:
    vectors = VectorRetriever(config)
    vectors.index_chunks(DOCS, embed)
    return HybridRetriever(config, vectors, KeywordRetriever(config, DOCS))


def test_a_question_no_keyword_matches_is_answered_from_the_vector_list() -> None:
    config = convex_config()
    config.composer.min_vector_margin = 0.05  # a fixed margin (the recommended profile: 0)
    found = hybrid(config).retrieve("أين يجري النيل", 2)
    assert ids(found) == ["nile", "desert"]
    assert found[0].query_coverage == 0.0  # annotated: no query word in it
    assert found[0].vector_margin > 0.05 and found[0].retrieval_method is V

    analysis = QueryAnalysis(original_query="أين يجري النيل", normalized="أين يجري النيل")
    for sc in found:
        sc.composite_score = 0.5
    composer = SmartContextComposer(config)
    answered = composer.compose_cited(list(found), analysis, 2000)
    assert not answered.nothing_relevant and "the nile flows north" in answered.context
    # The floor without vector evidence (as before): nothing relevant.
    config.composer.min_vector_margin = 0.0
    flagged = SmartContextComposer(config).compose_cited(list(found), analysis, 2000)
    assert flagged.nothing_relevant
    # A margin the best chunk does not reach flags it too.
    config.composer.min_vector_margin = found[0].vector_margin + 0.01
    assert SmartContextComposer(config).compose_cited(list(found), analysis, 2000).nothing_relevant


def test_the_depth_reaches_each_method_and_the_cut_is_top_k() -> None:
    config = convex_config()
    asked: list[int] = []

    class Counting(KeywordRetriever):
        def retrieve(self, query: str, top_k: int, **kwargs: Any) -> list[ScoredChunk]:
            asked.append(top_k)
            return super().retrieve(query, top_k, **kwargs)

    vectors = VectorRetriever(config)
    vectors.index_chunks(DOCS, embed)
    found = HybridRetriever(config, vectors, Counting(config, DOCS)).retrieve("the nile", 1)
    assert asked == [4] and ids(found) == ["nile"]
    config.retriever.fusion = "rrf"
    HybridRetriever(config, vectors, Counting(config, DOCS)).retrieve("the nile", 1)
    assert asked == [4, 1]  # only convex fusion draws deeper lists


def test_the_hybrid_retriever_weighs_keyword_hits_by_their_query_coverage() -> None:
    config = convex_config()
    config.retriever.use_vector = False
    docs = [Doc("one", "the nile at dawn"), Doc("both", "the nile flows through egypt")]
    found = HybridRetriever(config, keyword_retriever=KeywordRetriever(config, docs)).retrieve(
        "nile egypt", 5
    )
    # "both" holds the two analysed query terms, "one" only the commoner one.
    assert [sc.doc_id for sc in found] == ["both", "one"]
    assert found[0].query_coverage == 1.0 and 0 < found[1].query_coverage < 0.5
    assert [sc.fused_score for sc in found] == pytest.approx(
        [0.5 * sc.query_coverage for sc in found]
    )


def test_every_placements_search_plan_is_as_deep_as_convex_fusion_asks() -> None:
    config = ContextEngineConfig.recommended()
    plan = plan_search(config.retriever, "nile", 20, None, None)
    assert (plan.k, plan.searched) == (20, 50)
    assert search_depth(config.retriever, 80) == 80  # never shallower than top_k
    config.retriever.fusion = "rrf"
    assert plan_search(config.retriever, "nile", 20, None, None).searched == 20


def test_documented_config_is_unchanged_and_new_fields_validate() -> None:
    documented = ContextEngineConfig()
    assert documented.retriever.fusion == "documented"
    assert documented.composer.min_vector_margin == 0.0
    recommended = ContextEngineConfig.recommended()
    assert recommended.retriever.fusion == "convex"
    assert recommended.composer.min_vector_margin == 0.0
    assert recommended.composer.embedder_floor and not documented.composer.embedder_floor
    loaded = config_from_json(b'{"retriever": {"fusion": "convex", "fusion_depth": 80}}')
    assert loaded.validate().retriever.fusion_depth == 80

    for section, name, bad, message in (
        ("retriever", "fusion", "borda", r"retriever\.fusion must be one of"),
        ("retriever", "fusion_depth", 0, r"retriever\.fusion_depth must be a positive integer"),
        ("retriever", "fusion_depth", True, r"retriever\.fusion_depth"),
        ("retriever", "rrf_k", -1, r"retriever\.rrf_k must be a positive integer"),
        ("composer", "min_vector_margin", 1.5, r"composer\.min_vector_margin must be"),
        ("composer", "min_vector_margin", "x", r"composer\.min_vector_margin must be"),
    ):
        config = ContextEngineConfig.recommended()
        setattr(getattr(config, section), name, bad)
        with pytest.raises(ConfigError, match=message):
            config.validate()
    # The composer checks its own new field whenever it is built.
    config = ContextEngineConfig()
    config.composer.min_vector_margin = -0.1
    with pytest.raises(ConfigError, match=r"composer\.min_vector_margin"):
        SmartContextComposer(config)

"""Query coverage: the absolute relevance signal behind ``composer.min_query_coverage``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from sync_api import ContextEngine
from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index.analysis import analyzer_for, fold_arabic
from zerda_async.core.index.keyword_index import KeywordIndex
from zerda_async.core.models import QueryAnalysis, RetrievalMethod, ScoredChunk
from zerda_async.core.ranking import CompositeRanker
from zerda_async.core.retrieval import HybridRetriever, KeywordRetriever
from zerda_async.core.retrieval.fusion import fuse_rrf
from zerda_async.errors import ConfigError

TEXTS = ["apple banana", "apple cherry", "banana", "durian apple"]
EN = QueryAnalysis(original_query="apple cherry zzz", normalized="apple cherry zzz")


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


# Four documents: apple is in three, cherry in one, zzz in none.
IDF_APPLE, IDF_CHERRY, IDF_ZZZ = idf(4, 3), idf(4, 1), idf(4, 0)
TOTAL = IDF_APPLE + IDF_CHERRY + IDF_ZZZ


def test_idf_of_known_and_unknown_terms() -> None:
    index = KeywordIndex.build(TEXTS)
    assert index.idf("apple") == pytest.approx(IDF_APPLE)
    assert index.idf("cherry") == pytest.approx(IDF_CHERRY)
    # A word the corpus never uses weighs most: ln(1 + 4.5 / 0.5) = ln(10).
    assert index.idf("zzz") == pytest.approx(math.log(10.0))


def test_coverage_is_the_idf_weighted_share_of_query_terms() -> None:
    index = KeywordIndex.build(TEXTS)
    got = index.coverage(["apple", "cherry", "zzz", "apple"], np.arange(4))
    expected = [IDF_APPLE / TOTAL, (IDF_APPLE + IDF_CHERRY) / TOTAL, 0.0, IDF_APPLE / TOTAL]
    assert got.tolist() == pytest.approx(expected)
    assert index.coverage([], np.arange(4)).tolist() == [0.0] * 4


def test_keyword_hits_carry_coverage_and_annotation_matches_it() -> None:
    retriever = KeywordRetriever(
        ContextEngineConfig(), [Doc(str(i), t) for i, t in enumerate(TEXTS)]
    )
    found = {sc.doc_id: sc.query_coverage for sc in retriever.retrieve("apple cherry zzz", 10)}
    assert found["1"] == pytest.approx((IDF_APPLE + IDF_CHERRY) / TOTAL)
    assert found["0"] == pytest.approx(IDF_APPLE / TOTAL)
    assert "2" not in found  # "banana" shares no term
    outsider = ScoredChunk(chunk=Doc("x", "cherry pie"))
    already = ScoredChunk(chunk=Doc("y", "apple"), query_coverage=0.5)
    retriever.annotate_coverage("apple cherry zzz", [outsider, already])
    assert outsider.query_coverage == pytest.approx(IDF_CHERRY / TOTAL)
    assert already.query_coverage == 0.5  # measured values are kept


def test_fusion_keeps_the_keyword_coverage() -> None:
    vec = [ScoredChunk(chunk=Doc("a", "a text"), query_coverage=0.9)]
    kw = [ScoredChunk(chunk=Doc("a", "a text"), query_coverage=0.4)]
    only_vec = [ScoredChunk(chunk=Doc("b", "b text"), query_coverage=0.7)]
    weights = {RetrievalMethod.VECTOR: 1.0, RetrievalMethod.KEYWORD: 1.0}
    fused = fuse_rrf(
        [(RetrievalMethod.VECTOR, vec + only_vec), (RetrievalMethod.KEYWORD, kw)], 5, weights
    )
    by_id = {sc.doc_id: sc.query_coverage for sc in fused}
    # The vector list never measures coverage: a stale value is cleared, the keyword one kept.
    assert by_id == {"a": 0.4, "b": -1.0}


class Vectors:
    def retrieve(self, query: str, top_k: int, /, *, query_vector: Any = None) -> list[ScoredChunk]:
        return [ScoredChunk(chunk=Doc("v", "durian cherry"), vector_score=0.8)]


def test_rrf_hybrid_measures_vector_only_chunks() -> None:
    config = ContextEngineConfig.recommended()
    config.retriever.text_analyzer = "documented"
    keyword = KeywordRetriever(config, [Doc(str(i), t) for i, t in enumerate(TEXTS)])
    fused = HybridRetriever(config, Vectors(), keyword).retrieve("apple cherry zzz", 5)
    by_id = {sc.doc_id: sc.query_coverage for sc in fused}
    assert by_id["v"] == pytest.approx(IDF_CHERRY / TOTAL)
    assert by_id["1"] == pytest.approx((IDF_APPLE + IDF_CHERRY) / TOTAL)
    # Documented fusion is untouched: nothing is measured on vector-only chunks.
    documented = HybridRetriever(ContextEngineConfig(), Vectors(), keyword)
    assert {sc.doc_id: sc.query_coverage for sc in documented.retrieve("apple", 5)}["v"] == -1.0


def test_evidence_ranker_ignores_coverage() -> None:
    config = ContextEngineConfig.recommended()
    w = config.ranking
    chunks = [
        ScoredChunk(chunk=Doc("m", "unrelated words"), fused_score=0.02, query_coverage=0.5),
        ScoredChunk(chunk=Doc("u", "apple cherry"), fused_score=0.01),
    ]
    ranked = {sc.doc_id: sc.composite_score for sc in CompositeRanker(config).rank(chunks, EN)}
    quality = chunks[0].source_quality.value / 3.0 * w.weight_source_quality
    rest = quality + w.weight_position  # recency 0, retrieval rank 0
    # The keyword factor is the plain share of analysed query terms (a store-backed
    # index measures no coverage, and must rank alike): 0 of 3, and 2 of 3.
    assert ranked["m"] == pytest.approx(w.weight_evidence + rest)
    assert ranked["u"] == pytest.approx(
        0.5 * w.weight_evidence + 2 / 3 * w.weight_keyword_score + rest
    )


def composer(minimum: float) -> SmartContextComposer:
    config = ContextEngineConfig()
    config.composer.packing = "fit"
    config.composer.template = "english"
    config.composer.min_query_coverage = minimum
    return SmartContextComposer(config)


def chunk(doc_id: str, coverage: float) -> ScoredChunk:
    return ScoredChunk(
        chunk=Doc(doc_id, f"Text of {doc_id}."), composite_score=0.5, query_coverage=coverage
    )


def test_composer_says_nothing_relevant_below_the_coverage_floor() -> None:
    weak = [chunk("a", 0.1), chunk("b", 0.05)]
    result = composer(0.15).compose_cited(weak, EN, 2000)
    assert result.nothing_relevant and result.citations == ()
    # One chunk at the floor is enough, and then every chunk is packed.
    mixed = [chunk("a", 0.15), chunk("b", 0.05)]
    result = composer(0.15).compose_cited(mixed, EN, 2000)
    assert not result.nothing_relevant and [c.doc_id for c in result.citations] == ["a", "b"]
    # Off (0), or nothing measured: no flag.
    assert not composer(0.0).compose_cited(weak, EN, 2000).nothing_relevant
    assert not composer(0.15).compose_cited([chunk("c", -1.0)], EN, 2000).nothing_relevant


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.2"])
def test_coverage_floor_is_validated(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"composer\.min_query_coverage"):
        composer(value)
    config = ContextEngineConfig()
    config.composer.min_query_coverage = value
    with pytest.raises(ConfigError, match=r"composer\.min_query_coverage"):
        config.validate()


def test_profiles_set_the_coverage_floor() -> None:
    assert ContextEngineConfig().composer.min_query_coverage == 0.0
    assert 0 < ContextEngineConfig.recommended().composer.min_query_coverage < 1


def test_recommended_engine_flags_an_off_topic_question() -> None:
    chunks = [
        Doc("1", "BM25 ranks documents by term frequency and inverse document frequency."),
        Doc("2", "Reciprocal rank fusion merges the ranked lists of several retrievers."),
        Doc("3", "Arabic light stemming strips the article and common suffixes."),
    ]
    engine = ContextEngine(ContextEngineConfig.recommended()).index(chunks)
    answered = engine.run("How does reciprocal rank fusion merge lists?", use_history=False)
    assert not answered.nothing_relevant and answered.citations[0].doc_id == "2"
    # "ranks" is the only shared word; Everest and tall are unknown to the corpus.
    off = engine.run("How tall is Mount Everest, and who ranks the climbers?", use_history=False)
    assert off.nothing_relevant and not off.citations


def test_alef_maqsura_is_folded_for_retrieval() -> None:
    assert fold_arabic("توفى فى") == "توفي في"
    lite = analyzer_for("multilingual-lite")
    assert lite.tokenize("متى توفى؟") == lite.tokenize("متى توفي؟")
    assert lite.tokenize("ماهي العاصمة فى مصر؟ هى") == lite.tokenize("العاصمة مصر")

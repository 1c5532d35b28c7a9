"""``ContextEngineConfig.recommended()`` and the evidence ranking mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from zerda_async.core.config import ContextEngineConfig, config_from_json, config_to_json
from zerda_async.core.index.analysis import best_multilingual
from zerda_async.core.models import QueryAnalysis, ScoredChunk
from zerda_async.core.ranking import CompositeRanker
from zerda_async.errors import ConfigError

DOCUMENTED_RETRIEVER = {
    "top_k": 20,
    "vector_weight": 0.60,
    "keyword_weight": 0.30,
    "metadata_weight": 0.10,
    "use_vector": True,
    "use_keyword": True,
    "use_metadata": False,
    "metadata_filters": {},
    "min_vector_score": 0.0,
}
DOCUMENTED_RANKING = {
    "weight_vector_score": 0.40,
    "weight_keyword_score": 0.25,
    "weight_source_quality": 0.20,
    "weight_recency": 0.10,
    "weight_position": 0.05,
    "max_chunks_to_rank": 15,
}


def flat(config: ContextEngineConfig) -> dict[str, Any]:
    doc = msgspec.to_builtins(config)
    return {
        f"{section}.{key}": value
        for section, sub in doc.items()
        if isinstance(sub, dict)
        for key, value in sub.items()
    } | {k: v for k, v in doc.items() if not isinstance(v, dict)}


def test_default_config_is_documented() -> None:
    doc = msgspec.to_builtins(ContextEngineConfig())
    for key, value in DOCUMENTED_RETRIEVER.items():
        assert doc["retriever"][key] == value
    for key, value in DOCUMENTED_RANKING.items():
        assert doc["ranking"][key] == value
    assert doc["retriever"]["text_analyzer"] == "documented"
    assert doc["retriever"]["fusion"] == "documented"
    assert doc["ranking"]["mode"] == "documented"


def test_recommended_differs_only_where_intended() -> None:
    base, rec = flat(ContextEngineConfig()), flat(ContextEngineConfig.recommended())
    changed = {key for key in base if base[key] != rec[key]}
    assert changed == {
        "retriever.text_analyzer",
        "retriever.fusion",
        "retriever.vector_weight",
        "retriever.keyword_weight",
        "retriever.metadata_weight",
        "retriever.neighbour_weight",
        "retriever.script_centring",
        "retriever.question_map",
        "retriever.cross_script_evidence",
        "ranking.mode",
        "ranking.weight_keyword_score",
        "ranking.weight_source_quality",
        "ranking.weight_recency",
        "query_analyzer.budget_low",
        "query_analyzer.budget_medium",
        "query_analyzer.budget_high",
        "composer.max_context_length",
        "composer.template",
        "composer.packing",
        "composer.relevance_floor",
        "composer.min_query_coverage",
        "composer.embedder_floor",
        "history_enrichment",
    }
    assert rec["retriever.text_analyzer"] == best_multilingual()
    assert rec["retriever.fusion"] == "convex" and rec["ranking.mode"] == "evidence"
    assert rec["retriever.fusion_depth"] == base["retriever.fusion_depth"] == 50


@pytest.mark.parametrize(
    "name", ["embed_heading", "script_centring", "question_map", "cross_script_evidence"]
)
def test_retriever_switches_are_off_by_default_and_must_be_bools(name: str) -> None:
    assert getattr(ContextEngineConfig().retriever, name) is False
    config = ContextEngineConfig.recommended()
    setattr(config.retriever, name, "yes")  # truthy, yet not a bool: refused, named
    with pytest.raises(ConfigError, match=rf"retriever\.{name} must be true or false"):
        config.validate()


def test_recommended_round_trips_and_is_fresh() -> None:
    rec = ContextEngineConfig.recommended()
    assert config_from_json(config_to_json(rec)) == rec
    rec.retriever.top_k = 3
    assert ContextEngineConfig.recommended().retriever.top_k == 20


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def analysis(query: str) -> QueryAnalysis:
    return QueryAnalysis(original_query=query, normalized=query.lower(), keywords=["nile"])


def test_evidence_mode_follows_the_fused_score() -> None:
    config = ContextEngineConfig.recommended()
    config.retriever.text_analyzer = "multilingual-lite"
    # A keyword-only hit with the better fused score beats a vector hit with a high cosine.
    keyword_hit = ScoredChunk(chunk=Doc("k", "The Nile flows north."), fused_score=1 / 61)
    vector_hit = ScoredChunk(
        chunk=Doc("v", "Rivers of Africa."), vector_score=0.95, fused_score=1 / 70
    )
    ranked = CompositeRanker(config).rank([vector_hit, keyword_hit], analysis("the Nile?"))
    assert [sc.doc_id for sc in ranked] == ["k", "v"]
    w = config.ranking
    # share 1, overlap 1 ("nile"), quality 0, recency 0, position 1.
    assert ranked[0].composite_score == round(
        w.weight_evidence + w.weight_keyword_score + w.weight_position, 6
    )
    expected_v = round((1 / 70) / (1 / 61) * w.weight_evidence + w.weight_position, 6)
    assert ranked[1].composite_score == expected_v

    documented = CompositeRanker(ContextEngineConfig())
    again = [
        ScoredChunk(chunk=Doc("k", "The Nile flows north.")),
        ScoredChunk(chunk=Doc("v", "Rivers of Africa."), vector_score=0.95),
    ]
    assert [sc.doc_id for sc in documented.rank(again, analysis("the Nile?"))] == ["v", "k"]


def test_evidence_overlap_uses_analysed_terms_not_substrings() -> None:
    config = ContextEngineConfig.recommended()
    config.retriever.text_analyzer = "multilingual-lite"
    ranker = CompositeRanker(config)
    # "الموسم؟" in the query and "والموسم،" in the chunk are one analysed term.
    hit = ScoredChunk(chunk=Doc("a", "بدأ والموسم، في الربيع"), fused_score=0.01)
    ranker.rank([hit], analysis("متى بدأ الموسم؟"))
    w = config.ranking
    assert hit.composite_score == round(
        w.weight_evidence + w.weight_keyword_score * 1.0 + w.weight_position, 6
    )


def test_unknown_ranking_mode_names_the_field() -> None:
    config = ContextEngineConfig()
    config.ranking.mode = "magic"
    with pytest.raises(ConfigError, match=r"ranking\.mode 'magic'"):
        CompositeRanker(config).rank([ScoredChunk(chunk=Doc("a", "text"))], analysis("q"))

"""``sync_api.ContextEngine`` against the worked examples and quirks of spec/engine.md."""

from __future__ import annotations

from typing import Any

import pytest
from support.chunks import Chunk

import sync_api
from sync_api import ContextEngine, ContextEngineConfig, ScoredChunk, SourceQuality
from zerda_async.errors import failed_stage

ARABIC_EMPTY = "📚 المعلومات المسترجعة:\n---\nلا تتوفر معلومات.\n---\n─── نهاية السياق ───"


KB = [
    Chunk(
        "ml_001",
        "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي يركز على بناء أنظمة تتعلم من البيانات.",
        {"source": "كتاب التعلم الآلي", "lang": "ar"},
    ),
    Chunk(
        "dl_002",
        "التعلم العميق هو مجال فرعي من التعلم الآلي يعتمد على الشبكات العصبية الاصطناعية.",
        {"source": "كتاب التعلم العميق", "lang": "ar"},
    ),
    Chunk(
        "dup_007",
        "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي يركز على بناء أنظمة   تتعلم من البيانات.",
        {"lang": "ar"},
    ),
    Chunk("tiny", "قصير", {}),
]


class FixedRetriever:
    """Returns the KB with fixed vector scores, whatever the query."""

    def __init__(self) -> None:
        self.calls = 0

    def retrieve(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> list[ScoredChunk]:
        self.calls += 1
        scores = [0.9, 0.8, 0.85, 0.99]
        return [
            ScoredChunk(chunk=c, vector_score=s, retrieval_rank=i)
            for i, (c, s) in enumerate(zip(KB, scores, strict=True))
        ]


def test_run_without_index_returns_cached_placeholder() -> None:
    engine = ContextEngine()
    first = engine.run("What is ML?")
    assert first.context == ARABIC_EMPTY
    assert first.context_length == 69
    assert first.guard_passed and first.guard_warnings == []
    assert first.metadata == {}
    stats = first.get_stats()
    assert stats["query_intent"] == "factual" and stats["context_budget"] == 800
    second = engine.run("what is ml?  ")
    assert second.context == ARABIC_EMPTY
    assert second.metadata == {"from_cache": True}
    assert second.chunks_used == [] and second.total_included == 0
    assert second.query_analysis.original_query == "what is ml?  "
    report = engine.get_performance_report()
    assert report["total_queries"] == 1
    assert report["cache"] == {
        "size": 1,
        "max_size": 256,
        "hits": 1,
        "misses": 1,
        "hit_rate": "50.0%",
        "ttl_sec": 300,
    }


def test_injected_retriever_worked_example() -> None:
    engine = ContextEngine(retriever=FixedRetriever())
    assert engine.index(KB, source_quality_map={"كتاب التعلم الآلي": SourceQuality.HIGH}) is engine
    result = engine.run("ما هو التعلم الآلي؟")
    assert [sc.doc_id for sc in result.chunks_used] == ["ml_001", "dl_002"]
    assert [sc.composite_score for sc in result.chunks_used] == [0.735, 0.4945]
    assert result.context_length == 277
    assert result.context.startswith("📚 المعلومات المسترجعة:\n---\n[المصدر: كتاب التعلم الآلي]\n")
    assert (result.total_retrieved, result.total_after_filter, result.total_after_rank) == (4, 2, 2)
    cached = engine.run("ما هو التعلم الآلي؟ ")
    assert cached.metadata == {"from_cache": True} and cached.context == result.context


def test_injected_retriever_without_index_raises_documented_attribute_error() -> None:
    engine = ContextEngine(retriever=FixedRetriever())
    with pytest.raises(AttributeError) as info:
        engine.run("anything")
    assert str(info.value) == "'ContextEngine' object has no attribute '_source_quality_map'"
    assert failed_stage(info.value) == "source_quality"
    manager = sync_api.ContextManager(retriever=FixedRetriever())
    with pytest.raises(AttributeError, match="'ContextManager' object"):
        manager.run("anything")


def test_run_none_query_with_cache_raises_and_without_cache_returns_empty_analysis() -> None:
    with pytest.raises(AttributeError):
        ContextEngine().run(None)  # type: ignore[arg-type]
    config = ContextEngineConfig()
    config.cache.enabled = False
    result = ContextEngine(config).run(None)  # type: ignore[arg-type]
    assert result.query_analysis.original_query is None
    assert result.context == ARABIC_EMPTY


def test_adaptive_budget_collapses_to_200_after_ten_placeholder_runs() -> None:
    engine = ContextEngine()
    for i in range(10):
        assert engine.run(f"question number {i}").query_analysis.context_budget == 800
    assert engine.run("one more question").query_analysis.context_budget == 200
    assert engine.run("x", override_budget=1234).query_analysis.context_budget == 1234


def test_multi_turn_enrichment_only_with_answers() -> None:
    engine = ContextEngine()
    engine.run("What is the Transformer model?")
    plain = engine.run("How does it handle long sequences?")
    assert plain.query_analysis.original_query == "How does it handle long sequences?"
    history = engine.get_history()
    assert history is not None
    history.turns[-1].answer = "It uses attention."
    enriched = engine.run("And what about memory?")
    assert enriched.query_analysis.original_query == (
        "[Previous conversation:\nQ: How does it handle long sequences?\nA: It uses attention.]"
        "\n\nCurrent question: And what about memory?"
    )
    assert history.turns[-1].query == "And what about memory?"
    no_history = engine.run("And what about speed?", use_history=False)
    assert no_history.query_analysis.original_query == "And what about speed?"


def test_run_multi_labels_and_duplicate_keyword() -> None:
    engine = ContextEngine()
    combined = engine.run_multi(["What is ML?", "ما هو التعلم الآلي؟"], global_budget=3000)
    assert combined == (
        f"--- Query 1: What is ML? ---\n{ARABIC_EMPTY}\n\n"
        f"--- Query: 2: ما هو التعلم الآلي؟ ---\n{ARABIC_EMPTY}"
    )
    assert engine.run_multi([]) == ""
    with pytest.raises(TypeError, match="record_turn"):
        engine.run_multi(["a"], record_turn=True)


def test_legacy_build_compress_and_stats() -> None:
    engine = ContextEngine()
    chunks = [
        (Chunk("d1", "Machine learning is a field of AI that learns from data."), 0.9),
        (Chunk("d2", "tiny"), 0.99),
    ]
    assert engine.build("What is machine learning?", chunks) == (
        "📚 المعلومات المسترجعة:\n---\n[المصدر: d1]\n"
        "Machine learning is a field of AI that learns from data.\n---\n─── نهاية السياق ───"
    )
    assert engine.build("q", [], max_length=50) == ARABIC_EMPTY
    assert engine.compress_context("hello world this is a test", 10) == "hello..."
    assert engine._hard_truncate("hello world this is a test", 10) == "hello w..."
    assert engine.get_context_stats("a\n---\nb")["chunk_count"] == 2
    sections = engine.build_multi_query_context(["q1"], [[]], global_budget=1)
    assert sections == f"--- q1 ---\n{ARABIC_EMPTY}"


def test_index_is_first_call_only_and_ignores_empty_corpus() -> None:
    engine = ContextEngine()
    assert engine.index([]) is engine and engine.index(None) is engine
    engine.index([Chunk("a", "Apples are red fruits that grow on trees in orchards.")])
    engine.index([Chunk("b", "Bananas are yellow fruits that grow in tropical climates.")])
    result = engine.run("bananas yellow tropical")
    assert [sc.doc_id for sc in result.chunks_used] == []
    result = engine.run("apples orchards")
    assert [sc.doc_id for sc in result.chunks_used] == ["a"]


def test_context_manager_accepts_and_ignores_legacy_strategies() -> None:
    manager = sync_api.ContextManager(
        # Bound at the package root but, as documented, outside __all__.
        dedup_strategy=sync_api.HashDeduplication(),  # type: ignore[attr-defined]
        ranking_strategy=sync_api.ScoreRanking(),  # type: ignore[attr-defined]
        compression_strategy=sync_api.GreedyCompression(),  # type: ignore[attr-defined]
        budget_strategy=sync_api.EqualBudgetAllocation(),
    )
    assert isinstance(manager, ContextEngine)
    assert manager.run("What is ML?").context == ARABIC_EMPTY
    with pytest.raises(TypeError):
        sync_api.ContextManager(None, budget_allocator=1)


def test_set_conversation_and_multi_turn_off() -> None:
    config = ContextEngineConfig()
    config.multi_turn = False
    engine = ContextEngine(config)
    assert engine.get_history() is None
    engine.run("q one")
    history = sync_api.ConversationHistory(session_id="mine")
    engine.set_conversation(history)
    engine.run("q two")
    assert engine.get_history() is history and [t.query for t in history.turns] == ["q two"]


def test_clear_cache_keeps_counters() -> None:
    engine = ContextEngine()
    engine.run("q")
    engine.run("q")
    engine.clear_cache()
    assert engine.run("q").metadata == {}
    cache = engine.get_performance_report()["cache"]
    assert (cache["hits"], cache["misses"], cache["size"]) == (1, 2, 1)

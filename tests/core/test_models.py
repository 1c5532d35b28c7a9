"""Records: ScoredChunk duck typing and hash, ContextResult, ConversationHistory quirks."""

from __future__ import annotations

import pytest
from support.chunks import bare_chunk

from zerda_async.core.models import (
    ContextResult,
    ConversationHistory,
    QueryAnalysis,
    QueryComplexity,
    QueryIntent,
    ScoredChunk,
    SourceQuality,
)

EMPTY_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HELLO_WORLD_HASH = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"


def test_duck_typing_vectors() -> None:
    bare = ScoredChunk(chunk=bare_chunk())
    assert (bare.text, bare.doc_id, bare.metadata, bare.source) == ("", "", {}, "")
    assert bare.content_hash == EMPTY_HASH
    doc = ScoredChunk(chunk=bare_chunk(page_content="Hello   World", metadata=None, id="x1"))
    assert (doc.text, doc.doc_id, doc.source, doc.content_hash) == (
        "Hello   World",
        "x1",
        "x1",
        HELLO_WORLD_HASH,
    )
    mixed = ScoredChunk(
        chunk=bare_chunk(
            text="", page_content="PC", doc_id="", id="ID", source="SRC", metadata={"source": ""}
        )
    )
    assert (mixed.text, mixed.doc_id, mixed.source) == ("PC", "ID", "SRC")
    assert mixed.to_dict() == {
        "doc_id": "ID",
        "text_preview": "PC",
        "vector_score": 0.0,
        "keyword_score": 0.0,
        "composite_score": 0.0,
        "source_quality": "UNKNOWN",
        "retrieval_method": "vector",
    }
    chunk, score = mixed
    assert chunk is mixed.chunk and score == 0.0


def test_none_page_content_with_falsy_text_raises_on_construction() -> None:
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'lower'"):
        ScoredChunk(chunk=bare_chunk(text=None, page_content=None))


def test_hash_is_frozen_at_construction_and_records_are_unhashable() -> None:
    source = bare_chunk(text="first text")
    sc = ScoredChunk(chunk=source)
    before = sc.content_hash
    source.text = "changed"
    assert sc.content_hash == before
    with pytest.raises(TypeError):
        hash(sc)


def test_non_dict_metadata_breaks_source() -> None:
    sc = ScoredChunk(chunk=bare_chunk(text="x", metadata=bare_chunk(source="s")))
    with pytest.raises(AttributeError):
        _ = sc.source


def test_context_result_recomputes_length_and_included() -> None:
    analysis = QueryAnalysis(original_query="q", normalized="q")
    assert (analysis.complexity, analysis.context_budget) == (QueryComplexity.MEDIUM, 2000)
    result = ContextResult(
        context="📚ab",
        query_analysis=analysis,
        chunks_used=[ScoredChunk(chunk=bare_chunk(text="t"))],
        total_included=99,
        context_length=99,
    )
    assert (result.context_length, result.total_included) == (3, 1)
    stats = result.get_stats()
    assert stats["query_intent"] == QueryIntent.UNKNOWN.value and stats["context_budget"] == 2000


def test_history_turn_ids_repeat_after_trimming_and_zero_keeps_all() -> None:
    history = ConversationHistory(session_id="s")
    for _ in range(12):
        history.add_turn("q")
    assert [t.turn_id for t in history.turns] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 10]
    unbounded = ConversationHistory(session_id="u", max_turns=0)
    for _ in range(15):
        unbounded.add_turn("q")
    assert len(unbounded.turns) == 15


def test_enrichment_uses_only_answered_turns() -> None:
    history = ConversationHistory(session_id="s")
    assert history.get_enriched_query("How?") == "How?"
    history.add_turn("What is ML?", answer="ML is ...")
    history.add_turn("And DL?")
    assert history.get_enriched_query("How?") == (
        "[Previous conversation:\nQ: What is ML?\nA: ML is ...]\n\nCurrent question: How?"
    )
    assert history.get_recent_context(0) == "Q: What is ML?\nA: ML is ..."


def test_source_quality_unknown_is_truthy() -> None:
    assert bool(SourceQuality.UNKNOWN) and SourceQuality.HIGH.value / 3.0 == 1.0

"""Tests of SmartContextComposer (pipeline spec §5 and quirks §7.7-7.14)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support.chunks import bare_chunk

from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.config import ContextEngineConfig, LengthCounter
from zerda_async.core.counters import char_counter, make_token_counter
from zerda_async.core.models import QueryAnalysis, ScoredChunk
from zerda_async.core.strategy import ContextComposerStrategy

ANALYSIS = QueryAnalysis(original_query="What is machine learning?", normalized="x")


class WhitespaceTokenizer:
    def encode(self, text: str) -> list[str]:
        return text.split()


def sc(
    text: str,
    doc_id: str = "",
    metadata: dict[str, Any] | None = None,
    composite: float = 0.0,
    **attrs: Any,
) -> ScoredChunk:
    chunk = bare_chunk(text=text, doc_id=doc_id, metadata=metadata, **attrs)
    return ScoredChunk(chunk=chunk, composite_score=composite)


def worked_chunks() -> list[ScoredChunk]:
    return [
        sc(
            "Machine learning is a field of AI that learns from data.",
            "d1",
            {"source": "book"},
            0.576667,
        ),
        sc("Deep learning uses neural networks with many layers.", "d2", {}, 0.332833),
    ]


def composer(counter: LengthCounter | None = None, **composer_cfg: Any) -> SmartContextComposer:
    cfg = ContextEngineConfig()
    for key, value in composer_cfg.items():
        setattr(cfg.composer, key, value)
    return SmartContextComposer(cfg, counter)


def test_is_a_composer_strategy() -> None:
    assert isinstance(composer(), ContextComposerStrategy)


# §5.8 worked examples: (template, budget, expected context)
WORKED: list[tuple[str, int, str]] = [
    (
        "arabic",
        800,
        "📚 المعلومات المسترجعة:\n---\n[المصدر: book]\nMachine learning is a field of AI that "
        "learns from data.\n---\n[المصدر: d2]\nDeep learning uses neural networks with many "
        "layers.\n---\n─── نهاية السياق ───",
    ),
    (
        "arabic",
        120,
        "📚 المعلومات المسترجعة:\n---\n[المصدر: book]\nMachine learning is a field of AI that "
        "learns from data.\n---\n─── نهاية...",
    ),
    ("arabic", 60, "📚 المعلومات المسترجعة:\n---\n[المصدر:...\n---\n─── نهاية..."),
    (
        "english",
        800,
        "📚 Retrieved Information:\n---\n[Source: book]\nMachine learning is a field of AI that "
        "learns from data.\n---\n[Source: d2]\nDeep learning uses neural networks with many "
        "layers.\n---\n─── End of Context ───",
    ),
    (
        "english",
        120,
        "📚 Retrieved Information:\n---\n[Source: book]\nMachine learning is a field of AI that "
        "learns...\n---\n─── End of Context ───",
    ),
    ("english", 60, "📚 Retrieved Information:\n---\n[Sour...\n---\n─── End of..."),
    (
        "minimal",
        800,
        "Machine learning is a field of AI that learns from data.\n---\n"
        "Deep learning uses neural networks with many layers.",
    ),
    (
        "minimal",
        120,
        "Machine learning is a field of AI that learns from data.\n---\n"
        "Deep learning uses neural networks with many layers.",
    ),
    ("minimal", 60, "Machine learning is a field of AI that learns from data."),
    (
        "structured",
        800,
        "=== CONTEXT START ===\n---\n--- [1] book ---\nMachine learning is a field of AI that "
        "learns from data.\n---\n--- [2] d2 ---\nDeep learning uses neural networks with many "
        "layers.\n---\n=== CONTEXT END ===",
    ),
    (
        "structured",
        120,
        "=== CONTEXT START ===\n---\n--- [1] book ---\nMachine learning is a field of AI that "
        "learns from data.\n---\n=== CONTEXT...",
    ),
    ("structured", 60, "=== CONTEXT START ===\n---\n--- [1] boo...\n---\n=== CONTEXT..."),
]
WORKED_LENGTHS = [193, 115, 55, 197, 119, 55, 113, 113, 56, 195, 118, 59]


@pytest.mark.parametrize(("template", "budget", "expected"), WORKED)
def test_worked_compositions(template: str, budget: int, expected: str) -> None:
    assert composer(template=template).compose(worked_chunks(), ANALYSIS, budget) == expected


def test_worked_composition_lengths() -> None:
    assert [len(expected) for _, _, expected in WORKED] == WORKED_LENGTHS


def test_scores_and_metadata_example() -> None:
    c = composer(template="english", include_scores=True, include_metadata=True)
    assert c.compose(worked_chunks(), ANALYSIS, 800) == (
        "📚 Retrieved Information:\n---\n[Source: book | Score: 0.577]\nMachine learning is a "
        "field of AI that learns from data.\n[source: book]\n---\n[Source: d2 | Score: 0.333]\n"
        "Deep learning uses neural networks with many layers.\n---\n─── End of Context ───"
    )


def test_arabic_scores_format() -> None:
    c = composer(include_scores=True)
    assert c._format_chunk(sc("  body \n", "d", composite=0.12345), 0) == (
        "[المصدر: d | الدرجة: 0.123]\nbody"
    )


def test_arabic_120_walkthrough_cuts_footer_quirk() -> None:
    c = composer()
    chunk1 = c._format_chunk(worked_chunks()[0], 0)
    assert len(chunk1) == 71
    # header 22, footer cost 21 + 5 -> 72 available; chunk1 + sep = 76 does not fit
    # but is the first chunk, so it goes in untruncated (71 <= 72).
    assert c._hard_truncate(chunk1, 72) == chunk1
    out = c.compose(worked_chunks(), ANALYSIS, 120)
    assert out.endswith("─── نهاية...")
    assert 22 + 5 + 71 + 5 + 20 == 123


# --- _format_chunk (§5.3) -------------------------------------------------


def test_format_source_fallbacks_quirk() -> None:
    c = composer(template="structured")
    assert c._format_chunk(sc("t", "", None), 0) == "--- [1] doc-0 ---\nt"
    assert c._format_chunk(sc("t", "", None), 4) == "--- [5] doc-4 ---\nt"
    assert c._format_chunk(sc("t", "id9", None), 0) == "--- [1] id9 ---\nt"
    assert c._format_chunk(sc("t", "id9", None, source="attr"), 0) == "--- [1] attr ---\nt"
    assert c._format_chunk(sc("t", "id9", {"source": "meta"}, source="attr"), 0) == (
        "--- [1] meta ---\nt"
    )


def test_format_strips_text_and_keeps_braces_literal() -> None:
    c = composer(template="english")
    assert c._format_chunk(sc("\n\t {text} {0} \n", "{source}"), 0) == (
        "[Source: {source}]\n{text} {0}"
    )


def test_format_metadata_first_five_items() -> None:
    meta: dict[str, Any] = {"a": 1, "b": None, "c": [1, 2], "d": 2.5, "e": True, "f": "x"}
    c = composer(template="minimal", include_metadata=True)
    assert c._format_chunk(sc("body", "d", meta), 0) == (
        "body\n[a: 1 | b: None | c: [1, 2] | d: 2.5 | e: True]"
    )


def test_format_metadata_skipped_when_empty() -> None:
    c = composer(template="minimal", include_metadata=True)
    assert c._format_chunk(sc("body", "d", {}), 0) == "body"
    assert c._format_chunk(sc("body", "d", None), 0) == "body"


def test_format_flags_read_live() -> None:
    cfg = ContextEngineConfig()
    c = SmartContextComposer(cfg)
    cfg.composer.include_scores = True
    assert c._format_chunk(sc("t", "d", composite=1.0), 0) == "[المصدر: d | الدرجة: 1.000]\nt"


# --- _group_by_source (§5.4) -----------------------------------------------


def test_group_by_source_example() -> None:
    chunks = [
        sc("a one", "1", {"source": "A"}, 0.5),
        sc("b one", "2", {"source": "B"}, 0.9),
        sc("a two", "3", {"source": "A"}, 0.95),
        sc("c one", "4", {"source": "C"}, 0.9),
    ]
    c = composer(template="minimal", group_by_source=True)
    assert [x.doc_id for x in c._group_by_source(chunks)] == ["1", "3", "2", "4"]
    assert c.compose(chunks, ANALYSIS, 800) == "a one\n---\na two\n---\nb one\n---\nc one"


def test_group_by_source_changes_indices_after_grouping() -> None:
    chunks = [sc("x", "", None, 0.1, source="S"), sc("y", "", None, 0.9, source="T")]
    c = composer(template="structured", group_by_source=True)
    out = c.compose(chunks, ANALYSIS, 800)
    assert "--- [1] T ---\ny" in out
    assert "--- [2] S ---\nx" in out


# --- _assemble (§5.5) -------------------------------------------------------


def test_first_chunk_always_included_even_over_budget_quirk() -> None:
    c = composer(template="minimal")
    out = c.compose([sc("word " * 40, "d")], ANALYSIS, 30)
    assert out.endswith("...")
    assert len(out) <= 30


def test_packing_stops_at_first_non_fitting_chunk_quirk() -> None:
    chunks = [sc("a" * 10), sc("b" * 50), sc("c" * 5)]
    out = composer(template="minimal").compose(chunks, ANALYSIS, 40)
    assert out == "a" * 10


def test_budget_at_or_below_three_yields_ellipsis_quirk() -> None:
    c = composer(template="minimal")
    assert c.compose([sc("abcdef")], ANALYSIS, 2) == "..."
    assert c.compose([sc("abcdef")], ANALYSIS, -5) == "..."
    assert c.compose([sc("abcdef")], ANALYSIS, 0) == "..."


def test_negative_budget_with_frame() -> None:
    assert composer(template="english").compose(worked_chunks(), ANALYSIS, -5) == "..."


def test_exact_fit_boundary() -> None:
    c = composer(template="minimal")
    # Each chunk is charged with one separator: 10 + 5 per chunk.
    chunks = [sc("a" * 10), sc("b" * 10)]
    assert c.compose(chunks, ANALYSIS, 30) == "a" * 10 + "\n---\n" + "b" * 10
    assert c.compose(chunks, ANALYSIS, 29) == "a" * 10


def test_custom_separator() -> None:
    c = composer(template="english", separator="\n\n")
    assert c.compose(worked_chunks()[1:], ANALYSIS, 800) == (
        "📚 Retrieved Information:\n\n[Source: d2]\nDeep learning uses neural networks with many "
        "layers.\n\n─── End of Context ───"
    )


def test_unknown_template_uses_arabic_frame() -> None:
    out = composer(template="bogus").compose(worked_chunks(), ANALYSIS, 800)
    assert out == WORKED[0][2]


def test_template_frozen_at_construction_quirk() -> None:
    cfg = ContextEngineConfig()
    c = SmartContextComposer(cfg)
    cfg.composer.template = "minimal"
    assert c.compose(worked_chunks(), ANALYSIS, 800) == WORKED[0][2]
    assert c.get_stats("x")["template"] == "minimal"


def test_compose_ignores_analysis_quirk() -> None:
    c = composer()
    other = QueryAnalysis(original_query="ما هو", normalized="ما هو", is_arabic=False)
    assert c.compose(worked_chunks(), other, 800) == c.compose(worked_chunks(), ANALYSIS, 800)
    assert c.compose(worked_chunks(), None, 800) == WORKED[0][2]  # type: ignore[arg-type]


def test_token_counter_budget() -> None:
    c = composer(make_token_counter(WhitespaceTokenizer()), template="minimal")
    chunks = [sc("one two three four", "a"), sc("five six seven", "b"), sc("eight nine", "c")]
    # The separator "---" is one token: chunk costs are 5, 4, 3.
    assert c.compose(chunks, ANALYSIS, 9) == "one two three four\n---\nfive six seven"
    # The first chunk's truncation ignores its separator cost: 4 tokens fit in 4.
    assert c.compose(chunks, ANALYSIS, 4) == "one two three four"
    assert c.compose(chunks, ANALYSIS, 2) == "..."
    longer = [sc("one two three four five six", "a"), *chunks[1:]]
    assert c.compose(longer, ANALYSIS, 5) == "one two..."


def test_compose_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="zerda_async.core.composer"):
        composer(template="minimal").compose([sc("abcdef")], ANALYSIS, 100)
    assert [r.getMessage() for r in caplog.records] == [
        "SmartContextComposer: 1 chunks → 6 chars (budget=100)"
    ]


def test_compose_bad_budget_raises_type_error() -> None:
    with pytest.raises(TypeError):
        composer().compose(worked_chunks(), ANALYSIS, None)  # type: ignore[arg-type]


def test_compose_non_chunks_raise_attribute_error() -> None:
    with pytest.raises(AttributeError):
        composer().compose(["text"], ANALYSIS, 100)  # type: ignore[list-item]


def test_compose_huge_input_respects_budget() -> None:
    chunks = [sc(f"chunk {i} " + "word " * 50, str(i)) for i in range(3000)]
    out = composer(template="english").compose(chunks, ANALYSIS, 5000)
    assert len(out) <= 5000
    assert out.endswith("─── End of Context ───")


# --- _empty_context (§5.6) ------------------------------------------------

EMPTY: dict[str, str] = {
    "arabic": "📚 المعلومات المسترجعة:\n---\nلا تتوفر معلومات.\n---\n─── نهاية السياق ───",
    "english": (
        "📚 Retrieved Information:\n---\nNo information available.\n---\n─── End of Context ───"
    ),
    "minimal": "No information available.",
    "structured": "=== CONTEXT START ===\n---\nNo information available.\n---\n=== CONTEXT END ===",
    "bogus": "📚 المعلومات المسترجعة:\n---\nNo information available.\n---\n─── نهاية السياق ───",
}


@pytest.mark.parametrize(("template", "expected"), list(EMPTY.items()))
def test_empty_context_placeholders(template: str, expected: str) -> None:
    c = composer(template=template)
    assert c._empty_context() == expected
    assert c.compose([], ANALYSIS, 800) == expected


def test_empty_arabic_placeholder_length() -> None:
    assert len(EMPTY["arabic"]) == 69


def test_empty_context_ignores_budget_quirk() -> None:
    c = composer()
    assert c.compose([], ANALYSIS, 5) == EMPTY["arabic"]
    assert c.compose(None, ANALYSIS, -1) == EMPTY["arabic"]  # type: ignore[arg-type]


def test_empty_context_language_follows_live_template_quirk() -> None:
    cfg = ContextEngineConfig()
    c = SmartContextComposer(cfg)
    cfg.composer.template = "english"
    assert c._empty_context() == (
        "📚 المعلومات المسترجعة:\n---\nNo information available.\n---\n─── نهاية السياق ───"
    )


def test_empty_context_uses_separator() -> None:
    assert composer(template="structured", separator=" | ")._empty_context() == (
        "=== CONTEXT START === | No information available. | === CONTEXT END ==="
    )


# --- _hard_truncate (§5.7) ---------------------------------------------------


def test_hard_truncate_examples() -> None:
    c = composer()
    assert c._hard_truncate("The quick brown fox jumps over the lazy dog", 20) == (
        "The quick brown..."
    )
    assert c._hard_truncate("Thequickbrownfoxjumpsoverthelazydog", 20) == "Thequickbrownfoxj..."
    assert c._hard_truncate("abcdef", 2) == "..."
    assert c._hard_truncate("abcdef", -5) == "..."


def test_hard_truncate_fits_unchanged() -> None:
    c = composer()
    assert c._hard_truncate("abcdef", 6) == "abcdef"
    assert c._hard_truncate("", 0) == ""


def test_hard_truncate_backoff_is_strictly_above_seven_tenths() -> None:
    c = composer()
    # max_len 13 -> lo 10; a space at index 7 is exactly 0.7 * 10: no back-off.
    assert c._hard_truncate("abcdefg hijklmnop", 13) == "abcdefg hi..."
    # A space at index 8 (> 7) backs off to it.
    assert c._hard_truncate("abcdefgh ijklmnop", 13) == "abcdefgh..."


def test_hard_truncate_only_ascii_space_counts() -> None:
    c = composer()
    assert c._hard_truncate("abcdefgh\tijklmnop", 13) == "abcdefgh\ti..."


# --- get_stats (§5.9) -------------------------------------------------------


def test_get_stats_example() -> None:
    assert composer().get_stats("a\n---\nb") == {
        "total_length": 7,
        "chunk_count": 2,
        "avg_chunk_length": 1,
        "min_chunk_length": 1,
        "max_chunk_length": 1,
        "template": "arabic",
        "length_unit": "chars",
    }


def test_get_stats_counts_header_and_footer_quirk() -> None:
    stats = composer().get_stats(WORKED[0][2])
    assert stats["chunk_count"] == 4
    assert stats["total_length"] == 193
    assert list(stats) == [
        "total_length",
        "chunk_count",
        "avg_chunk_length",
        "min_chunk_length",
        "max_chunk_length",
        "template",
        "length_unit",
    ]


def test_get_stats_empty_and_blank_parts() -> None:
    assert composer().get_stats("") == {
        "total_length": 0,
        "chunk_count": 0,
        "avg_chunk_length": 0,
        "min_chunk_length": 0,
        "max_chunk_length": 0,
        "template": "arabic",
        "length_unit": "chars",
    }
    stats = composer().get_stats("abc\n---\n   \n---\nabcdef")
    assert (stats["chunk_count"], stats["avg_chunk_length"]) == (2, 4)
    assert (stats["min_chunk_length"], stats["max_chunk_length"]) == (3, 6)


def test_get_stats_length_unit_identity_quirk() -> None:
    assert composer(char_counter).get_stats("x")["length_unit"] == "chars"
    assert composer(len).get_stats("x")["length_unit"] == "tokens"
    tokens = composer(make_token_counter(WhitespaceTokenizer())).get_stats("a b\n---\nc")
    assert tokens["length_unit"] == "tokens"
    assert tokens["total_length"] == 4
    assert tokens["chunk_count"] == 2


def test_get_stats_empty_separator_raises_value_error() -> None:
    with pytest.raises(ValueError, match="empty separator"):
        composer(separator="").get_stats("abc")


def test_get_stats_none_raises_attribute_error() -> None:
    with pytest.raises(AttributeError):
        composer().get_stats(None)  # type: ignore[arg-type]

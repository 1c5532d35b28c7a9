"""Opt-in packing (``composer.packing = "fit"``), the relevance floor, "auto" and citations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from zerda_async.core.composer import SmartContextComposer, compose_with_citations
from zerda_async.core.config import ContextEngineConfig, LengthCounter
from zerda_async.core.counters import make_token_counter
from zerda_async.core.models import Composition, QueryAnalysis, ScoredChunk
from zerda_async.core.templates import TEMPLATES
from zerda_async.core.truncation import sentence_prefix
from zerda_async.errors import ConfigError

EN = QueryAnalysis(original_query="What is BM25?", normalized="what is bm25?")
AR = QueryAnalysis(
    original_query="ما هو التعلم الآلي؟", normalized="x", is_arabic=True, language="ar"
)
TEMPLATE_NAMES = sorted(TEMPLATES)


class WhitespaceTokenizer:
    def encode(self, text: str) -> list[str]:
        return text.split()


def sc(text: str, doc_id: str, score: float = 0.5, **meta: Any) -> ScoredChunk:
    chunk = SimpleNamespace(text=text, doc_id=doc_id, metadata=meta or None)
    return ScoredChunk(chunk=chunk, composite_score=score)


def composer(counter: LengthCounter | None = None, **fields: Any) -> SmartContextComposer:
    cfg = ContextEngineConfig()
    for key, value in fields.items():
        setattr(cfg.composer, key, value)
    return SmartContextComposer(cfg, counter)


def check_citations(result: Composition, chunks: list[ScoredChunk]) -> None:
    """Every citation's span is its chunk's printed text (or a prefix of it when cut)."""
    by_id = {c.doc_id: c for c in chunks}
    previous_end = -1
    for cit in result.citations:
        text = by_id[cit.doc_id].text.strip()
        span = result.context[cit.start : cit.end]
        assert cit.start > previous_end, "citations are in context order"
        previous_end = cit.end
        if cit.truncated:
            assert text.startswith(span) and len(span) < len(text)
        else:
            assert span == text
        if cit.label:
            before = result.context[: cit.start]
            assert before.rstrip().endswith(cit.label)


LONG = "First sentence here. Second sentence follows. Third one ends it."
SHORT = "A short chunk that fits."


def test_fit_skips_a_chunk_that_does_not_fit_and_packs_the_next() -> None:
    big = sc("x" * 400 + ".", "big")
    small = sc(SHORT, "small")
    chunks = [sc(SHORT.replace("A", "One"), "first"), big, small]
    documented = composer(template="english").compose_cited(chunks, EN, 200)
    fit = composer(template="english", packing="fit").compose_cited(chunks, EN, 200)
    assert [c.doc_id for c in documented.citations] == ["first"]
    assert [c.doc_id for c in fit.citations] == ["first", "small"]
    assert len(fit.context) <= 200
    check_citations(fit, chunks)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (LONG, "First sentence here. Second sentence follows."),
        (
            "التعلم الآلي فرع من الذكاء. هل يتعلم من البيانات؟ نعم، يتعلم منها كثيرًا جدًا.",
            "التعلم الآلي فرع من الذكاء. هل يتعلم من البيانات؟",
        ),
    ],
)
def test_fit_cuts_at_a_sentence_boundary_in_both_scripts(text: str, kept: str) -> None:
    chunk = sc(text, "d")
    c = composer(template="minimal", packing="fit")
    budget = len(kept) + len(c.cfg.separator) + 3
    result = c.compose_cited([chunk], EN, budget)
    assert result.context == kept
    (cit,) = result.citations
    assert cit.truncated and result.context[cit.start : cit.end] == kept
    check_citations(result, [chunk])


def test_sentence_prefix_needs_one_whole_sentence() -> None:
    assert sentence_prefix(LONG, 10) == ""
    assert sentence_prefix(LONG, len(LONG)) == LONG
    assert sentence_prefix("Ends here. Next", 11) == "Ends here."


@pytest.mark.parametrize("template", ["arabic", "english", "structured"])
@pytest.mark.parametrize("budget", [60, 90, 130, 170, 400])
def test_fit_never_cuts_the_header_or_footer(template: str, budget: int) -> None:
    chunks = [sc(LONG, "a"), sc(LONG.upper(), "b"), sc(SHORT, "c")]
    result = composer(template=template, packing="fit").compose_cited(chunks, EN, budget)
    tmpl = TEMPLATES[template]
    assert result.context.startswith(tmpl.header.rstrip())
    assert result.context.endswith(tmpl.footer.lstrip())
    check_citations(result, chunks)


def test_documented_packing_can_cut_the_footer_and_fit_cannot() -> None:
    chunks = [sc(LONG, "a")]
    tmpl, sep = TEMPLATES["english"], "\n---\n"
    # The chunk fits without its separator, so the documented clamp bites the footer.
    budget = len(tmpl.header.rstrip()) + len(tmpl.footer) + len(sep) + len(f"[Source: a]\n{LONG}")
    documented = composer(template="english").compose(chunks, EN, budget)
    fit = composer(template="english", packing="fit").compose(chunks, EN, budget)
    assert documented.endswith("...") and "─── End of" in documented
    assert fit.endswith(tmpl.footer.lstrip()) and len(fit) <= budget


def test_fit_with_a_token_counter_stays_within_the_budget() -> None:
    counter = make_token_counter(WhitespaceTokenizer())
    chunks = [sc(LONG, "a"), sc(SHORT, "b"), sc(LONG.lower(), "c")]
    for budget in (8, 12, 20, 40):
        result = composer(counter, template="english", packing="fit").compose_cited(
            chunks, EN, budget
        )
        assert counter(result.context) <= budget or not result.citations
        check_citations(result, chunks)


def test_relevance_floor_leaves_out_weak_chunks() -> None:
    chunks = [sc(SHORT, "strong", 0.4), sc(LONG, "weak", 0.05)]
    result = composer(template="english", relevance_floor=0.1).compose_cited(chunks, EN, 2000)
    assert [c.doc_id for c in result.citations] == ["strong"]
    assert not result.nothing_relevant


def test_relevance_floor_says_when_nothing_is_relevant() -> None:
    chunks = [sc(SHORT, "weak", 0.05)]
    c = composer(template="english", packing="fit", relevance_floor=0.1)
    result = c.compose_cited(chunks, EN, 2000)
    assert result.nothing_relevant and result.citations == ()
    assert result.context == c._empty_context()
    # The documented composer has no floor: it packs the chunk and flags nothing.
    documented = composer(template="english").compose_cited(chunks, EN, 2000)
    assert not documented.nothing_relevant and len(documented.citations) == 1


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
@pytest.mark.parametrize("packing", ["documented", "fit"])
@pytest.mark.parametrize("budget", [40, 75, 120, 200, 5000])
@pytest.mark.parametrize("extras", [{}, {"include_scores": True, "include_metadata": True}])
def test_citations_locate_every_chunk_for_every_template(
    template: str, packing: str, budget: int, extras: dict[str, Any]
) -> None:
    chunks = [sc(LONG, "a", 0.3, source="s1"), sc(SHORT, "b", 0.2), sc(LONG[::-1], "c", 0.1)]
    c = composer(template=template, packing=packing, **extras)
    result = c.compose_cited(chunks, EN, budget)
    assert result.context == c.compose(chunks, EN, budget)
    check_citations(result, chunks)
    if budget == 5000:
        assert [cit.doc_id for cit in result.citations] == ["a", "b", "c"]
        assert not any(cit.truncated for cit in result.citations)


def test_citation_labels_are_the_printed_markers() -> None:
    chunks = [sc(SHORT, "d1", source="handbook"), sc(LONG, "d2")]
    labels = {
        name: [
            cit.label for cit in composer(template=name).compose_cited(chunks, EN, 5000).citations
        ]
        for name in TEMPLATE_NAMES
    }
    assert labels == {
        "arabic": ["[المصدر: handbook]", "[المصدر: d2]"],
        "english": ["[Source: handbook]", "[Source: d2]"],
        "minimal": ["", ""],
        "structured": ["--- [1] handbook ---", "--- [2] d2 ---"],
    }
    sources = [cit.source for cit in composer().compose_cited(chunks, EN, 5000).citations]
    assert sources == ["handbook", "d2"]


def test_documented_first_chunk_cut_is_flagged_truncated() -> None:
    chunks = [sc(LONG * 3, "a")]
    result = composer(template="english").compose_cited(chunks, EN, 120)
    (cit,) = result.citations
    assert cit.truncated
    check_citations(result, chunks)


def test_auto_template_follows_the_query_language() -> None:
    chunks = [sc(SHORT, "d")]
    c = composer(template="auto")
    assert c.compose(chunks, AR, 5000).startswith(TEMPLATES["arabic"].header.rstrip())
    assert c.compose(chunks, EN, 5000).startswith(TEMPLATES["english"].header.rstrip())
    assert c.compose([], EN, 5000) == composer(template="english").compose([], EN, 5000)
    assert c.compose([], AR, 5000) == composer(template="arabic").compose([], AR, 5000)


def test_injected_composer_is_called_through_compose_and_cites_nothing() -> None:
    class Upper(SmartContextComposer):
        def compose(self, chunks: list[ScoredChunk], analysis: QueryAnalysis, budget: int) -> str:
            return super().compose(chunks, analysis, budget).upper()

    chunks = [sc(SHORT, "d")]
    result = compose_with_citations(Upper(ContextEngineConfig()), chunks, EN, 5000)
    assert result.context == Upper(ContextEngineConfig()).compose(chunks, EN, 5000)
    assert result.citations == ()


@pytest.mark.parametrize(
    ("field", "value"),
    [("packing", "greedy"), ("relevance_floor", -0.1), ("relevance_floor", 1.5)],
)
def test_new_composer_fields_are_always_checked(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"composer.{field}"):
        composer(**{field: value})

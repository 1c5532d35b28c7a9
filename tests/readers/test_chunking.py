"""The span chunker: every chunk is a slice of the document's text, within its page and section."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zerda_async.readers import SENTENCE_END, Document, Heading, chunk_document, chunk_spans

# Text with what the chunker cuts at: blank lines, sentence ends (Latin and
# Arabic), long words, tabs and carriage-return-free line breaks.
_PIECES = st.sampled_from(
    ["word", "Rabat", "الرباط", "مدينة", ".", "؟", "!", " ", "  ", "\n", "\n\n", "\t", "x" * 30]
)
TEXTS = st.lists(_PIECES, max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, max_chars=st.integers(1, 120), cuts=st.lists(st.integers(0, 400), max_size=5))
def test_every_chunk_is_its_slice_of_the_text(text: str, max_chars: int, cuts: list[int]) -> None:
    spans = chunk_spans(text, max_chars, cuts)
    previous_end = 0
    for start, end in spans:
        piece = text[start:end]
        assert 0 < end - start <= max_chars
        assert piece == piece.strip(), "a chunk never starts or ends with whitespace"
        assert start >= previous_end, "chunks are in order and do not overlap"
        assert not any(start < cut < end for cut in cuts), "no chunk crosses a break"
        previous_end = end
    # Nothing is lost: every non-blank character is in some chunk.
    covered = set().union(*(range(s, e) for s, e in spans)) if spans else set()
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


@settings(max_examples=100, deadline=None)
@given(text=TEXTS, max_chars=st.integers(10, 200))
def test_document_chunks_carry_their_span_page_and_section(text: str, max_chars: int) -> None:
    middle = len(text) // 2
    document = Document(
        source="t",
        kind="pdf",
        text=text,
        pages=(0, middle),
        headings=(Heading(0, 1, "Intro"), Heading(middle, 2, "Details")),
    )
    for chunk in chunk_document(document, max_chars):
        assert chunk.text == text[chunk.start : chunk.end]
        assert chunk.page == (1 if chunk.start < middle else 2)
        assert chunk.section == (("Intro",) if chunk.start < middle else ("Intro", "Details"))


def test_whitespace_between_sentences_is_kept_as_written() -> None:
    # The old chunker rewrote "pipeline).\n       While" as "pipeline). While".
    text = "It runs the pipeline).\n       While it waits, nothing else runs. " + "x " * 30
    first, second = chunk_spans(text, 80)
    # The paragraph is cut at sentence ends, and the sentences that fit are one slice.
    assert (
        text[first[0] : first[1]]
        == "It runs the pipeline).\n       While it waits, nothing else runs."
    )
    assert text[second[0] : second[1]] == ("x " * 30).strip()


def test_an_initial_or_a_title_does_not_end_a_sentence() -> None:
    text = "It rained. By John C. Messenger. " + "x " * 30
    first, second = chunk_spans(text, 22)[:2]
    # Every full stop as a sentence end would pack "It rained. By John C." (21).
    assert text[first[0] : first[1]] == "It rained."
    assert text[second[0] : second[1]] == "By John C. Messenger."


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Dr. Smith met É. Zola in the U.S. lab. Then it rained.", 2),
        ("А. С. Пушкин wrote it. Fig. 2 shows it, et al. said.", 2),
        ("رئيس البلدية و. هايدون بيرنز. ثم جاء.", 2),  # an Arabic initial
        ("رئيس البلدية وَ. هايدون بيرنز. ثم جاء.", 2),  # with its vowel mark
        ("بنيت سنة 651 م. ثم هدمت.", 2),  # the era after a year ends a sentence
        ("توفي سنة 1400 ه. ثم دفن.", 2),
        ("كان معروفًا سابقًا. ويكتب.", 2),  # a vowel mark before the last letter
        ("It was big. Then it fell. Yes? No!", 4),
    ],
)
def test_sentence_ends(text: str, sentences: int) -> None:
    assert len(SENTENCE_END.split(text)) == sentences


def test_sections_nest_by_level_and_close_at_a_sibling() -> None:
    headings = (Heading(0, 1, "A"), Heading(10, 2, "B"), Heading(20, 3, "C"), Heading(30, 2, "D"))
    document = Document(source="t", kind="markdown", text="x" * 40, headings=headings)
    assert document.section_at(5) == ("A",)
    assert document.section_at(25) == ("A", "B", "C")
    assert document.section_at(35) == ("A", "D")
    assert document.page_at(35) is None

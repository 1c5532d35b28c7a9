"""Chunk size by document length: long documents are cut larger, short ones as before."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zerda_async.readers import LONG_DOCUMENT, Document, chunk_document, chunk_size_for


@given(
    length=st.integers(0, 100_000),
    size=st.integers(20, 4000),
    long_size=st.integers(0, 4000),
    long_from=st.integers(1, 50_000),
)
def test_the_long_size_applies_from_the_threshold_only(
    length: int, size: int, long_size: int, long_from: int
) -> None:
    chosen = chunk_size_for(length, size, long_size, long_from)
    if long_size > 0 and length >= long_from:
        assert chosen == long_size
    else:
        assert chosen == size


def test_the_default_threshold_is_long_document() -> None:
    assert chunk_size_for(LONG_DOCUMENT - 1, 400, 600) == 400
    assert chunk_size_for(LONG_DOCUMENT, 400, 600) == 600
    assert chunk_size_for(LONG_DOCUMENT, 400, 0) == 400


def test_a_long_article_gets_fewer_larger_chunks() -> None:
    sentence = "Coronaviruses bind the ACE2 receptor before the spike protein is cleaved. "
    text = sentence * (LONG_DOCUMENT // len(sentence) + 1)
    document = Document(source="article", kind="text", text=text)
    short = chunk_document(document, chunk_size_for(len(text), 400, 0))
    long = chunk_document(document, chunk_size_for(len(text), 400, 600))
    assert max(len(c.text) for c in short) <= 400
    assert max(len(c.text) for c in long) > 400
    assert all(len(c.text) <= 600 for c in long)
    assert len(long) < len(short)

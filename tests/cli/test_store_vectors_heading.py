"""``zerda index --store`` with ``retriever.embed_heading``: which stored vectors are reused.

The store gives back each vector with its chunk's text, which is what was
embedded only when headings are off; with them on, a stored vector may carry a
heading the chunk no longer has, so only the cache (keyed by the text
embedded) is reused.  A unit test of :mod:`zerda_async.apps._index_vectors`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

import zerda_async.stores
from zerda_async.apps._index_vectors import store_cache_path, store_vectors
from zerda_async.core.index.chunks import SEARCH_HEADING, embedding_text
from zerda_async.embedders import HashingEmbedder

pytestmark = pytest.mark.anyio

URL = "postgresql://127.0.0.1/notes"
EMBEDDER = HashingEmbedder(dim=32)


class Chunk(msgspec.Struct, kw_only=True):
    doc_id: str
    text: str
    metadata: dict[str, Any]


@pytest.fixture
def anyio_backend() -> str:
    """The CLI runs on asyncio."""
    return "asyncio"


def _stored(monkeypatch: pytest.MonkeyPatch, rows: list[tuple[str, Any]]) -> None:
    """The store's ``(text, vector)`` rows, without a PostgreSQL server."""

    async def stored_vectors(store: Any, doc_ids: Any) -> list[tuple[str, Any]]:
        return rows if doc_ids else []

    monkeypatch.setattr(zerda_async.stores, "stored_vectors", stored_vectors)


@pytest.mark.parametrize("heading", [False, True])
async def test_a_stored_vector_is_reused_only_for_the_text_it_was_embedded_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, heading: bool
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = "the caravan rested at the oasis"
    # Stored when the chunk had a heading (and the store embedded headings);
    # the chunk, indexed again, has lost it.
    stored = np.asarray(EMBEDDER(f"Old title: {text}"), dtype=np.float32)
    _stored(monkeypatch, [(text, stored)])
    chunk = Chunk(doc_id="notes#0", text=text, metadata={"source": "notes.txt"})
    vectors = await store_vectors(URL, None, ["notes#0"], [chunk], EMBEDDER, True, heading)
    fresh = np.asarray(EMBEDDER.embed_batch([embedding_text(chunk, heading)]), dtype=np.float32)
    expected = fresh if heading else stored[np.newaxis]
    np.testing.assert_array_equal(np.asarray(vectors), expected)


async def test_a_chunk_with_its_heading_is_embedded_once_then_read_from_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _stored(monkeypatch, [])
    chunk = Chunk(doc_id="guide#0", text="run the installer", metadata={SEARCH_HEADING: "Setup"})
    first = await store_vectors(URL, None, [], [chunk], EMBEDDER, True, True)
    assert "embedded 1 chunk(s)" in capsys.readouterr().out
    again = await store_vectors(URL, None, [], [chunk], EMBEDDER, True, True)
    assert "embedded 0 chunk(s)" in capsys.readouterr().out
    np.testing.assert_array_equal(np.asarray(again), np.asarray(first))
    assert store_cache_path(URL, EMBEDDER.params(), True).exists()
    assert not store_cache_path(URL, EMBEDDER.params(), False).exists()


def test_the_cache_file_depends_on_the_heading_setting() -> None:
    params = EMBEDDER.params()
    assert store_cache_path(URL, params) == store_cache_path(URL, params, False)
    assert store_cache_path(URL, params, True) != store_cache_path(URL, params, False)

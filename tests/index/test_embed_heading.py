"""``retriever.embed_heading``: the embedder reads a chunk's search heading before its text.

Off by default (and in both profiles), the option changes what every path
that embeds chunks gives the embedder — the sync retriever, the async
engine's ``index``/``add``, an index store's ``add`` — and a saved index or
an index store records it, so a copy opened with the other setting is a
one-line error rather than vectors embedded two ways.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.index.chunks import SEARCH_HEADING, embedding_text
from zerda_async.errors import IndexFormatError
from zerda_async.stores import MemoryIndexStore, Stores

from .support import embed, make_config

pytestmark = pytest.mark.anyio


class _Chunk(msgspec.Struct):
    doc_id: str
    text: str
    metadata: dict[str, Any]


def _chunks() -> list[_Chunk]:
    titled = {"source": "guide.md", SEARCH_HEADING: "Install guide › Linux"}
    return [
        _Chunk("guide#0", "run the installer with the vector option", titled),
        _Chunk("guide#1", "the keyword index needs no model", titled),
        _Chunk("notes#0", "a chunk read without any heading", {"source": "notes.txt"}),
    ]


class _Recorder:
    """An embedder (one text or a batch) that keeps every text it was given."""

    def __init__(self) -> None:
        self.texts: list[Any] = []

    def __call__(self, text: Any) -> Any:
        self.texts.append(text)
        return embed(text)

    def embed_batch(self, texts: list[Any]) -> Any:
        self.texts += texts
        return np.stack([embed(t) for t in texts])


def _config(heading: bool) -> ContextEngineConfig:
    config = make_config()
    config.retriever.embed_heading = heading
    return config


def _expected(chunks: list[_Chunk], heading: bool) -> list[str]:
    return [
        f"{c.metadata[SEARCH_HEADING]}: {c.text}"
        if heading and SEARCH_HEADING in c.metadata
        else c.text
        for c in chunks
    ]


def test_embedding_text_puts_the_heading_first_only_when_asked() -> None:
    titled, _, plain = _chunks()
    assert embedding_text(titled, True) == (
        "Install guide › Linux: run the installer with the vector option"
    )
    assert embedding_text(titled, False) == titled.text
    assert embedding_text(plain, True) == plain.text
    assert ContextEngineConfig().retriever.embed_heading is False
    assert ContextEngineConfig.recommended().retriever.embed_heading is False


@pytest.mark.parametrize("heading", [False, True])
def test_the_sync_engine_embeds_what_the_option_says(heading: bool) -> None:
    recorder = _Recorder()
    engine = ContextEngine(_config(heading))
    engine.index(_chunks(), embed_fn=recorder)
    assert recorder.texts == _expected(_chunks(), heading)


@pytest.mark.parametrize("heading", [False, True])
async def test_the_async_engine_embeds_indexed_and_added_chunks_alike(heading: bool) -> None:
    recorder = _Recorder()
    first, second, third = _chunks()
    async with AsyncContextEngine(_config(heading)) as engine:
        await engine.index([first], recorder, batch_embed_fn=recorder.embed_batch)
        await engine.add([second, third])
    assert recorder.texts == _expected([first, second, third], heading)


async def test_a_saved_index_records_the_option_and_refuses_the_other(tmp_path: Path) -> None:
    path = tmp_path / "titled"
    recorder = _Recorder()
    first, second, third = _chunks()
    async with AsyncContextEngine(_config(True)) as engine:
        await engine.index([first, third], recorder, batch_embed_fn=recorder.embed_batch)
        await engine.save(path)
    # Loaded with its saved configuration, it embeds added chunks as it was built.
    async with await AsyncContextEngine.load(
        path, recorder, batch_embed_fn=recorder.embed_batch
    ) as engine:
        await engine.add([second])
    assert recorder.texts == _expected([first, third, second], True)
    with pytest.raises(IndexFormatError, match="embed_heading True") as caught:
        await AsyncContextEngine.load(path, config=_config(False))
    assert "\n" not in str(caught.value)


async def test_an_index_store_gets_the_vectors_of_the_heading_and_text() -> None:
    recorder = _Recorder()
    store = MemoryIndexStore()
    stores = Stores(index=store, embedder=recorder)
    async with AsyncContextEngine(_config(True), stores=stores) as engine:
        await engine.add(_chunks())
    assert recorder.texts == _expected(_chunks(), True)
    found = await store.vector_search(np.asarray(embed(_expected(_chunks(), True)[0])), 1)
    assert found[0].chunk.doc_id == "guide#0"

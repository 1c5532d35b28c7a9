"""Asymmetric embedders: queries embedded as queries, passages as passages; the query cache."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    Embedder,
    HashingEmbedder,
    QueryEmbedder,
    embed_kwargs,
    query_forms,
)

from .support import CORPUS

pytestmark = pytest.mark.anyio


class Prefixed:
    """A small asymmetric embedder: the hashing embedder over ``query: `` / ``passage: `` texts.

    It records every text it embedded, so a test sees which form the engine used.
    """

    name = "prefixed-hashing"

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=64)
        self.seen: list[str] = []

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return np.asarray(self.inner.embed_batch(texts), dtype=np.float32)

    def __call__(self, text: Any) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self._embed([f"passage: {text}"])[0]
        return row

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float32]:
        return self._embed([f"passage: {t}" for t in texts])

    def embed_query(self, text: Any) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self._embed([f"query: {text}"])[0]
        return row

    def embed_queries(self, texts: Sequence[Any]) -> NDArray[np.float32]:
        return self._embed([f"query: {t}" for t in texts])


def test_query_forms_are_found_on_the_embedder_or_its_bound_batch_method() -> None:
    emb = Prefixed()
    assert isinstance(emb, QueryEmbedder)
    assert query_forms(emb) == (emb.embed_query, emb.embed_queries)
    assert query_forms(None, emb.embed_batch) == (emb.embed_query, emb.embed_queries)
    symmetric = HashingEmbedder(dim=8)
    assert query_forms(symmetric, symmetric.embed_batch) is None
    assert query_forms(lambda text: [1.0]) is None


async def test_the_engine_indexes_passages_and_searches_with_queries() -> None:
    emb = Prefixed()
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(emb))
        assert all(text.startswith("passage: ") for text in emb.seen)
        emb.seen.clear()
        result = await engine.run("automobile engine repaired")
        assert emb.seen == ["query: automobile engine repaired"]
        best = max(result.chunks_used, key=lambda scored: scored.vector_score)
        cosine = float(emb(best.chunk.text) @ emb.embed_query("automobile engine repaired"))
        assert best.vector_score == pytest.approx(cosine, abs=1e-3)


async def test_the_engine_given_only_embed_fn_still_embeds_queries_as_queries() -> None:
    emb = Prefixed()
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, embed_fn=emb)
        emb.seen.clear()
        await engine.run("palm trees")
        assert emb.seen == ["query: palm trees"]


async def test_a_repeated_question_is_not_embedded_again() -> None:
    emb = Prefixed()
    embedder = Embedder(emb, emb.embed_batch, query_cache_size=2)
    first = await embedder.embed_queries(["a", "b", "a"])
    assert emb.seen == ["query: a", "query: b"]  # the same text twice: embedded once
    assert np.array_equal(first[0], first[2])
    again = await embedder.embed_queries(["b", "a"])
    assert emb.seen == ["query: a", "query: b"] and embedder.query_cache_hits == 2
    assert np.array_equal(again[1], first[0])
    await embedder.embed_queries(["c"])  # evicts "b", the least recently used
    await embedder.embed_queries(["a", "b"])
    assert emb.seen[-1] == "query: b" and emb.seen.count("query: a") == 1


async def test_the_engine_query_cache_serves_repeated_runs() -> None:
    emb = Prefixed()
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(emb))
        first = await engine.run("coffee beans")
        calls = engine.embedder_calls
        second = await engine.run("coffee beans")
        assert engine.embedder_calls == calls
        assert emb.seen.count("query: coffee beans") == 1
        assert first.context == second.context


async def test_a_symmetric_embedder_embeds_queries_with_its_own_form() -> None:
    emb = HashingEmbedder(dim=32)
    expected = emb.embed_batch(["river"])[0]
    embedder = Embedder(emb, emb.embed_batch)
    rows = await embedder.embed_queries(["river"])
    assert np.allclose(rows[0], expected)
    assert not embedder.asymmetric and embedder.query_fn is emb


def test_a_negative_query_cache_size_is_refused() -> None:
    with pytest.raises(ValueError, match="query_cache_size"):
        Embedder(HashingEmbedder(dim=8), query_cache_size=-1)


async def test_corpus_progress_comes_in_small_steps_for_a_slow_embedder() -> None:
    """The first step is 16 texts, the next ones sized to about half a second each."""
    import time

    class Slow:
        name = "slow"

        def __call__(self, text: Any) -> list[float]:
            return [1.0, float(len(str(text)))]

        def embed_batch(self, texts: Sequence[Any]) -> list[list[float]]:
            time.sleep(0.05 * len(texts))  # 20 texts per second
            return [self(t) for t in texts]

    seen: list[tuple[int, int]] = []
    chunks = [type(CORPUS[0])(f"d{i}", f"text number {i}") for i in range(40)]
    emb = Slow()
    async with AsyncContextEngine() as engine:
        await engine.index(
            chunks,
            embed_fn=emb,
            batch_embed_fn=emb.embed_batch,
            progress=lambda done, total: seen.append((done, total)),
        )
    embedding = seen[: next(i for i, (d, _) in enumerate(seen) if d == 40) + 1]
    assert embedding[0] == (16, 40)
    assert [d for d, _ in embedding] == sorted(d for d, _ in embedding)
    assert len(embedding) >= 3  # ~10 texts a step after the first, not the rest at once


def test_the_sync_engine_embeds_passages_and_queries_with_their_forms() -> None:
    import sync_api

    emb = Prefixed()
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=emb)
    assert emb.seen and all(text.startswith("passage: ") for text in emb.seen)
    emb.seen.clear()
    engine.run("palm trees")
    assert emb.seen == ["query: palm trees"]

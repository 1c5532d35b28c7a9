"""An engine on the PostgreSQL index store against the in-memory engine: byte-identical contexts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps import load_demo_corpus
from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders import HashingEmbedder
from zerda_async.stores import (
    MemorySessionStore,
    PostgresIndexStore,
    RedisCacheStore,
    RedisLearningStore,
    RedisSessionStore,
    Stores,
)

from .servers import PostgresServer, RedisServer
from .test_postgres_index import QUERIES

pytestmark = pytest.mark.anyio

MORE = ["How does hybrid retrieval fuse results?", "كيف تحضر القهوة العربية؟", "What is BM25?"]


def _documented() -> ContextEngineConfig:
    return ContextEngineConfig()


def _recommended() -> ContextEngineConfig:
    return ContextEngineConfig.recommended()


def _keyword_only() -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.use_vector = False
    return config


def _with_metadata() -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.use_metadata = True
    return config


PROFILES: dict[str, Callable[[], ContextEngineConfig]] = {
    "documented": _documented,
    "recommended": _recommended,
    "keyword-only": _keyword_only,
    "metadata": _with_metadata,
}


async def _contexts(engine: AsyncContextEngine) -> list[str]:
    found = []
    for query in [*QUERIES, *MORE]:
        result = await engine.run(query, use_history=False, record_turn=False)
        found.append(result.context)
    filtered = await engine.run("coffee", metadata_filters={"lang": "ar"}, record_turn=False)
    return [*found, filtered.context]


@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_postgres_exact_gives_the_in_memory_contexts(
    postgres: PostgresServer, prefix: str, profile: str
) -> None:
    chunks = load_demo_corpus()
    embedder = HashingEmbedder(dim=64)
    config = PROFILES[profile]()
    async with AsyncContextEngine(config) as memory:
        await memory.index(chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch)
        expected = await _contexts(memory)
    store = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, analyzer=config.retriever.text_analyzer
    )
    try:
        await store.add(chunks, embedder.embed_batch([c.text for c in chunks]))
        stores = Stores(index=store, embedder=embedder)
        async with AsyncContextEngine(PROFILES[profile](), stores=stores) as remote:
            got = await _contexts(remote)
    finally:
        await store.aclose()
    assert any(expected) and got == expected


async def test_convex_fusion_over_the_store_fuses_deeper_lists(
    postgres: PostgresServer, prefix: str
) -> None:
    chunks = load_demo_corpus()
    embedder = HashingEmbedder(dim=64)
    config = ContextEngineConfig.recommended()
    assert config.retriever.fusion == "convex"
    store = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, analyzer=config.retriever.text_analyzer
    )
    asked: list[int] = []
    search = store.keyword_search

    async def counting(query: str, k: int, filters: Any = None) -> Any:
        asked.append(k)
        return await search(query, k, filters)

    store.keyword_search = counting
    try:
        await store.add(chunks, embedder.embed_batch([c.text for c in chunks]))
        stores = Stores(index=store, embedder=embedder)
        async with AsyncContextEngine(config, stores=stores) as remote:
            result = await remote.run(MORE[0], use_history=False, record_turn=False)
    finally:
        await store.aclose()
    assert asked == [config.retriever.fusion_depth]
    assert not result.nothing_relevant and result.chunks_used
    assert result.chunks_used[0].fused_score > 0 and len(result.chunks_used) <= 20


async def test_a_conversation_goes_through_the_session_store(
    redis_server: RedisServer, prefix: str
) -> None:
    sessions: Any = RedisSessionStore(redis_server.url, prefix=prefix)
    chunks = load_demo_corpus()
    embedder = HashingEmbedder(dim=64)
    try:
        for store in (MemorySessionStore(), sessions):
            async with AsyncContextEngine(stores=Stores(sessions=store)) as engine:
                await engine.index(chunks, embed_fn=embedder)
                await engine.run("What is BM25?", session_id="s")
                assert await engine.record_answer("s", "a ranking function")
                second = await engine.run("and who uses it?", session_id="s")
                assert "a ranking function" in second.query_analysis.original_query
                turns = await engine.turns("s")
                assert [(t.query, t.answer) for t in turns] == [
                    ("What is BM25?", "a ranking function"),
                    ("and who uses it?", ""),
                ]
                assert not await engine.record_answer("nobody", "x")
    finally:
        await sessions.aclose()


async def test_the_cache_is_shared_and_keyed_by_corpus_version(
    postgres: PostgresServer, redis_server: RedisServer, prefix: str
) -> None:
    chunks = load_demo_corpus()
    embedder = HashingEmbedder(dim=64)
    index = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    cache: Any = RedisCacheStore(redis_server.url, prefix=prefix)
    learning: Any = RedisLearningStore(redis_server.url, prefix=prefix)
    stores = Stores(index=index, cache=cache, learning=learning, embedder=embedder)
    try:
        await index.add(chunks[:-1], embedder.embed_batch([c.text for c in chunks[:-1]]))
        async with (
            AsyncContextEngine(stores=stores) as one,
            AsyncContextEngine(stores=stores) as two,
        ):
            first = await one.run("What is BM25?", record_turn=False)
            again = await two.run("What is BM25?", record_turn=False)
            assert not first.metadata.get("from_cache")
            assert again.metadata.get("from_cache") and again.context == first.context
            await two.add(chunks[-1:])
            after = await one.run("What is BM25?", record_turn=False)
            assert not after.metadata.get("from_cache")
            samples, total = await learning.window()
            assert total == 2 and len(samples) == 2  # the two computed runs, from both engines
    finally:
        for store in (index, cache, learning):
            await store.aclose()

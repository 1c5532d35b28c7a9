"""The corpus version is polled (not read per request), and updates are seen within a second."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.chunks import Chunk

from zerda_async import AsyncContextEngine
from zerda_async.apps import load_demo_corpus
from zerda_async.embedders import HashingEmbedder
from zerda_async.stores import (
    VERSION_POLL_SECONDS,
    MemoryCacheStore,
    MemoryIndexStore,
    PostgresIndexStore,
    Stores,
    VersionClock,
)

from .servers import PostgresServer

pytestmark = pytest.mark.anyio


async def _index_store(chunks: list[Any]) -> MemoryIndexStore:
    store = MemoryIndexStore()
    await store.add(chunks, HashingEmbedder(dim=64).embed_batch([c.text for c in chunks]))
    return store


async def test_cached_requests_read_the_version_once_per_poll_not_per_request() -> None:
    index = await _index_store(load_demo_corpus())
    polled = Stores(index=index, cache=MemoryCacheStore(), version_poll=60.0)
    per_request = Stores(index=index, cache=MemoryCacheStore(), version_poll=0.0)
    for stores in (polled, per_request):
        async with AsyncContextEngine(stores=stores) as engine:
            for _ in range(20):
                await engine.run("What is BM25?", record_turn=False)
    # Polled: the first request's read, and the fresh read its miss makes; nineteen hits
    # read nothing.  Without polling every request reads (and the miss once more).
    assert polled.clock.reads == 2
    assert per_request.clock.reads == 21


async def test_concurrent_requests_share_one_read() -> None:
    class Slow:
        async def version(self) -> int:
            await anyio.sleep(0.05)
            return 3

    clock = VersionClock(poll=60.0)
    found: list[int] = []

    async def one() -> None:
        found.append(await clock.current(Slow()))

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(one)
    assert found == [3] * 10 and clock.reads == 1
    clock.forget()
    assert await clock.current(Slow()) == 3 and clock.reads == 2


def test_a_negative_poll_is_refused() -> None:
    with pytest.raises(ValueError, match="version poll"):
        Stores(version_poll=-1.0)


async def test_an_update_through_one_replica_is_seen_by_the_other_within_a_second(
    postgres: PostgresServer, prefix: str
) -> None:
    chunks = load_demo_corpus()
    embedder = HashingEmbedder(dim=64)
    index = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    cache = MemoryCacheStore()  # shared, as Redis is between replicas
    query = "zebrafish regenerate heart muscle"
    new = Chunk("zebra", "Zebrafish regenerate heart muscle after injury within weeks.")
    try:
        await index.add(chunks, embedder.embed_batch([c.text for c in chunks]))
        # Two replicas: each its own Stores record (its own version clock), same stores.
        a = Stores(index=index, cache=cache, embedder=embedder)
        b = Stores(index=index, cache=cache, embedder=embedder)
        async with AsyncContextEngine(stores=a) as one, AsyncContextEngine(stores=b) as two:
            before = [await e.run(query, record_turn=False) for e in (one, two)]
            await one.add([new])
            mine = await one.run(query, record_turn=False)  # the writer sees it at once
            await anyio.sleep(2 * VERSION_POLL_SECONDS)
            theirs = await two.run(query, record_turn=False)
    finally:
        await index.aclose()
    assert all("Zebrafish" not in r.context for r in before)
    assert "Zebrafish" in mine.context and theirs.context == mine.context

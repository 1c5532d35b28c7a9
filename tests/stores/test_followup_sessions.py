"""``history_enrichment = "refers_back"`` over a shared session store (two replicas).

The replicas read a session's history from the store (``_enrich_async``): a
question that refers back is enriched with the turn answered on the other
replica, a question on another subject is a plain query (shared through the
cache, the store not even read for its history), as in one process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import pytest

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import DemoChunk, load_demo_corpus
from zerda_async.stores import (
    MemoryCacheStore,
    MemorySessionStore,
    StoredTurn,
    Stores,
)

from .shared_stores import server_stores

CORPUS = [
    *load_demo_corpus(),
    DemoChunk(
        "velmora-001",
        "Velmora is a small bakery chain founded in 1998 by Ines Carvalho, a pastry cook "
        "from Porto, who opened its first shop in Lisbon.",
        {"source": "company-notes", "lang": "en"},
    ),
    DemoChunk(
        "saffron-001",
        "Saffron bread is baked from an enriched dough coloured with saffron steeped in "
        "warm milk, shaped into buns and glazed with egg before baking.",
        {"source": "baking-notes", "lang": "en"},
    ),
]
ANSWER = "Velmora was founded by Ines Carvalho in 1998."


class CountingSessions(MemorySessionStore):
    """A memory session store that counts the history reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def turns(self, session_id: str) -> list[StoredTurn]:
        self.reads += 1
        return await super().turns(session_id)


@asynccontextmanager
async def two_replicas(kind: str, url: str | None, prefix: str) -> AsyncIterator[list[Any]]:
    """Two engines (recommended, keyword only) sharing a session and a cache store."""
    opened: list[Any] = []
    if kind == "memory":
        shared = Stores(sessions=CountingSessions(), cache=MemoryCacheStore())
        stores = [shared, shared]
    else:
        assert url is not None
        stores = await server_stores(kind, url, prefix, opened)
    try:
        async with AsyncExitStack() as stack:
            engines = []
            for replica_stores in stores:
                config = ContextEngineConfig.recommended()
                config.retriever.use_vector = False
                config.enable_adaptive = False
                engine = AsyncContextEngine(config, stores=replica_stores)
                engines.append(await stack.enter_async_context(engine))
                await engine.index(CORPUS)
            yield engines
    finally:
        for store in opened:
            await store.aclose()


@pytest.mark.parametrize("kind", ["memory", "redis", "postgresql"])
def test_refers_back_over_a_shared_session_store(
    kind: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    url = None
    if kind == "redis":
        url = str(request.getfixturevalue("redis_server").url)
    elif kind == "postgresql":
        url = str(request.getfixturevalue("postgres").url)

    async def main() -> None:
        async with two_replicas(kind, url, prefix) as (one, two):
            await one.run("Who founded Velmora?", session_id="s")
            assert await two.record_answer("s", ANSWER)
            reads = getattr(one.stores.sessions, "reads", None) if kind == "memory" else None
            # Another subject, on the other replica: not enriched, a plain query.
            switch = await two.run("How is saffron bread baked?", session_id="s")
            assert switch.query_analysis.original_query == "How is saffron bread baked?"
            assert switch.chunks_used[0].doc_id == "saffron-001"
            if reads is not None:
                assert one.stores.sessions.reads == reads, "history read for a plain query"
            shared = await one.run("How is saffron bread baked?", session_id="t")
            assert shared.metadata.get("from_cache") and shared.context == switch.context
            # A follow-up: enriched with the turn answered on the other replica.
            follow = await one.run("When did she open the first shop?", session_id="s")
            assert ANSWER in follow.query_analysis.original_query
            assert follow.chunks_used[0].doc_id == "velmora-001"
            private = await two.run("When did she open the first shop?", session_id="t")
            assert not private.metadata.get("from_cache")
            assert private.query_analysis.original_query == "When did she open the first shop?"
            turns = await two.turns("s")
            assert [t.answer for t in turns] == [ANSWER, "", ""]

    anyio.run(main, backend="asyncio")

"""Every index store returns the in-memory index's evidence: coverage, query weights, filters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from zerda_async.core.retrieval import Hit
from zerda_async.stores import MemoryIndexStore, PostgresIndexStore

from .corpus import demo_docs, embed, synthetic_docs
from .servers import PostgresServer
from .test_postgres_index import QUERIES

pytestmark = pytest.mark.anyio


def _evidence(hits: list[Hit]) -> list[tuple[str, float, float]]:
    return [(h.chunk.doc_id, h.score, h.coverage) for h in hits]


@pytest.fixture
async def stores(postgres: PostgresServer, prefix: str) -> AsyncIterator[list[Any]]:
    """The memory store, PostgreSQL exact and its local copy over the demo corpus."""
    docs = demo_docs()[:40] + synthetic_docs(40)
    vectors = embed(docs, 32)
    memory = MemoryIndexStore()
    await memory.add(docs, vectors)
    exact = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await exact.add(docs, vectors)
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        yield [memory, exact, local]
    finally:
        await exact.aclose()
        await local.aclose()


async def test_keyword_hits_carry_the_memory_coverage(stores: list[Any]) -> None:
    memory, *others = stores
    for query in [*QUERIES, "alpha nile zzz", "قهوة نخيل"]:
        expected = _evidence(await memory.keyword_search(query, 30))
        assert all(0 <= share <= 1 for _, _, share in expected)
        for store in others:
            assert _evidence(await store.keyword_search(query, 30)) == expected, query


async def test_query_weights_are_the_memory_ones(stores: list[Any]) -> None:
    memory, *others = stores
    for query in [*QUERIES, "", "zzz alpha alpha"]:
        expected = await memory.query_weights(query)
        for store in others:
            assert await store.query_weights(query) == expected, query


async def test_metadata_search_applies_the_filters_before_the_cut(stores: list[Any]) -> None:
    memory, *others = stores
    pairs = {"lang": "ar", "n": 1}
    for filters in (None, {"year": {"$gte": 2020}}, {"lang": "en"}):
        expected = await memory.metadata_search(pairs, 5, filters)
        unfiltered = await memory.metadata_search(pairs, 5)
        if filters:
            # Filtering first still fills the k places (filtering after the cut would not).
            assert len(expected) == 5 and expected != unfiltered
        for store in others:
            got = await store.metadata_search(pairs, 5, filters)
            assert _evidence(got) == _evidence(expected), filters

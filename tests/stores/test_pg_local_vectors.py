"""``search="local"``: exact cosine over a copy of the vectors, kept at the corpus version."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
import pytest

from zerda_async.stores import Hit, MemoryIndexStore, PostgresIndexStore

from .corpus import Doc, demo_docs, embed
from .servers import PostgresServer

pytestmark = pytest.mark.anyio


def _same(left: list[Hit], right: list[Hit]) -> None:
    """Same chunks, order and cosines (positions differ: the memory index compacts)."""
    assert [(h.chunk.doc_id, h.chunk.text, h.score) for h in left] == [
        (h.chunk.doc_id, h.chunk.text, h.score) for h in right
    ]


async def _compare(memory: MemoryIndexStore, local: PostgresIndexStore, dim: int) -> None:
    rng = np.random.default_rng(dim)
    for query in [*rng.normal(size=(4, dim)), np.zeros(dim)]:
        for k, filters in [(1, None), (10, None), (500, None), (5, {"lang": "ar"})]:
            _same(
                await local.vector_search(query, k, filters),
                await memory.vector_search(query, k, filters),
            )


async def test_a_local_copy_follows_every_write_of_another_replica(
    postgres: PostgresServer, prefix: str
) -> None:
    """Writes through one store object; the other's local copy catches up at its next search."""
    docs = demo_docs()
    memory = MemoryIndexStore()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await memory.add(docs[:30], embed(docs[:30]))
    await writer.add(docs[:30], embed(docs[:30]))
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        await _compare(memory, local, 64)
        steps: list[tuple[str, Any]] = [
            ("add", docs[30:]),
            ("remove", [d.doc_id for d in docs[3:6]]),  # masked out of the copy
            ("replace", docs[10:14]),
            ("remove", [d.doc_id for d in docs[14:40]]),  # past a quarter: compacted
            ("add", docs[3:6]),
        ]
        for kind, payload in steps:
            if kind == "remove":
                await memory.remove(payload)
                await writer.remove(payload)
            else:
                vectors = embed(payload)
                await getattr(memory, kind)(payload, vectors)
                await getattr(writer, kind)(payload, vectors)
            await _compare(memory, local, 64)
            # Removed chunks leave the copy (they would only be skipped when looked up).
            assert local.local_rows == await writer.count()
        # Everything removed, then new chunks: the copy starts over.
        every = list(dict.fromkeys(d.doc_id for d in docs))
        await memory.remove(every)
        await writer.remove(every)
        assert await local.vector_search(np.ones(64), 5) == []
        assert local.local_rows == 0
        fresh = [Doc(f"n{i}", f"new chunk {i}", {"lang": "en"}) for i in range(12)]
        await memory.add(fresh, embed(fresh))
        await writer.add(fresh, embed(fresh))
        await _compare(memory, local, 64)
    finally:
        await local.aclose()
        await writer.aclose()


async def test_a_local_copy_opens_on_an_empty_store_and_on_one_without_vectors(
    postgres: PostgresServer, prefix: str
) -> None:
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        assert await local.vector_search(np.ones(8), 3) == []
        docs = [Doc(f"k{i}", f"keyword only {i}") for i in range(5)]
        await local.add(docs)
        assert await local.vector_search(np.ones(8), 3) == []
        assert [h.chunk.doc_id for h in await local.keyword_search("keyword", 2)] == ["k0", "k1"]
    finally:
        await local.aclose()


async def test_a_filtered_search_that_finds_nothing_still_sees_new_chunks(
    postgres: PostgresServer, prefix: str
) -> None:
    """No row read tells the version, so the search asks for it before answering."""
    docs = demo_docs()[:20]
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await writer.add(docs, embed(docs))
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        query = embed([Doc("q", "a new kind of chunk")])[0]
        assert await local.vector_search(query, 3, {"lang": "xx"}) == []
        new = [Doc("x1", "a new kind of chunk", {"lang": "xx"})]
        await writer.add(new, embed(new))
        found = await local.vector_search(query, 3, {"lang": "xx"})
        assert [h.chunk.doc_id for h in found] == ["x1"]
    finally:
        await local.aclose()
        await writer.aclose()


async def test_a_query_of_another_dimension_is_refused_naming_both(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = demo_docs()[:5]
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        await local.add(docs, embed(docs))
        with pytest.raises(ValueError, match=r"query vector dimension 8 does not match .*\(64\)"):
            await local.vector_search(np.ones(8), 3)
    finally:
        await local.aclose()


async def test_a_copy_behind_the_removal_log_loads_everything_again(
    postgres: PostgresServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log keeps the last versions only; a copy older than that reloads, still exact."""
    from zerda_async.stores import _pg_local_vectors, _pg_writes

    for module in (_pg_writes, _pg_local_vectors):
        monkeypatch.setattr(module, "REMOVED_KEPT_VERSIONS", 2)
    docs = demo_docs()
    memory = MemoryIndexStore()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await memory.add(docs, embed(docs))
    await writer.add(docs, embed(docs))
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        for i in range(0, 10, 2):  # five removals while the copy stays at its version
            gone = [docs[i].doc_id, docs[i + 1].doc_id]
            await memory.remove(gone)
            await writer.remove(gone)
        async with await psycopg.AsyncConnection.connect(postgres.url) as conn:
            cur = await conn.execute(f"SELECT DISTINCT version FROM {prefix}removed")
            kept = sorted(int(r[0]) for r in await cur.fetchall())
        assert kept == [await writer.version() - 1, await writer.version()]
        await _compare(memory, local, 64)
        assert local.local_rows == await writer.count()
    finally:
        await local.aclose()
        await writer.aclose()

"""``search="local"``: every search over a copy of the whole index, kept at the corpus version."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import psycopg
import pytest

from zerda_async.stores import MemoryIndexStore, PostgresIndexStore

from .corpus import Doc, demo_docs, embed, ranked, synthetic_docs
from .servers import PostgresServer

pytestmark = pytest.mark.anyio

_FILTERS: list[dict[str, Any] | None] = [None, {"lang": "ar"}, {"year": {"$gte": 2019}}]


async def _compare(memory: MemoryIndexStore, local: PostgresIndexStore, dim: int) -> None:
    """Every kind of search gives the memory store's chunks, order and scores."""
    rng = np.random.default_rng(dim)
    for query in [*rng.normal(size=(3, dim)), np.zeros(dim)]:
        for k in (1, 10, 500):
            for filters in _FILTERS:
                assert ranked(await local.vector_search(query, k, filters)) == ranked(
                    await memory.vector_search(query, k, filters)
                )
    for text in ["alpha nile river", "قهوة نخيل", "date bm25 gamma", "nothing matches"]:
        for filters in _FILTERS:
            assert ranked(await local.keyword_search(text, 7, filters)) == ranked(
                await memory.keyword_search(text, 7, filters)
            )
    metadata: list[dict[str, Any]] = [
        {"lang": "en"},
        {"lang": "ar", "n": 1},
        {"year": 2020, "n": True},
    ]
    for pairs in metadata:
        assert ranked(await local.metadata_search(pairs, 9)) == ranked(
            await memory.metadata_search(pairs, 9)
        )


async def _same_positions(writer: PostgresIndexStore, local: PostgresIndexStore) -> None:
    """The copy's hits name the store's positions, as the exact searches do."""
    for text in ["alpha nile river", "قهوة نخيل"]:
        assert [h.position for h in await local.keyword_search(text, 9)] == [
            h.position for h in await writer.keyword_search(text, 9)
        ]
    query = np.random.default_rng(3).normal(size=64)
    assert [h.position for h in await local.vector_search(query, 9)] == [
        h.position for h in await writer.vector_search(query, 9)
    ]


@pytest.mark.parametrize("placement", ["inline", "threads"])
@pytest.mark.parametrize("checked", ["after each write", "after every second write"])
async def test_a_local_copy_follows_every_write_of_another_replica(
    postgres: PostgresServer, prefix: str, placement: str, checked: str
) -> None:
    """Writes through one store object; the other's copy catches up at its next check,
    over one version or several (adds and removals in between)."""
    from zerda_async.runtime import OffloadPolicy

    docs = synthetic_docs(80)
    memory = MemoryIndexStore()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await memory.add(docs[:30], embed(docs[:30]))
    await writer.add(docs[:30], embed(docs[:30]))
    local = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, search="local", local_poll=3600
    )
    assert local._local is not None
    for kind in ("vector", "keyword", "metadata"):  # tiny corpora would always run inline
        policy = local._placements[kind] = OffloadPolicy(None, 0)
        policy.forced = placement == "threads"
    every = 1 if checked == "after each write" else 2
    try:
        await _compare(memory, local, 64)
        steps: list[tuple[str, Any]] = [
            ("add", docs[30:]),
            ("remove", ["d3", "d4"]),  # tombstones in the copy
            ("replace", docs[10:14]),
            ("remove", [f"d{i}" for i in range(14, 30)]),  # past a quarter: compacted
            ("add", docs[3:5]),
            ("remove", ["d31"]),
        ]
        for i, (kind, payload) in enumerate(steps, 1):
            if kind == "remove":
                await memory.remove(payload)
                await writer.remove(payload)
            else:
                vectors = embed(payload)
                await getattr(memory, kind)(payload, vectors)
                await getattr(writer, kind)(payload, vectors)
            if i % every == 0:
                local._local.invalidate()  # as a poll would: check at the next search
                await _compare(memory, local, 64)
                await _same_positions(writer, local)
                assert local.local_chunks == await writer.count()
        # Everything removed, then chunks of another dimension: the copy starts over.
        every_id = list(dict.fromkeys(d.doc_id for d in docs))
        await memory.remove(every_id)
        await writer.remove(every_id)
        local._local.invalidate()
        assert await local.vector_search(np.ones(64), 5) == []
        assert local.local_chunks == 0
        fresh = [Doc(f"n{i}", f"new chunk {i} nile", {"lang": "en"}) for i in range(12)]
        await memory.add(fresh, embed(fresh, 16))
        await writer.add(fresh, embed(fresh, 16))
        local._local.invalidate()
        await _compare(memory, local, 16)
    finally:
        await local.aclose()
        await writer.aclose()


async def test_searches_read_nothing_between_checks_and_own_writes_are_seen_at_once(
    postgres: PostgresServer, prefix: str
) -> None:
    """Between polls the copy answers alone (version() included); its own writes catch up."""
    docs = demo_docs()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await writer.add(docs[:20], embed(docs[:20]))
    local = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, search="local", local_poll=3600
    )
    try:
        assert local._local is not None
        checks, seen = local._local.checks, await local.version()
        new = [Doc("x1", "zebra zebra zebra")]
        await writer.add(new, embed(new))
        for _ in range(5):
            assert await local.keyword_search("zebra", 3) == []  # the copy as it was
        assert await local.version() == seen  # the version the copy searches
        assert local._local.checks == checks
        own = [Doc("x2", "okapi okapi")]
        await local.add(own, embed(own))  # read-your-writes, whatever the poll
        assert [h.chunk.doc_id for h in await local.keyword_search("okapi", 3)] == ["x2"]
        assert [h.chunk.doc_id for h in await local.keyword_search("zebra", 3)] == ["x1"]
        assert await local.version() == await writer.version()
        assert local.local_chunks == 22
    finally:
        await local.aclose()
        await writer.aclose()


async def test_another_replicas_write_is_seen_within_the_poll(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = demo_docs()[:10]
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await writer.add(docs, embed(docs))
    local = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, search="local", local_poll=0.2
    )
    try:
        new = [Doc("x1", "zebra zebra zebra")]
        written = await writer.add(new, embed(new))
        with anyio.fail_after(5):
            while not await local.keyword_search("zebra", 3):
                await anyio.sleep(0.05)
        assert await local.version() == written
    finally:
        await local.aclose()
        await writer.aclose()


async def test_the_copy_tokenises_with_the_analyser_the_store_records(
    postgres: PostgresServer, prefix: str
) -> None:
    """A store object given another analyser still searches the copy as the store was built."""
    docs = demo_docs()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix, analyzer="multilingual")
    await writer.add(docs, embed(docs))
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        assert local.analyzer == "documented"
        for query in ["القهوة العربية", "coffees and rivers", "Dates of the palms"]:
            assert ranked(await local.keyword_search(query, 8)) == ranked(
                await writer.keyword_search(query, 8)
            )
    finally:
        await local.aclose()
        await writer.aclose()


async def test_a_local_copy_opens_on_an_empty_store_and_on_one_without_vectors(
    postgres: PostgresServer, prefix: str
) -> None:
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local")
    try:
        assert await local.vector_search(np.ones(8), 3) == []
        assert await local.keyword_search("keyword", 3) == []
        docs = [Doc(f"k{i}", f"keyword only {i}") for i in range(5)]
        await local.add(docs)
        assert await local.vector_search(np.ones(8), 3) == []
        assert [h.chunk.doc_id for h in await local.keyword_search("keyword", 2)] == ["k0", "k1"]
    finally:
        await local.aclose()


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
    from zerda_async.stores import _pg_local_copy, _pg_writes

    for module in (_pg_writes, _pg_local_copy):
        monkeypatch.setattr(module, "REMOVED_KEPT_VERSIONS", 2)
    docs = synthetic_docs(60)
    memory = MemoryIndexStore()
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await memory.add(docs, embed(docs))
    await writer.add(docs, embed(docs))
    local = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="local", local_poll=0)
    try:
        for i in range(0, 10, 2):  # five removals while the copy stays at its version
            gone = [f"d{i}", f"d{i + 1}"]
            await memory.remove(gone)
            await writer.remove(gone)
        async with await psycopg.AsyncConnection.connect(postgres.url) as conn:
            cur = await conn.execute(f"SELECT DISTINCT version FROM {prefix}removed")
            kept = sorted(int(r[0]) for r in await cur.fetchall())
        assert kept == [await writer.version() - 1, await writer.version()]
        assert await local.version() == await writer.version()
        await _compare(memory, local, 64)
        assert local.local_chunks == await writer.count()
    finally:
        await local.aclose()
        await writer.aclose()


async def test_a_write_during_a_check_in_flight_is_still_seen_by_the_next_search(
    postgres: PostgresServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check read the version before the write committed: it must not count as fresh."""
    from zerda_async.stores._pg_local_copy import Copy, LocalCopy

    docs = demo_docs()[:10]
    local = await PostgresIndexStore.open(
        postgres.url, prefix=prefix, search="local", local_poll=3600
    )
    try:
        await local.add(docs, embed(docs))
        read, release = anyio.Event(), anyio.Event()
        original = LocalCopy._caught_up

        async def paused(self: LocalCopy, pg: Any, old: Copy | None) -> Copy:
            copy = await original(self, pg, old)  # the version as it was
            read.set()
            await release.wait()
            return copy

        monkeypatch.setattr(LocalCopy, "_caught_up", paused)
        async with anyio.create_task_group() as tg:
            tg.start_soon(local.keyword_search, "zebra", 3)  # makes the check (after the add)
            await read.wait()
            new = [Doc("x1", "zebra zebra zebra")]
            await local.add(new, embed(new))
            release.set()
        monkeypatch.setattr(LocalCopy, "_caught_up", original)
        assert [h.chunk.doc_id for h in await local.keyword_search("zebra", 3)] == ["x1"]
    finally:
        await local.aclose()

"""The PostgreSQL store's posting blocks: bounded ascending runs, kept so by every write."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

import psycopg
import pytest

from zerda_async.core.index.analysis import DOCUMENTED, analyzer_for
from zerda_async.stores import MemoryIndexStore, PostgresIndexStore, _pg_blocks
from zerda_async.stores._pg_blocks import unpack
from zerda_async.stores._pg_sql import INDEX_SCHEMA

from .corpus import Doc, ranked
from .servers import PostgresServer

pytestmark = pytest.mark.anyio

_WORDS = ["river", "the", "of", "nile", "delta", "palm", "date", "coffee", "sand", "oasis"]


def _docs(n: int, seed: int, start: int = 0) -> list[Doc]:
    """Chunks over a small vocabulary, so every term has long posting lists."""
    rng = random.Random(seed)
    docs = []
    for i in range(start, start + n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 7))]
        docs.append(Doc(f"d{i}", " ".join(words), {"n": i % 5}))
    return docs


async def _check_blocks(url: str, prefix: str, block: int) -> int:
    """Assert the layout's invariants against the chunk rows; returns the number of blocks."""
    p = prefix
    tokenize = analyzer_for(DOCUMENTED).tokenize
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(f"SELECT pos, text FROM {p}chunks")
        expected: dict[str, dict[int, int]] = {}
        for pos, text in await cur.fetchall():
            for term, tf in Counter(tokenize(text)).items():
                expected.setdefault(term, {})[int(pos)] = tf
        cur = await conn.execute(
            f"SELECT t.term, t.df, b.lo, b.hi, b.n, b.pos, b.tf, b.len FROM {p}blocks b"
            f" JOIN {p}terms t ON t.id = b.term_id ORDER BY t.term, b.lo",
            binary=True,
        )
        rows = await cur.fetchall()
    held: dict[str, dict[int, int]] = {}
    last_hi: dict[str, int] = {}
    for term, df, lo, hi, n, *packed in rows:
        pos, freqs, _ = unpack([packed])
        assert 0 < n == pos.shape[0] <= block
        assert (int(pos[0]), int(pos[-1])) == (lo, hi)
        assert (pos[1:] > pos[:-1]).all()
        assert lo > last_hi.get(term, -1)  # the runs of a term are disjoint and ascending
        last_hi[term] = hi
        held.setdefault(term, {}).update(zip(pos.tolist(), freqs.tolist(), strict=True))
        assert df == len(expected[term])
    assert held == expected
    return len(rows)


async def test_writes_keep_blocks_bounded_ascending_and_scores_exact(
    postgres: PostgresServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small blocks, so appends fill and spill, and removals rewrite runs mid-list."""
    monkeypatch.setattr(_pg_blocks, "BLOCK", 8)
    memory = MemoryIndexStore()
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    queries = ["river nile", "the of date palm", "coffee", "oasis sand delta the", "absent"]
    try:
        steps: list[tuple[str, list[Any]]] = [
            ("add", _docs(30, 1)),
            ("add", _docs(3, 2, start=30)),  # appended to the last runs
            ("add", _docs(40, 3, start=33)),
            ("remove", [f"d{i}" for i in (0, 5, 6, 7, 31, 50, 72)]),  # runs rewritten
            ("remove", [f"d{i}" for i in range(8, 30)]),  # whole runs dropped
            ("replace", _docs(10, 4, start=35)),
        ]
        for kind, payload in steps:
            if kind == "add":
                await memory.add(payload)
                await pg.add(payload)
            elif kind == "remove":
                await memory.remove(payload)
                await pg.remove(payload)
            else:
                await memory.replace(payload)
                await pg.replace(payload)
            assert await _check_blocks(postgres.url, prefix, 8) > len(_WORDS)
            for query in queries:
                for k in (1, 7, 100):
                    assert ranked(await pg.keyword_search(query, k)) == ranked(
                        await memory.keyword_search(query, k)
                    )
    finally:
        await pg.aclose()


async def test_a_selective_filter_takes_several_rounds_and_stays_exact(
    postgres: PostgresServer, prefix: str
) -> None:
    """Matching chunks far down the ranking: found in later rounds, in memory's order."""
    docs = _docs(600, 5)
    for i in (20, 300, 598):
        docs[i].metadata = {"rare": True}
    memory = MemoryIndexStore()
    await memory.add(docs)
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        await pg.add(docs)
        for query in ["river nile", "the", "coffee oasis sand"]:
            for k in (1, 2, 5):
                expected = await memory.keyword_search(query, k, {"rare": True})
                assert expected  # some rare chunk holds a query term
                assert ranked(await pg.keyword_search(query, k, {"rare": True})) == ranked(expected)
            assert await pg.keyword_search(query, 5, {"rare": False}) == []
    finally:
        await pg.aclose()


def test_the_migration_packs_runs_of_block_postings() -> None:
    """Schema step 6 writes SQL with the block size as a literal: it must be BLOCK."""
    step6 = " ".join(INDEX_SCHEMA[5])
    assert f"ORDER BY pos) - 1) / {_pg_blocks.BLOCK}" in step6


async def test_a_write_between_scoring_and_reading_rows_scores_again(
    postgres: PostgresServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows show a later version: the result is the new version's, not a mix."""
    from zerda_async.stores import _pg_keyword

    docs = _docs(200, 6)
    memory = MemoryIndexStore()
    await memory.add(docs)
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    writer = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    scored = _pg_keyword._scored
    calls: list[int] = []

    async def then_a_write(*args: Any) -> Any:
        found = await scored(*args)
        calls.append(1)
        if len(calls) == 1:  # the top chunk goes while this search holds its scores
            top = (await memory.keyword_search("river nile", 1))[0].chunk.doc_id
            await memory.remove([top])
            await writer.remove([top])
        return found

    try:
        await pg.add(docs)
        monkeypatch.setattr(_pg_keyword, "_scored", then_a_write)
        got = await pg.keyword_search("river nile", 10)
        assert len(calls) == 2
        assert ranked(got) == ranked(await memory.keyword_search("river nile", 10))
    finally:
        await writer.aclose()
        await pg.aclose()


async def test_concurrent_searches_over_a_small_weight_cache_stay_exact(
    postgres: PostgresServer, prefix: str
) -> None:
    """Searches in flight together while the cache keeps starting over (a tiny bound)."""
    docs = _docs(400, 7)
    memory = MemoryIndexStore()
    await memory.add(docs)
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix, weight_cache_postings=120)
    try:
        await pg.add(docs)
        rng = random.Random(3)
        queries = [" ".join(rng.sample(_WORDS, rng.randint(1, 4))) for _ in range(60)]
        expected = [ranked(await memory.keyword_search(q, 8)) for q in queries]
        for _ in range(3):
            found = await asyncio.gather(*(pg.keyword_search(q, 8) for q in queries))
            assert [ranked(hits) for hits in found] == expected
    finally:
        await pg.aclose()


async def test_the_migration_splits_long_posting_lists_into_blocks(
    postgres: PostgresServer, prefix: str
) -> None:
    """A step-5 store (a posting per row) whose common terms hold more than two blocks."""
    docs = _docs(14000, 8)
    memory = MemoryIndexStore()
    await memory.add(docs)
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    await pg.add(docs)
    await pg.aclose()
    p = prefix
    async with await psycopg.AsyncConnection.connect(postgres.url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT term_id, pos, tf, len FROM {p}blocks", binary=True)
        rows = [
            (int(term_id), int(pos), int(tf), int(length))
            for term_id, *packed in await cur.fetchall()
            for pos, tf, length in zip(*unpack([packed]), strict=True)
        ]
        async with conn.transaction():
            await conn.execute(
                f"CREATE TABLE {p}postings (term_id int NOT NULL, pos bigint NOT NULL,"
                f" tf int NOT NULL, length int NOT NULL)"
            )
            async with conn.cursor().copy(f"COPY {p}postings FROM STDIN") as copy:
                for row in rows:
                    await copy.write_row(row)
            await conn.execute(f"DROP TABLE {p}blocks")
            await conn.execute(f"DROP TABLE {p}removed")
            await conn.execute(f"UPDATE {p}schema_version SET version = 5")
    migrated = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        longest = Counter(r[0] for r in rows).most_common(1)[0][1]
        assert longest > 2 * _pg_blocks.BLOCK  # the runs really are split
        assert await _check_blocks(postgres.url, prefix, _pg_blocks.BLOCK) > len(_WORDS)
        for query in ["river nile", "the of date palm", "coffee"]:
            assert ranked(await migrated.keyword_search(query, 20)) == ranked(
                await memory.keyword_search(query, 20)
            )
    finally:
        await migrated.aclose()

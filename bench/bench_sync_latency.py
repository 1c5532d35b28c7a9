"""Sync facade latency: ``sync_api.ContextEngine.run()`` at 1,000 / 10,000 / 100,000 chunks.

Method
------
* Corpus: ``_common.make_corpus`` (seeded, 40–80 words per chunk, 70 % English /
  30 % Arabic, 24 sources); the smaller corpora are prefixes of the 100,000 one.
* Modes: keyword-only (``index()`` without ``embed_fn``: BM25 only), and with the
  deterministic feature-hashing embedder of ``_common.HashedEmbedder`` at 64
  dimensions (and 384 in the full run).  The embedder's per-token features are
  warmed before indexing, so index time is mostly the engine's own work; the
  embedder's own cost over the corpus is shown separately.
* Every engine is built with ``config.cache.enabled = False`` *and* every timed
  call uses a query it has not seen (``_common.make_queries``), so nothing is
  served from the cache.  Defaults otherwise (multi-turn on, adaptive on,
  ``top_k`` 20, template ``arabic``).
* Timing: ``time.perf_counter`` around each ``engine.run(query)``, one call at a
  time, after 3 warm-up queries; median and p90 (linear interpolation).  ``gc``
  stays enabled, a collection runs before each series.
* Comparison, measured in the same run: the *same engine* with an injected
  ``HybridRetriever`` whose vector and keyword retrievers are the straightforward
  per-chunk designs of ``_per_chunk.py`` (``PerChunkBM25``: a Python loop over every
  chunk per query with precomputed term counts; ``PerRowCosine``: a Python loop
  of one ``numpy.dot`` per stored row).  They compute the same scores, so the
  contexts are compared too ("identical" column).  Only retrieval differs
  between the two engines; the ratio is reference median / engine median.
* The issue's reference figures for the per-chunk design on this 2-core
  machine are printed alongside for orientation; the target is ≥ 10x faster
  than the per-chunk design at 100,000 chunks.

Run ``.venv/bin/python bench/bench_sync_latency.py`` (``--quick`` for a smoke run).
Outputs: a table on stdout, ``bench/out/sync_latency.png`` (log-log latency vs
corpus size) and ``bench/out/sync_latency.md``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (
    HashedEmbedder,
    Timer,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    label_plot,
    make_corpus,
    make_queries,
    pyplot,
    save_png,
    summarise,
    write_summary,
)
from _per_chunk import PerChunkBM25, PerRowCosine

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async.core.retrieval import HybridRetriever

# The issue's figures for the per-chunk design on this machine (ms, median).
ISSUE_REFERENCE = {
    ("keyword-only", 1_000): 0.9,
    ("keyword-only", 10_000): 3.8,
    ("keyword-only", 100_000): 88.0,
    ("64-dim", 1_000): 1.3,
    ("64-dim", 10_000): 6.0,
    ("64-dim", 100_000): 108.0,
}
TARGET_SPEEDUP = 10.0
WARMUP = 3


def _config() -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = False
    return config


def run_series(engine: ContextEngine, queries: list[str]) -> tuple[list[float], list[str]]:
    """Milliseconds of each ``engine.run(q)``, one call at a time, and the contexts."""
    times: list[float] = []
    contexts: list[str] = []
    for q in queries:
        t0 = time.perf_counter()
        result = engine.run(q)
        times.append((time.perf_counter() - t0) * 1000)
        contexts.append(result.context)
    return times, contexts


def measure(
    chunks: list[Any],
    dim: int | None,
    queries: list[str],
    n_engine: int,
    n_reference: int,
) -> dict[str, Any]:
    """One (corpus, mode) cell: engine and per-chunk reference, same query sequence."""
    warm, timed = queries[:WARMUP], queries[WARMUP : WARMUP + n_engine]
    texts = [c.text for c in chunks]
    row: dict[str, Any] = {}

    embedder = HashedEmbedder(dim) if dim else None
    if embedder is not None:
        embedder.matrix(texts)  # warm the token-feature memo (not timed)
        with Timer() as t_embed:
            embedder.matrix(texts)
        row["embed_s"] = t_embed.ms / 1000
    gc.collect()
    with Timer() as t_index:
        engine = ContextEngine(_config()).index(chunks, embed_fn=embedder)
    row["index_s"] = t_index.ms / 1000
    for q in warm:
        engine.run(q)
    gc.collect()
    times, engine_contexts = run_series(engine, timed)
    row["engine"] = summarise(times)
    del engine  # free the index before building the comparison
    gc.collect()

    with Timer() as t_ref_index:
        ref_vec = PerRowCosine(chunks, embedder) if embedder is not None else None
        ref_kw = PerChunkBM25(chunks)
        config = _config()
        hybrid = HybridRetriever(config, vector_retriever=ref_vec, keyword_retriever=ref_kw)
        reference = ContextEngine(config, retriever=hybrid)
        # Installs the (empty) source-quality map; the injected retriever is kept.
        reference.index(chunks[:1])
    row["ref_index_s"] = t_ref_index.ms / 1000
    for q in warm:
        reference.run(q)
    gc.collect()
    times, ref_contexts = run_series(reference, timed[:n_reference])
    row["reference"] = summarise(times)
    same = sum(a == b for a, b in zip(engine_contexts, ref_contexts, strict=False))
    row["identical"] = f"{same}/{len(ref_contexts)}"
    row["ratio"] = row["reference"][0] / row["engine"][0]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few queries")
    args = parser.parse_args()
    logging.getLogger("zerda_async").setLevel(logging.ERROR)  # adaptive advice logs

    if args.quick:
        sizes = [1_000, 10_000]
        modes: list[tuple[str, int | None]] = [("keyword-only", None), ("64-dim", 64)]
        counts = {1_000: (20, 5), 10_000: (20, 5)}
    else:
        sizes = [1_000, 10_000, 100_000]
        modes = [("keyword-only", None), ("64-dim", 64), ("384-dim", 384)]
        counts = {1_000: (200, 40), 10_000: (200, 30), 100_000: (100, 12)}

    machine = describe_machine()
    load_start = describe_load()
    print(f"machine: {machine}\n{load_start} at start")
    with Timer() as t_corpus:
        corpus = make_corpus(max(sizes))
    print(f"corpus: {max(sizes):,} chunks generated in {t_corpus.ms / 1000:.1f} s")
    queries = make_queries(WARMUP + max(c[0] for c in counts.values()))

    results: dict[tuple[str, int], dict[str, Any]] = {}
    for n in sizes:
        for mode, dim in modes:
            n_engine, n_ref = counts[n]
            row = measure(corpus[:n], dim, queries, n_engine, n_ref)
            results[(mode, n)] = row
            print(
                f"  {n:>7,} chunks {mode:<12}: engine {row['engine'][0]:.2f} ms, "
                f"per-chunk {row['reference'][0]:.2f} ms, x{row['ratio']:.1f}",
                flush=True,
            )

    headers = [
        "chunks",
        "mode",
        "index s",
        "embedder alone s",
        "engine median ms",
        "engine p90 ms",
        "per-chunk median ms",
        "per-chunk p90 ms",
        "speed-up",
        "issue per-chunk ms",
        "contexts identical",
    ]
    rows = []
    for n in sizes:
        for mode, _ in modes:
            r = results[(mode, n)]
            issue = ISSUE_REFERENCE.get((mode, n))
            rows.append(
                [
                    n,
                    mode,
                    r["index_s"],
                    r.get("embed_s", "-"),
                    r["engine"][0],
                    r["engine"][1],
                    r["reference"][0],
                    r["reference"][1],
                    f"{r['ratio']:.0f}x",
                    "-" if issue is None else issue,
                    r["identical"],
                ]
            )
    table = format_table(headers, rows)

    verdicts = []
    top = max(sizes)
    for mode, _ in modes:
        r = results[(mode, top)]
        issue = ISSUE_REFERENCE.get((mode, top))
        vs_issue = (
            "" if issue is None else f"; vs the issue's {issue} ms: {issue / r['engine'][0]:.0f}x"
        )
        ok = r["ratio"] >= TARGET_SPEEDUP
        verdicts.append(
            f"- {mode} at {top:,} chunks: {r['ratio']:.0f}x faster than the per-chunk design "
            f"measured in this run{vs_issue} -> target (defined at 100,000 chunks) >= "
            f"{TARGET_SPEEDUP:.0f}x "
            f"{'MET' if ok else 'MISSED'}"
        )

    method = (
        "sync_api.ContextEngine.run(), cache disabled and a distinct query per call, "
        f"{WARMUP} warm-up queries, median/p90 of one-at-a-time calls; comparison = same "
        "engine with per-chunk BM25 loop + per-row cosine loop retrievers injected, "
        "measured in the same run."
    )
    print()
    print(f"machine: {machine}")
    print(f"method:  {method}")
    print(table)
    print("\n".join(verdicts))

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    colours = {"keyword-only": "tab:blue", "64-dim": "tab:orange", "384-dim": "tab:green"}
    for mode, _ in modes:
        c = colours[mode]
        ax.plot(
            sizes,
            [results[(mode, n)]["engine"][0] for n in sizes],
            "o-",
            color=c,
            label=f"engine, {mode}",
        )
        ax.plot(
            sizes,
            [results[(mode, n)]["reference"][0] for n in sizes],
            "s--",
            color=c,
            alpha=0.7,
            label=f"per-chunk (this run), {mode}",
        )
        issue_pts = [(n, ISSUE_REFERENCE[(mode, n)]) for n in sizes if (mode, n) in ISSUE_REFERENCE]
        if issue_pts:
            ax.plot(
                *zip(*issue_pts, strict=True),
                "x:",
                color=c,
                alpha=0.5,
                label=f"per-chunk (issue), {mode}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    label_plot(
        fig,
        ax,
        machine,
        xlabel="corpus size (chunks)",
        ylabel="run() median latency (ms)",
        title="sync ContextEngine.run() latency vs corpus size",
    )
    png = save_png(fig, "sync_latency")

    summary = "\n".join(
        [
            "# Sync latency benchmark",
            "",
            f"- machine: {machine}",
            f"- load: {load_start} at start, {describe_load()} at end",
            f"- code: {describe_revision()}",
            f"- command: `{command_line()}`",
            f"- method: {method}",
            "",
            table,
            "",
            *verdicts,
            "",
            f"Plot: `{png.name}`",
            "",
        ]
    )
    md = write_summary("sync_latency", summary)
    print(f"\nwrote {png} and {md}")


if __name__ == "__main__":
    main()

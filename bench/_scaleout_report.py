"""The tables of ``bench_scaleout.py`` and its 10-million-chunk projection."""

from __future__ import annotations

import argparse
import math
import os
import statistics
from typing import Any

from _common import (
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    percentile,
)
from _scaleout_latency import DIM, HNSW_EF_CONSTRUCTION, HNSW_M, TARGET_RECALL, Figures, K

TARGET_RATIO, TARGET_SCALEUP = 3.0, 1.6
PROJECTED = 10_000_000


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


def report(fig: Figures, args: argparse.Namespace) -> str:
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

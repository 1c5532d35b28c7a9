"""Part (b) of ``bench_async.py``: throughput of ``run_many`` under concurrency with a 20 ms
embedder, against the sync facade running the same queries one by one.

The method is in ``bench_async.py``'s docstring.
"""

from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _async_setup import FAILURES, config
from _common import Timer, format_table, label_plot, pyplot, save_png
from _corpus import BenchChunk, make_queries
from _hashed_embedder import HashedEmbedder
from numpy.typing import NDArray

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine

EMBED_DELAY = 0.020
TARGET_SPEEDUP = 25.0


class SleepySyncEmbedder:
    """Plain embedder; sleeps ``delay`` per call once ``sleeping`` is switched on."""

    def __init__(self, base: HashedEmbedder, delay: float) -> None:
        self.base = base
        self.delay = delay
        self.sleeping = False
        self.calls = 0

    def __call__(self, text: Any) -> NDArray[np.float64]:
        if self.sleeping:
            self.calls += 1
            time.sleep(self.delay)
        return self.base.vector(text)


class SleepyAsyncBatchEmbedder:
    """Coroutine batch embedder: one ``anyio.sleep(delay)`` per call, whatever the batch size."""

    def __init__(self, base: HashedEmbedder, delay: float) -> None:
        self.base = base
        self.delay = delay
        self.calls = 0
        self.texts = 0

    async def __call__(self, texts: list[Any]) -> NDArray[np.float64]:
        self.calls += 1
        self.texts += len(texts)
        await anyio.sleep(self.delay)
        return self.base.matrix(texts)


async def part_b_size(
    chunks: list[BenchChunk], quick: bool, engine_kw: dict[str, Any]
) -> dict[str, Any]:
    n = len(chunks)
    queries = make_queries(256, seed=202)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in chunks])  # warm the token memo (not timed)
    levels = [1, 8, 64, 256]
    reps = dict.fromkeys(levels, 1) if quick else {1: 1, 8: 3, 64: 3, 256: 3}

    sleepy = SleepySyncEmbedder(base, EMBED_DELAY)
    sync_engine = ContextEngine(config()).index(chunks, embed_fn=sleepy)
    sleepy.sleeping = True
    gc.collect()
    cpu_start = time.process_time()
    with Timer() as t_sync:
        reference = [sync_engine.run(q).context for q in queries]
    sync_cpu = (time.process_time() - cpu_start) * 1000 / len(queries)
    sync_tput = len(queries) / (t_sync.ms / 1000)
    print(
        f"  (b) {n:,} chunks, sync facade: {len(queries)} queries in "
        f"{t_sync.ms / 1000:.2f} s ({sync_tput:.1f} q/s, {sleepy.calls} embedder calls)",
        flush=True,
    )

    results: dict[int, dict[str, Any]] = {}
    for c in levels:
        tputs: list[float] = []
        cpus: list[float] = []
        calls: list[int] = []
        identical = True
        for _ in range(reps[c]):
            emb = SleepyAsyncBatchEmbedder(base, EMBED_DELAY)
            kw = {"max_in_flight": max(64, c), **engine_kw}
            async with AsyncContextEngine(config(), **kw) as engine:
                await engine.index(chunks, batch_embed_fn=emb)
                index_calls, engine_index_calls = emb.calls, engine.embedder_calls
                gc.collect()
                cpu_start = time.process_time()
                with Timer() as t:
                    out = await engine.run_many(queries, concurrency=c)
                cpus.append((time.process_time() - cpu_start) * 1000 / len(queries))
                query_calls = emb.calls - index_calls
                if engine.embedder_calls - engine_index_calls != query_calls:
                    FAILURES.append(
                        f"(b) {n} c={c}: engine.embedder_calls disagrees "
                        "with the embedder's own count"
                    )
            differ = sum(r.context != ref for r, ref in zip(out, reference, strict=True))
            if differ:
                identical = False
                FAILURES.append(
                    f"(b) {n} chunks, c={c}: {differ} of {len(queries)} contexts "
                    "differ from the sync facade run one by one"
                )
            tputs.append(len(queries) / (t.ms / 1000))
            calls.append(query_calls)
        results[c] = {
            "tputs": tputs,
            "cpus": cpus,
            "calls": calls,
            "identical": identical,
            "index_calls": index_calls,
        }
        print(
            f"  (b) {n:,} chunks, async c={c:>3}: {statistics.median(tputs):.0f} q/s "
            f"(runs: {', '.join(f'{x:.0f}' for x in tputs)}), "
            f"{statistics.median(calls):.0f} query-time embedder calls",
            flush=True,
        )
    return {
        "levels": levels,
        "results": results,
        "sync": sync_tput,
        "sync_cpu": sync_cpu,
        "n": n,
        "sync_calls": sleepy.calls,
        "queries": len(queries),
    }


async def part_b(
    corpus: list[BenchChunk], quick: bool, engine_kw: dict[str, Any]
) -> tuple[str, list[str], list[dict[str, Any]]]:
    sizes = [1_000, 2_000] if quick else [1_000, 10_000]
    runs = [await part_b_size(corpus[:n], quick, engine_kw) for n in sizes]
    rows = []
    verdicts = []
    for d in runs:
        n, sync_tput, res = d["n"], d["sync"], d["results"]
        rows.append(
            [
                n,
                "sync facade, one by one",
                "1",
                f"{sync_tput:.1f}",
                "-",
                "1.0x",
                f"{d['sync_cpu']:.2f}",
                d["sync_calls"],
                f"{d['queries']}/{d['queries']}",
            ]
        )
        for c in d["levels"]:
            r = res[c]
            med = statistics.median(r["tputs"])
            spread = f"{min(r['tputs']):.0f}-{max(r['tputs']):.0f}" if len(r["tputs"]) > 1 else "-"
            rows.append(
                [
                    n,
                    f"async run_many (median of {len(r['tputs'])})",
                    str(c),
                    f"{med:.0f}",
                    spread,
                    f"{med / sync_tput:.1f}x",
                    f"{statistics.median(r['cpus']):.2f}",
                    f"{statistics.median(r['calls']):.0f}",
                    f"{d['queries']}/{d['queries']}" if r["identical"] else "DIFFER",
                ]
            )
        at64 = statistics.median(res[64]["tputs"]) / sync_tput
        best_c = max(d["levels"], key=lambda c: statistics.median(res[c]["tputs"]))
        best = statistics.median(res[best_c]["tputs"]) / sync_tput
        verdicts.append(
            f"- (b) {n:,} chunks, run_many(concurrency=64): {at64:.1f}x the sync throughput "
            f"-> target >= {TARGET_SPEEDUP:.0f}x {'MET' if at64 >= TARGET_SPEEDUP else 'MISSED'} "
            f"(highest: {best:.1f}x at concurrency {best_c})"
        )
    table = format_table(
        [
            "chunks",
            "runner",
            "concurrency",
            "throughput q/s",
            "range q/s",
            "vs sync",
            "CPU ms/query",
            "query-time embedder calls",
            "contexts identical",
        ],
        rows,
    )
    return table, verdicts, runs


def plot_b(runs: list[dict[str, Any]], machine: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    colours = ["tab:blue", "tab:orange", "tab:purple"]
    for data, colour in zip(runs, colours, strict=False):
        levels = data["levels"]
        res = data["results"]
        med = [statistics.median(res[c]["tputs"]) for c in levels]
        ax.plot(
            levels, med, "o-", color=colour, label=f"async run_many, {data['n']:,} chunks (median)"
        )
        for c in levels:
            ax.plot([c] * len(res[c]["tputs"]), res[c]["tputs"], ".", color=colour, alpha=0.4)
        ax.axhline(
            data["sync"],
            color=colour,
            ls="--",
            lw=1,
            label=f"sync facade one by one, {data['n']:,} chunks",
        )
        ax.axhline(
            data["sync"] * TARGET_SPEEDUP,
            color=colour,
            ls=":",
            lw=1,
            label=f"target {TARGET_SPEEDUP:.0f}x sync, {data['n']:,} chunks",
        )
    levels = runs[0]["levels"]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(levels, [str(c) for c in levels])
    label_plot(
        fig,
        ax,
        machine,
        xlabel="run_many concurrency",
        ylabel="throughput (queries/s)",
        title="256 distinct queries, embedder sleeps 20 ms per call",
    )
    return save_png(fig, "async_throughput")

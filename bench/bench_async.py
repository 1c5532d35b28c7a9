"""Async engine: pipeline overhead, concurrency throughput and event-loop stall.

Method
------
All parts use the seeded synthetic corpus and queries of ``_common`` (40–80-word
chunks, 70 % English / 30 % Arabic) and the deterministic feature-hashing
embedder ``_common.HashedEmbedder`` (64 dimensions unless stated).  Every timed
query is one the engine has not seen.  Timings use ``time.perf_counter``.

(a) Pipeline overhead -- single requests, one at a time.  A sync facade
    (``sync_api.ContextEngine``) and an ``AsyncContextEngine`` are built over the
    same chunks (cache disabled in both), then for each query the sync
    ``run()`` and the async ``await run()`` are timed back to back (interleaved,
    so machine noise hits both alike), after 5 warm-up queries.  Keyword-only
    and with the 64-dim embedder as a plain ``embed_fn``.  Reported: medians,
    p90 and async/sync of the medians.  Target: async/sync <= 1.5 at 10,000.

(b) Concurrency -- 256 distinct queries, over 1,000 and 10,000 chunks.  The
    async engine gets a coroutine *batch* embedder (``batch_embed_fn``) that
    sleeps 20 ms per call (a network embedder; also used to embed the corpus at
    index time) and runs them with ``run_many(queries, concurrency=c)`` for
    c = 1, 8, 64, 256 on a fresh engine each time (``max_in_flight =
    max(64, c)``, default configuration otherwise, so the cache is on but never
    hits); c = 8, 64, 256 are repeated 3 times and the median is reported.  The
    comparison is the sync facade running the same queries one by one with a
    plain embedder that sleeps 20 ms per query call (its index-time calls do
    not sleep: 10,000 sleeping calls would take 200 s and are not what is
    measured).  Throughput = 256 / wall time of the query phase; index time
    excluded.  CPU ms/query = process CPU time (``time.process_time``, all
    threads) over the query phase / 256: the cost other processes' load
    disturbs less than wall time (the sync facade's excludes its sleeps).
    Every run's contexts are compared with the sync facade's (same
    order): the script exits with status 1 and a clear message if any differs.
    Query-time embedder calls are counted in the embedder (and checked against
    ``engine.embedder_calls``).  Target: >= 25x the sync throughput.

(c) Event-loop stall -- a heartbeat task sleeps 10 ms in a loop and records how
    late each wake-up is, while 32 requests go through ``run_many`` over
    100,000 chunks with vectors (64-dim ``embed_fn``; 384-dim too in the full
    run).  "steady" runs follow a ``gc.collect()``; "first batch after index"
    does not, so the interpreter's delayed full garbage collection of the
    freshly indexed corpus may land in the window (collections and their
    duration are recorded with ``gc.callbacks``), and the cost of one full
    collection with the corpus and index alive is timed (plain, and after
    ``gc.freeze()``).  Comparison, same run: idle heartbeat, and the sync facade
    called from 32 concurrent tasks on the loop.  On asyncio and trio.
    Target: max lateness <= 50 ms.

Run ``.venv/bin/python bench/bench_async.py`` (``--quick`` for a smoke run;
``--parts b`` to run one part; ``--workers/--thread-limit`` to try runner
settings).  Outputs: tables on stdout, ``bench/out/async_throughput.png``,
``bench/out/async_stall.png`` and ``bench/out/async.md``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import numpy as np
from _common import (
    BenchChunk,
    HashedEmbedder,
    Timer,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    percentile,
    pyplot,
    save_png,
    summarise,
    write_summary,
)
from numpy.typing import NDArray

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async import AsyncContextEngine

EMBED_DELAY = 0.020
HEARTBEAT = 0.010
TARGET_OVERHEAD = 1.5
TARGET_SPEEDUP = 25.0
TARGET_STALL_MS = 50.0

FAILURES: list[str] = []


def config(cache: bool = True) -> ContextEngineConfig:
    cfg = ContextEngineConfig()
    cfg.cache.enabled = cache
    return cfg


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


# -- (a) pipeline overhead -------------------------------------------------------------------


async def part_a(
    corpus: list[BenchChunk], quick: bool, engine_kw: dict[str, Any]
) -> tuple[str, list[str], dict[str, Any]]:
    sizes = [1_000, 10_000]
    n_timed = 40 if quick else 300
    queries = make_queries(5 + n_timed, seed=101)
    warm, timed = queries[:5], queries[5:]
    rows = []
    verdicts = []
    data: dict[str, Any] = {}
    for n in sizes:
        chunks = corpus[:n]
        for mode, dim in (("keyword-only", None), ("64-dim embed_fn", 64)):
            embedder = HashedEmbedder(dim) if dim else None
            if embedder is not None:
                embedder.matrix([c.text for c in chunks])  # warm the token memo
            sync_engine = ContextEngine(config(cache=False)).index(chunks, embed_fn=embedder)
            async with AsyncContextEngine(config(cache=False), **engine_kw) as engine:
                await engine.index(chunks, embed_fn=embedder)
                for q in warm:
                    sync_engine.run(q)
                    await engine.run(q)
                gc.collect()
                t_sync: list[float] = []
                t_async: list[float] = []
                same = 0
                for q in timed:
                    t0 = time.perf_counter()
                    r_sync = sync_engine.run(q)
                    t1 = time.perf_counter()
                    r_async = await engine.run(q)
                    t2 = time.perf_counter()
                    t_sync.append((t1 - t0) * 1000)
                    t_async.append((t2 - t1) * 1000)
                    same += r_sync.context == r_async.context
            if same != len(timed):
                FAILURES.append(f"(a) {n} {mode}: {len(timed) - same} contexts differ")
            s_med, s_p90 = summarise(t_sync)
            a_med, a_p90 = summarise(t_async)
            ratio = a_med / s_med
            data[f"{n}/{mode}"] = ratio
            rows.append(
                [n, mode, s_med, s_p90, a_med, a_p90, f"{ratio:.2f}", f"{same}/{len(timed)}"]
            )
            if n == 10_000:
                verdicts.append(
                    f"- (a) {mode} at 10,000 chunks: async/sync = {ratio:.2f} -> target <= "
                    f"{TARGET_OVERHEAD} {'MET' if ratio <= TARGET_OVERHEAD else 'MISSED'}"
                )
            print(
                f"  (a) {n:>6,} {mode:<16} sync {s_med:.3f} ms, async {a_med:.3f} ms, "
                f"ratio {ratio:.2f}",
                flush=True,
            )
    table = format_table(
        [
            "chunks",
            "mode",
            "sync median ms",
            "sync p90 ms",
            "async median ms",
            "async p90 ms",
            "async/sync",
            "contexts identical",
        ],
        rows,
    )
    return table, verdicts, data


# -- (b) concurrency ---------------------------------------------------------------------------


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


# -- (c) event-loop stall ------------------------------------------------------------------------


class GcMonitor:
    """Records (generation, ms) of every garbage collection while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[tuple[int, float]] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif self.active:
            self.events.append((info["generation"], (time.perf_counter() - self._start) * 1000))


async def heartbeat_during(workload: Any, gcmon: GcMonitor) -> tuple[list[float], float]:
    """Run ``workload()`` while a 10 ms heartbeat records its lateness (ms)."""
    lateness: list[float] = []
    stop = anyio.Event()
    recording = False

    async def beat() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            await anyio.sleep(HEARTBEAT)
            if recording:
                lateness.append((time.perf_counter() - t0 - HEARTBEAT) * 1000)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        await anyio.sleep(3 * HEARTBEAT)
        recording = True
        gcmon.events.clear()
        gcmon.active = True
        with Timer() as t:
            await workload()
        # Let the beat that was pending at the end report.
        await anyio.sleep(2 * HEARTBEAT)
        gcmon.active = False
        stop.set()
    return lateness, t.ms


async def part_c_backend(
    corpus: list[BenchChunk],
    dim: int,
    quick: bool,
    engine_kw: dict[str, Any],
    with_sync: bool,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    n = len(corpus)
    queries = make_queries(32 * 6, seed=303 + dim)
    batches = [queries[i * 32 : (i + 1) * 32] for i in range(6)]
    embedder = HashedEmbedder(dim)
    embedder.matrix([c.text for c in corpus])  # warm the token memo
    gcmon = GcMonitor()
    gc.callbacks.append(gcmon)
    rows: list[dict[str, Any]] = []
    gc_cost: dict[str, float] = {}
    try:
        async with AsyncContextEngine(config(), **engine_kw) as engine:
            with Timer() as t_index:
                await engine.index(corpus, embed_fn=embedder)
            print(
                f"  (c) {n:,} chunks, {dim}-dim: async index {t_index.ms / 1000:.1f} s", flush=True
            )

            # No gc.collect() before this one: whatever collection the interpreter
            # owes after indexing may land in the window, as in a fresh server.
            async def first() -> None:
                await engine.run_many(batches[0])

            late, ms = await heartbeat_during(first, gcmon)
            rows.append(
                {
                    "condition": "async run_many, first batch after index()",
                    "late": late,
                    "ms": ms,
                    "gc": list(gcmon.events),
                }
            )

            gc.collect()

            async def idle() -> None:
                await anyio.sleep(0.3)

            late, ms = await heartbeat_during(idle, gcmon)
            rows.append(
                {
                    "condition": "idle (no requests, comparison)",
                    "late": late,
                    "ms": ms,
                    "gc": list(gcmon.events),
                }
            )

            reps = 1 if quick else 3
            steady_late: list[float] = []
            steady_gc: list[tuple[int, float]] = []
            steady_ms: list[float] = []
            for batch in batches[1 : 1 + reps]:
                gc.collect()

                async def steady(batch: Sequence[str] = batch) -> None:
                    await engine.run_many(batch)

                late, ms = await heartbeat_during(steady, gcmon)
                steady_late.extend(late)
                steady_gc.extend(gcmon.events)
                steady_ms.append(ms)
            rows.append(
                {
                    "condition": f"async run_many, steady (after gc.collect(), x{reps})",
                    "late": steady_late,
                    "ms": statistics.median(steady_ms),
                    "gc": steady_gc,
                }
            )

            # What one full collection costs with this heap (it stops every thread).
            full = []
            for _ in range(3):
                with Timer() as t:
                    gc.collect()
                full.append(t.ms)
            gc.freeze()
            frozen = []
            for _ in range(3):
                with Timer() as t:
                    gc.collect()
                frozen.append(t.ms)
            gc.unfreeze()
            gc_cost = {"full": statistics.median(full), "frozen": statistics.median(frozen)}
        if with_sync:
            sync_engine = ContextEngine(config()).index(corpus, embed_fn=embedder)
            for q in batches[-1][:3]:
                sync_engine.run(q)
            gc.collect()

            async def on_loop() -> None:
                async def one(q: str) -> None:
                    sync_engine.run(q)

                async with anyio.create_task_group() as tg:
                    for q in batches[-2]:
                        tg.start_soon(one, q)

            late, ms = await heartbeat_during(on_loop, gcmon)
            rows.append(
                {
                    "condition": "sync facade from 32 tasks on the loop (comparison)",
                    "late": late,
                    "ms": ms,
                    "gc": list(gcmon.events),
                }
            )
            del sync_engine
    finally:
        gc.callbacks.remove(gcmon)
    return rows, gc_cost


def part_c(
    corpus: list[BenchChunk], quick: bool, engine_kw: dict[str, Any]
) -> tuple[str, list[str], dict[str, Any]]:
    cases: list[tuple[str, int]] = [("asyncio", 64), ("trio", 64)]
    if not quick:
        cases += [("asyncio", 384), ("trio", 384)]
    try:
        import trio  # noqa: F401
    except ImportError:
        cases = [c for c in cases if c[0] != "trio"]
        print("  (c) trio is not installed: asyncio only")
    rows = []
    gc_rows: list[list[Any]] = []
    verdicts = []
    data: dict[Any, Any] = {}
    for backend, dim in cases:
        result, gc_cost = anyio.run(
            part_c_backend,
            corpus,
            dim,
            quick,
            engine_kw,
            backend == "asyncio",
            backend=backend,
        )
        data[(backend, dim)] = result
        gc_rows.append(
            [backend, f"{len(corpus):,} x {dim}-dim", gc_cost["full"], gc_cost["frozen"]]
        )
        for r in result:
            late = r["late"]
            gcs = r["gc"]
            full = [ms for gen, ms in gcs if gen == 2]
            rows.append(
                [
                    backend,
                    f"{len(corpus):,} x {dim}-dim",
                    r["condition"],
                    len(late),
                    max(late, default=0.0),
                    percentile(late, 99) if late else 0.0,
                    statistics.median(late) if late else 0.0,
                    r["ms"],
                    f"{len(gcs)} ({len(full)} full)",
                    max((ms for _, ms in gcs), default=0.0),
                ]
            )
            if r["condition"].startswith("async"):
                worst = max(late, default=0.0)
                verdicts.append(
                    f"- (c) {backend}, {dim}-dim, {r['condition']}: max lateness {worst:.1f} ms "
                    f"-> target <= {TARGET_STALL_MS:.0f} ms "
                    f"{'MET' if worst <= TARGET_STALL_MS else 'MISSED'}"
                    + (
                        f" (longest GC pass in the window: {max(ms for _, ms in gcs):.0f} ms)"
                        if gcs
                        else ""
                    )
                )
        print(f"  (c) {backend} {dim}-dim done", flush=True)
    table = format_table(
        [
            "backend",
            "corpus",
            "condition",
            "beats",
            "max late ms",
            "p99 late ms",
            "median late ms",
            "workload ms",
            "GC passes",
            "longest GC ms",
        ],
        rows,
    )
    table += (
        "\n\nCost of one full garbage collection with the corpus and the index alive "
        "(it holds the GIL, so it stalls the loop whichever thread triggers it):\n\n"
    )
    table += format_table(
        ["backend", "corpus", "gc.collect() ms", "gc.collect() ms after gc.freeze()"], gc_rows
    )
    return table, verdicts, data


# -- main ------------------------------------------------------------------------------------------


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
    ax.set_xlabel("run_many concurrency")
    ax.set_ylabel("throughput (queries/s)")
    ax.set_title("256 distinct queries, embedder sleeps 20 ms per call")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.text(0.01, -0.02, machine, fontsize=6)
    return save_png(fig, "async_throughput")


def plot_c(data: dict[str, Any], machine: str) -> Path:
    plt = pyplot()
    keys = list(data)
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 2.4 * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        for r in data[key]:
            ax.plot(r["late"], ".-", ms=3, lw=0.8, label=r["condition"])
        ax.axhline(TARGET_STALL_MS, color="tab:red", ls=":", lw=1)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{key[0]}, {key[1]}-dim: heartbeat lateness", fontsize=9)
        ax.set_ylabel("ms late")
        ax.legend(fontsize=6)
    axes[-1, 0].set_xlabel("heartbeat number (10 ms period)")
    fig.text(0.01, -0.01, machine, fontsize=6)
    fig.tight_layout()
    return save_png(fig, "async_stall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small corpora, few queries")
    parser.add_argument("--parts", default="abc", help="which parts to run, e.g. 'ab'")
    parser.add_argument("--workers", type=int, default=None, help="AsyncContextEngine workers")
    parser.add_argument(
        "--thread-limit", type=int, default=None, help="AsyncContextEngine thread_limit"
    )
    args = parser.parse_args()
    logging.getLogger("zerda_async").setLevel(logging.ERROR)
    engine_kw: dict[str, Any] = {}
    if args.workers is not None:
        engine_kw["workers"] = args.workers
    if args.thread_limit is not None:
        engine_kw["thread_limit"] = args.thread_limit
    settings = ", ".join(f"{k}={v}" for k, v in engine_kw.items()) or "engine defaults"

    machine = describe_machine()
    load_start = describe_load()
    print(f"machine: {machine}\n{load_start} at start; runner settings: {settings}")
    big = 10_000 if args.quick else 100_000
    with Timer() as t_corpus:
        corpus = make_corpus(big)
    print(f"corpus: {big:,} chunks generated in {t_corpus.ms / 1000:.1f} s", flush=True)

    sections: list[str] = []
    verdicts: list[str] = []
    pngs: list[Path] = []
    if "a" in args.parts:
        table, v, _ = anyio.run(part_a, corpus, args.quick, engine_kw)
        sections += ["## (a) Pipeline overhead, single requests", "", table, ""]
        verdicts += v
    if "b" in args.parts:
        table, v, data_b = anyio.run(part_b, corpus, args.quick, engine_kw)
        sections += ["## (b) Concurrency, 256 queries, 20 ms embedder", "", table, ""]
        verdicts += v
        pngs.append(plot_b(data_b, machine))
    if "c" in args.parts:
        table, v, data_c = part_c(corpus, args.quick, engine_kw)
        sections += ["## (c) Event-loop stall, 10 ms heartbeat, 32 requests", "", table, ""]
        verdicts += v
        pngs.append(plot_c(data_c, machine))

    load_end = describe_load()
    header = [
        "# Async engine benchmark",
        "",
        f"- machine: {machine}",
        f"- code: {describe_revision()}",
        f"- load: {load_start} at start, {load_end} at end",
        f"- command: `{command_line()}`; runner settings: {settings}",
        "- method: see the module docstring of bench/bench_async.py",
        "",
    ]
    outcome = ["## Targets", "", *verdicts, ""]
    if FAILURES:
        outcome += ["## IDENTITY CHECK FAILED", "", *(f"- {f}" for f in FAILURES), ""]
    else:
        outcome += ["Identity check: every async context equals the sync facade's.", ""]
    text = "\n".join(
        header + sections + outcome + [f"Plots: {', '.join(p.name for p in pngs)}", ""]
    )
    print()
    print(text)
    md = write_summary("async", text)
    print(f"wrote {md}" + "".join(f", {p}" for p in pngs))
    if FAILURES:
        print("ERROR: async results differ from the sync facade (see above)", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()

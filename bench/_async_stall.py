"""Part (c) of ``bench_async.py``: how late a 10 ms heartbeat wakes while heavy requests run,
with the garbage collections that land in the window.

The method is in ``bench_async.py``'s docstring.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from _async_setup import config
from _common import Timer, format_table, percentile, pyplot, save_png
from _corpus import BenchChunk, make_queries
from _hashed_embedder import HashedEmbedder

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine

HEARTBEAT = 0.010
TARGET_STALL_MS = 50.0


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


def _collection_ms() -> float:
    """Median ms of three full garbage collections."""
    times = []
    for _ in range(3):
        with Timer() as t:
            gc.collect()
        times.append(t.ms)
    return statistics.median(times)


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
            full = _collection_ms()
            gc.freeze()
            frozen = _collection_ms()
            gc.unfreeze()
            gc_cost = {"full": full, "frozen": frozen}
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

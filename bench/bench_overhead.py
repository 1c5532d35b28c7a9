"""Per-request cost of the async engine against the sync facade, idle and on a busy machine.

Method
------
The seeded corpus and queries of ``_common``; hybrid retrieval with the 64-dim
feature-hashing embedder (a plain ``embed_fn`` for the sync facade, the same
function as a sync ``batch_embed_fn`` for the async engine, whose query
embedding then runs ahead in the embedding phase); cache disabled; every query
is new.  At 10,000 and 100,000 chunks (``--quick``: 2,000 and 20,000), one
request at a time, the same query goes to every system in a rotating order
(alternation, so drifting load hits all alike); median and quartiles of
``time.perf_counter`` per request.

Systems: the sync facade and the async engine, each **before** (BLAS left
alone: ``ZERDA_SCAN_BLAS_THREADS=off``; async also with the old 2 ms offload
threshold) and **after** the fix (scan BLAS threads matched to the free
cores, offload threshold of two GIL switch intervals).  Comparison in the
same run, the work the engine has to do: a plain numpy scan (cosine product +
top-20, numpy's default BLAS threads) and ``bm25s`` retrieving the top 20.

Calling thread: ``alone``; ``between`` (5 ms of pure-Python CPU work on the
event-loop thread before each request); ``during`` (a task on the loop doing
CPU work in 1 ms slices while the request runs, as other requests of a web
app would; the sync facade blocks the loop, so it has no such row).
Machine: ``idle`` (as it is) and ``busy`` (this script starts one busy-loop
process for one core, and stops it).  Targets: async/sync <= 1.2 (after),
and on the busy machine the engine's slowdown no worse than the comparison's.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import numpy as np
from _common import (
    BenchChunk,
    HashedEmbedder,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    write_summary,
)

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async import AsyncContextEngine
from zerda_async.core.retrieval import tokenize
from zerda_async.runtime import scan_blas_threads

TARGET = 1.2
WORK_MS = 5.0
SLICE_MS = 1.0

Call = Callable[[str], Awaitable[object]]


def config() -> ContextEngineConfig:
    cfg = ContextEngineConfig()
    cfg.cache.enabled = False
    return cfg


def spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """One busy-loop process (about one core), stopped on exit."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # let the scheduler and the free-core probe see it
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def comparisons(chunks: list[BenchChunk], emb: HashedEmbedder) -> dict[str, Call]:
    """The work the engine has to do, done by plain numpy and by bm25s."""
    import bm25s

    matrix = emb.matrix([c.text for c in chunks])

    async def scan(q: str) -> object:
        sims = matrix @ emb(q)
        return np.argpartition(sims, -20)[-20:]

    index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    index.index([tokenize(c.text) for c in chunks], show_progress=False)

    async def keyword(q: str) -> object:
        return index.retrieve([tokenize(q)], k=20, show_progress=False)

    return {"numpy scan": scan, "bm25s": keyword}


async def measure(
    systems: dict[str, Call], queries: list[str], mode: str
) -> dict[str, list[float]]:
    """Each query through every system, in a rotating order; ms per request."""
    names = list(systems)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            if mode == "during" and name.startswith("sync"):
                continue
            if mode == "between":
                spin(WORK_MS)
            done = anyio.Event()

            async def background(done: anyio.Event = done) -> None:
                while not done.is_set():
                    spin(SLICE_MS)
                    await anyio.sleep(0)

            async with anyio.create_task_group() as tg:
                if mode == "during":
                    tg.start_soon(background)
                    await anyio.sleep(0)
                t0 = time.perf_counter()
                await systems[name](q)
                times[name].append((time.perf_counter() - t0) * 1000)
                done.set()
    return times


async def one_size(n: int, corpus: list[BenchChunk], n_queries: int) -> list[dict[str, Any]]:
    chunks = corpus[:n]
    emb = HashedEmbedder(64)
    emb.matrix([c.text for c in chunks])  # warm the token memo
    sync = ContextEngine(config()).index(chunks, embed_fn=emb)
    out: list[dict[str, Any]] = []
    # "before": the old 2 ms offload threshold (BLAS left alone by the caller's env).
    threshold = 2.0 if scan_blas_threads() == "off" else None
    async with AsyncContextEngine(config(), offload_threshold_ms=threshold) as engine:
        await engine.index(chunks, batch_embed_fn=emb.matrix)

        async def sync_run(q: str) -> object:
            return sync.run(q)

        systems: dict[str, Call] = {
            "sync": sync_run,
            "async": engine.run,
            **comparisons(chunks, emb),
        }
        queries = make_queries(10 + 6 * n_queries, seed=n % 97)
        await measure(systems, queries[:10], "alone")  # warm-up
        gc.collect()
        pool = iter(queries[10:])
        for machine, mode in itertools.product(("idle", "busy"), ("alone", "between", "during")):
            qs = list(itertools.islice(pool, n_queries))
            ctx = busy_core() if machine == "busy" else contextlib.nullcontext()
            with ctx:
                times = await measure(systems, qs, mode)
            out.append({"n": n, "machine": machine, "mode": mode, "times": times})
    return out


def run_child(n: int, setting: str, n_queries: int) -> list[dict[str, Any]]:
    """One process, one fix setting: BLAS threads are process-wide, so before and after
    never share a process (restoring one's setting would change the other's helper threads)."""
    env = {**os.environ, "ZERDA_SCAN_BLAS_THREADS": setting}
    cmd = [sys.executable, __file__, "--child", str(n), "--queries", str(n_queries)]
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    for row in rows:
        row["setting"] = setting
    return rows


def cell(values: list[float]) -> tuple[float, str]:
    """Median of the per-process medians, and their range."""
    return statistics.median(values), f"{min(values):.2f}-{max(values):.2f}"


def report(results: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    meds: dict[tuple[Any, ...], list[float]] = {}
    for r in results:
        for name, values in r["times"].items():
            if values:
                key = (r["n"], r["machine"], r["mode"], name, r["setting"])
                meds.setdefault(key, []).append(statistics.median(values))
    label = {"off": "before", "auto": "after"}
    rows, verdicts = [], []
    for key, values in meds.items():
        n, machine, mode, name, setting = key
        med, spread = cell(values)
        sync = meds.get((n, machine, mode, "sync", setting))
        ratio = f"{med / statistics.median(sync):.2f}" if name == "async" and sync else "-"
        rows.append([n, machine, mode, name, label[setting], med, spread, ratio])
        if name == "async" and sync and setting == "auto" and mode != "during":
            value = med / statistics.median(sync)
            verdicts.append(
                f"- async/sync at {n:,}, {machine}, {mode}: {value:.2f} -> target <= "
                f"{TARGET} {'MET' if value <= TARGET else 'MISSED'}"
            )
    slow_rows = []
    for (n, machine, mode, name, setting), values in meds.items():
        busy = meds.get((n, "busy", mode, name, setting))
        if machine == "idle" and mode == "alone" and busy:
            idle_ms, busy_ms = statistics.median(values), statistics.median(busy)
            slow_rows.append([n, name, label[setting], idle_ms, busy_ms, busy_ms / idle_ms])
    headers = [
        "chunks",
        "machine",
        "calling thread",
        "system",
        "fix",
        "median ms",
        "range of runs",
        "/ sync",
    ]
    slow_headers = ["chunks", "system", "fix", "idle ms", "busy ms", "busy / idle"]
    return format_table(headers, rows), format_table(slow_headers, slow_rows), verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small corpora, few queries")
    parser.add_argument("--queries", type=int, default=None, help="queries per cell and run")
    parser.add_argument("--runs", type=int, default=None, help="processes per setting and size")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_queries = args.queries or (12 if args.quick else 40)
    if args.child is not None:
        rows = anyio.run(one_size, args.child, make_corpus(args.child), n_queries)
        print(json.dumps(rows))
        return
    sizes = [2_000, 20_000] if args.quick else [10_000, 100_000]
    runs = args.runs or (1 if args.quick else 3)
    header = "\n".join([describe_machine(), describe_revision(), command_line()])
    print(header + "\n" + describe_load(), flush=True)
    results: list[dict[str, Any]] = []
    for n, run in itertools.product(sizes, range(runs)):
        # Alternate which setting goes first, so drifting load hits both alike.
        for setting in ("off", "auto") if run % 2 == 0 else ("auto", "off"):
            results += run_child(n, setting, n_queries)
            print(f"  {n:>7,} run {run + 1}/{runs} {setting}: {describe_load()}", flush=True)
    table, slow, verdicts = report(results)
    text = "\n\n".join(
        [
            header,
            describe_load(),
            table,
            "Slowdown on the busy machine (calling thread alone):",
            slow,
            "\n".join(verdicts),
        ]
    )
    print("\n" + text)
    write_summary("overhead", text)


if __name__ == "__main__":
    main()

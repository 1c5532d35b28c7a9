"""Part (a) of ``bench_async.py``: one request at a time, async engine against the sync facade.

The method is in ``bench_async.py``'s docstring.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from _async_setup import FAILURES, config
from _common import format_table, summarise
from _corpus import BenchChunk, make_queries
from _hashed_embedder import HashedEmbedder

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine

TARGET_OVERHEAD = 1.5


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

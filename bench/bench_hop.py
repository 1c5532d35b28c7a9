"""The thread hop on asyncio: zerda's own worker pool against ``anyio.to_thread``.

Method
------
Two settings of ``ZERDA_THREAD_HOP``: ``pool`` (the default: calls handed to
waiting daemon threads of ``runtime._hop_pool``, answered with
``loop.call_soon_threadsafe``) and ``anyio`` (``anyio.to_thread.run_sync``
with a limiter of its own per hop).  The setting is read at import, so each
setting runs in processes of its own, alternated (``pool`` first on even
runs, ``anyio`` first on odd ones) so drifting load hits both alike; the
table gives the median of the per-process medians and their range.

In each process, on asyncio (``anyio.run``):

* **hop**: ``runtime.run_in_thread`` of a function returning its argument,
  one at a time (2,000 timed after 200 warm-up), µs per hop;
* **request**: ``AsyncContextEngine.run`` over 1,000 chunks of the seeded
  corpus of ``_common`` with the 64-dim feature-hashing embedder as a plain
  ``embed_fn`` (its query embedding makes one hop per request), cache off,
  every query new, one request at a time (300 timed after 10 warm-up), ms per
  request.

Run ``.venv/bin/python bench/bench_hop.py`` (``--runs N``, ``--quick``).
Output: the table on stdout and ``bench/out/hop.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from _common import (
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

from sync_api import ContextEngineConfig
from zerda_async import AsyncContextEngine
from zerda_async.runtime import run_in_thread

SETTINGS = ("pool", "anyio")


def echo(value: int) -> int:
    return value


async def time_hops(count: int) -> list[float]:
    """µs per ``run_in_thread`` hop of a trivial call, one at a time."""
    limiter = anyio.CapacityLimiter(4)
    for i in range(200):
        await run_in_thread(echo, i, limiter=limiter)
    times = []
    for i in range(count):
        started = time.perf_counter()
        await run_in_thread(echo, i, limiter=limiter)
        times.append((time.perf_counter() - started) * 1e6)
    return times


async def time_requests(count: int) -> list[float]:
    """ms per ``AsyncContextEngine.run`` at 1,000 chunks with a plain 64-dim embedder."""
    chunks = make_corpus(1_000)
    embedder = HashedEmbedder(64)
    embedder.matrix([c.text for c in chunks])  # warm the token memo
    config = ContextEngineConfig()
    config.cache.enabled = False
    queries = make_queries(10 + count, seed=17)
    times = []
    async with AsyncContextEngine(config) as engine:
        await engine.index(chunks, embed_fn=embedder)
        for query in queries[:10]:
            await engine.run(query)
        gc.collect()
        for query in queries[10:]:
            started = time.perf_counter()
            await engine.run(query)
            times.append((time.perf_counter() - started) * 1000)
    return times


async def child(hops: int, requests: int) -> dict[str, float]:
    return {
        "hop": statistics.median(await time_hops(hops)),
        "request": statistics.median(await time_requests(requests)),
    }


def run_child(setting: str, hops: int, requests: int) -> dict[str, float]:
    env = {**os.environ, "ZERDA_THREAD_HOP": setting}
    cmd = [sys.executable, __file__, "--child", "--hops", str(hops), "--requests", str(requests)]
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def table(results: dict[str, list[dict[str, float]]]) -> str:
    rows: list[list[Any]] = []
    for measure, unit in (("hop", "µs per hop"), ("request", "ms per request")):
        medians = {s: statistics.median(r[measure] for r in results[s]) for s in SETTINGS}
        for setting in SETTINGS:
            values = [r[measure] for r in results[setting]]
            spread = f"{min(values):.3g}-{max(values):.3g}"
            saved = medians["anyio"] - medians[setting]
            rows.append([measure, unit, setting, medians[setting], spread, f"{saved:+.3g}"])
    headers = ["measure", "unit", "hop", "median", "range of runs", "saved vs anyio"]
    return format_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs")
    parser.add_argument("--runs", type=int, default=None, help="processes per setting")
    parser.add_argument("--hops", type=int, default=2_000, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=300, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(anyio.run(child, args.hops, args.requests, backend="asyncio")))
        return
    hops, requests = (500, 60) if args.quick else (args.hops, args.requests)
    runs = args.runs or (2 if args.quick else 5)
    header = [
        "# Thread hop: own pool against anyio.to_thread",
        "",
        f"- machine: {describe_machine()}",
        f"- code: {describe_revision()}",
        f"- load at start: {describe_load()}",
        f"- command: `{command_line()}`",
        f"- method: see the module docstring of bench/bench_hop.py ({runs} runs per setting)",
        "",
    ]
    print("\n".join(header), flush=True)
    results: dict[str, list[dict[str, float]]] = {s: [] for s in SETTINGS}
    for run in range(runs):
        for setting in SETTINGS if run % 2 == 0 else SETTINGS[::-1]:
            results[setting].append(run_child(setting, hops, requests))
            print(f"  run {run + 1}/{runs} {setting}: {describe_load()}", flush=True)
    text = "\n".join([*header, table(results), "", f"- load at end: {describe_load()}", ""])
    print()
    print(text)
    print(f"wrote {write_summary('hop', text)}")


if __name__ == "__main__":
    main()

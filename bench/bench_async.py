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
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from _async_concurrency import part_b, plot_b
from _async_overhead import part_a
from _async_setup import FAILURES
from _async_stall import part_c, plot_c
from _common import (
    Timer,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    make_corpus,
    write_summary,
)


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

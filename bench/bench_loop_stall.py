"""Event-loop lateness beside throughput: 256 concurrent requests at 100,000 chunks.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded);
  100,000 chunks by default (``--chunks``), 64-dim feature-hashing vectors.
* Embedder: a coroutine batch embedder that sleeps 20 ms per call (a network
  embedder; no sleep while the corpus is indexed), as in ``bench_async.py``
  part (b).  Default configuration (cache on, never hit: every query new).
* Load: ``run_many`` of 256 distinct queries with ``concurrency=256``
  (``max_in_flight=256``).  Meanwhile a heartbeat task sleeps 10 ms in a loop
  and records how late each wake-up is; max, p99 and median lateness are
  reported beside the throughput (256 / wall time of ``run_many``) and the
  process CPU time per request (``time.process_time`` over the run / 256,
  which other processes' load disturbs less than wall time).
* Compared in the same run, one engine each over the same corpus, rounds
  interleaved so machine noise hits all alike:

  - **after**: the default offload policy with loop pacing (``LoopPacer``:
    at most one inline stage group per event-loop iteration while other
    requests are in flight, so the lone-request budget of 10 ms applies at
    any concurrency);
  - **paced, never offloaded**: ``offload="inline"`` with pacing, to show
    what groups whose measured cost crosses the 10 ms budget (and go to a
    worker thread) cost the loop;
  - **unpaced 2 ms**: the policy of main at fb16b17 (no pacing; a group runs
    inline up to ``CROWDED_THRESHOLD_MS``, 2 ms, while other requests are in
    flight, 10 ms alone);
  - **before**: ``offload_threshold_ms=default_threshold_ms()`` without
    pacing, the rule before that (10 ms inline whatever the concurrency);
  - **idle**: the heartbeat alone for the same time (what the machine's other
    load costs the loop; lateness above it is ours).

* ``gc.freeze()`` after indexing: the interpreter's full collection of the
  100,000 chunk objects (~100 ms, see ``bench_async.py`` (c)) is not what is
  measured here.

Target (issue 18, item 10): worst lateness <= 15 ms at 100,000 chunks, with
throughput no lower than before.  Run ``.venv/bin/python bench/bench_loop_stall.py``
(~2 min; ``--quick`` for one round; ``--chunks 10000`` to check that smaller
corpora keep their inline speed).  Outputs a table on stdout and
``bench/out/loop_stall.md``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import numpy as np
from _common import (
    HashedEmbedder,
    command_line,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    percentile,
    write_summary,
)
from numpy.typing import NDArray

from sync_api import ContextEngineConfig
from zerda_async import AsyncContextEngine
from zerda_async.runtime import CROWDED_THRESHOLD_MS, default_threshold_ms, set_loop_pacing

EMBED_DELAY = 0.020
HEARTBEAT = 0.010
REQUESTS = 256
TARGET_LATE_MS = 15.0
AFTER = "after (default: paced, 10 ms inline budget)"


class SleepyBatchEmbedder:
    """Coroutine batch embedder: one ``anyio.sleep(delay)`` per call once ``delay`` is set."""

    def __init__(self, base: HashedEmbedder) -> None:
        self.base = base
        self.delay = 0.0

    async def __call__(self, texts: list[Any]) -> NDArray[np.float64]:
        if self.delay:
            await anyio.sleep(self.delay)
        return self.base.matrix(texts)


async def with_heartbeat(workload: Any) -> tuple[list[float], float]:
    """Run ``await workload()`` beside a 10 ms heartbeat: (lateness ms of each beat, wall s)."""
    late: list[float] = []
    stop = anyio.Event()

    async def beat() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            await anyio.sleep(HEARTBEAT)
            late.append((time.perf_counter() - started - HEARTBEAT) * 1000)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        await anyio.sleep(3 * HEARTBEAT)
        late.clear()
        started = time.perf_counter()
        await workload()
        wall = time.perf_counter() - started
        await anyio.sleep(2 * HEARTBEAT)  # the beat pending at the end reports
        stop.set()
    return late, wall


async def measure(n_chunks: int, rounds: int) -> tuple[list[list[Any]], dict[str, Any]]:
    """Interleaved rounds of every variant; the table rows and the raw figures."""
    corpus = make_corpus(n_chunks)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in corpus])  # warm the token memo (not timed)
    # name -> (engine keywords, loop pacing on)
    variants: dict[str, tuple[dict[str, Any], bool]] = {
        AFTER: ({}, True),
        "paced, never offloaded (offload='inline')": ({"offload": "inline"}, True),
        f"unpaced, crowded budget {CROWDED_THRESHOLD_MS:g} ms (fb16b17)": ({}, False),
        "before (10 ms inline at any concurrency, unpaced)": (
            {"offload_threshold_ms": default_threshold_ms()},
            False,
        ),
    }
    late: dict[str, list[float]] = {name: [] for name in [*variants, "idle heartbeat"]}
    rates: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    async with AsyncExitStack() as stack:
        engines = {}
        for name, (kwargs, _) in variants.items():
            embedder = SleepyBatchEmbedder(base)
            engine = await stack.enter_async_context(
                AsyncContextEngine(ContextEngineConfig(), max_in_flight=REQUESTS, **kwargs)
            )
            await engine.index(corpus, batch_embed_fn=embedder)
            embedder.delay = EMBED_DELAY
            engines[name] = engine
            print(f"  indexed {n_chunks:,} chunks for {name}", flush=True)
        gc.collect()
        gc.freeze()
        for round_no in range(rounds):
            queries = make_queries(REQUESTS, seed=900 + round_no)
            walls = []
            for name, engine in engines.items():

                async def load(
                    engine: AsyncContextEngine = engine,
                    queries: list[str] = queries,
                    name: str = name,
                ) -> None:
                    started = time.process_time()
                    await engine.run_many(queries, concurrency=REQUESTS)
                    cpu[name].append((time.process_time() - started) * 1000 / REQUESTS)

                set_loop_pacing(variants[name][1])
                beats, wall = await with_heartbeat(load)
                late[name].extend(beats)
                rates[name].append(REQUESTS / wall)
                walls.append(wall)
                print(
                    f"  round {round_no + 1}: {name}: {REQUESTS / wall:.0f} q/s, "
                    f"max late {max(beats):.1f} ms",
                    flush=True,
                )
            idle_s = statistics.median(walls)

            async def idle(seconds: float = idle_s) -> None:
                await anyio.sleep(seconds)

            beats, _ = await with_heartbeat(idle)
            late["idle heartbeat"].extend(beats)
        gc.unfreeze()
        set_loop_pacing(True)
    rows = []
    for name, beats in late.items():
        rate = rates.get(name)
        spent = cpu.get(name)
        rows.append(
            [
                name,
                f"{statistics.median(rate):.0f}" if rate else "-",
                f"{min(rate):.0f}-{max(rate):.0f}" if rate else "-",
                f"{statistics.median(spent):.2f}" if spent else "-",
                len(beats),
                max(beats),
                percentile(beats, 99),
                statistics.median(beats),
            ]
        )
    return rows, {"late": late, "rates": rates}


def main() -> None:
    """Parse the options, measure, print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round instead of three")
    parser.add_argument("--chunks", type=int, default=100_000, help="corpus size")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3, quick 1)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    header = [
        f"Machine: {describe_machine()}",
        f"Code: {describe_revision()}; {describe_load()} at start",
        f"Method: {REQUESTS} concurrent requests (run_many, concurrency {REQUESTS}), "
        f"{args.chunks:,} chunks x 64 dims, 20 ms coroutine batch embedder, "
        f"10 ms heartbeat; {rounds} interleaved round(s) per variant; "
        f"crowded inline budget {CROWDED_THRESHOLD_MS} ms unpaced, lone (and paced) "
        f"{default_threshold_ms()} ms",
    ]
    print("\n".join(header), flush=True)
    rows, data = anyio.run(measure, args.chunks, rounds)
    table = format_table(
        [
            "variant",
            "throughput q/s (median)",
            "range q/s",
            "CPU ms/request",
            "beats",
            "max late ms",
            "p99 late ms",
            "median late ms",
        ],
        rows,
    )
    after = max(data["late"][AFTER])
    verdict = (
        f"Worst lateness with the default policy: {after:.1f} ms -> target <= "
        f"{TARGET_LATE_MS:.0f} ms {'MET' if after <= TARGET_LATE_MS else 'MISSED'} "
        f"({describe_load()} at end)"
    )
    print(table)
    print(verdict)
    write_summary(
        "loop_stall", "\n\n".join(["\n".join(header), f"`{command_line()}`", table, verdict])
    )


if __name__ == "__main__":
    main()

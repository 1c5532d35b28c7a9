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
* **Two revisions in the same run**: this tree and ``--baseline`` (default
  ``main``; its ``zerda_async`` and ``sync_api`` extracted with ``git
  archive``), each in a child process that indexes the corpus once and then
  measures one round each time the parent asks, the parent alternating the
  children round by round so that the machine's other load hits both alike.
  This tree also runs with ``loop_pacing=False`` (its groups then go to a
  worker thread whenever others are in flight and they cost over 2 ms; by
  default only while a core is free or every core is contended,
  ``runtime.thread_pays``, else they are paced in pieces).
  ``--no-baseline`` measures this tree only.
* Warm-up: each engine runs one unmeasured round of 256 other queries after
  indexing, so its offload policy has measured the stage groups (a fresh
  engine offloads every group to a thread until then, from 20,000 chunks).
* **idle heartbeat**: the heartbeat alone in the parent, for a round's median
  wall time, after every round: what the machine's other load costs any
  loop; lateness above it is the engine's.
* ``--busy-cores N``: N other processes (``while True: pass``) spin for the
  whole measurement, started after every child has indexed and killed at the
  end, so that N cores are taken from outside (a machine shared with other
  work); the idle heartbeat then runs beside them too.
* ``--baseline`` may be given more than once: one child per revision.
* Output digest: SHA-256 over every result's context, so the revisions show
  that they returned the same contexts.
* ``gc.freeze()`` after indexing: the interpreter's full collection of the
  100,000 chunk objects (~100 ms, see ``bench_async.py`` (c)) is not what is
  measured here.

Target (issue 18, item 10): worst lateness <= 15 ms at 100,000 chunks, with
throughput no lower than the baseline's.  Run
``.venv/bin/python bench/bench_loop_stall.py`` (~5 min; ``--quick`` for one
round; ``--chunks 10000`` to check that smaller corpora keep their speed).
Outputs a table on stdout and ``bench/out/loop_stall.md``.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# A child measuring another revision gets that tree first on the path.
sys.path.insert(
    0, os.environ.get("ZERDA_BENCH_TREE") or str(Path(__file__).resolve().parent.parent)
)

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
from _revisions import extract_revision
from numpy.typing import NDArray

_HERE = Path(__file__).resolve().parent
EMBED_DELAY = 0.020
HEARTBEAT = 0.010
REQUESTS = 256
TARGET_LATE_MS = 15.0
THIS = "this tree"
UNPACED = "this tree, loop_pacing=False"
ONE_THREAD = "this tree, thread_limit=1"


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


# -- child: one revision, one engine per variant, a round whenever the parent asks ---------


async def serve_rounds(n_chunks: int, variants: list[str]) -> None:
    """Index once per variant, then measure one round per line read from stdin."""
    from sync_api import ContextEngineConfig
    from zerda_async import AsyncContextEngine

    corpus = make_corpus(n_chunks)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in corpus])  # warm the token memo (not timed)
    engines = {}
    embedders = []
    async with AsyncExitStack() as stack:
        for name in variants:
            extra: dict[str, Any] = {"loop_pacing": False} if name == UNPACED else {}
            if name == ONE_THREAD:
                extra = {"thread_limit": 1}
            engine = await stack.enter_async_context(
                AsyncContextEngine(ContextEngineConfig(), max_in_flight=REQUESTS, **extra)
            )
            embedder = SleepyBatchEmbedder(base)
            await engine.index(corpus, batch_embed_fn=embedder)
            embedders.append(embedder)
            engines[name] = engine
        for embedder in embedders:
            embedder.delay = EMBED_DELAY
        for engine in engines.values():  # warm-up: the placement learns the costs
            await engine.run_many(make_queries(REQUESTS, seed=800), concurrency=REQUESTS)
        gc.collect()
        gc.freeze()
        _reply({"ready": True})
        while True:
            line = sys.stdin.readline()  # blocks the loop between rounds only
            if not line.strip():
                break
            order = json.loads(line)
            engine = engines[order["variant"]]
            queries = make_queries(REQUESTS, seed=900 + order["round"])
            results: list[Any] = []

            async def load(
                engine: Any = engine, queries: list[str] = queries, results: list[Any] = results
            ) -> None:
                results.extend(await engine.run_many(queries, concurrency=REQUESTS))

            cpu = time.process_time()
            beats, wall = await with_heartbeat(load)
            cpu_ms = (time.process_time() - cpu) * 1000 / REQUESTS
            digest = hashlib.sha256("\x00".join(r.context for r in results).encode()).hexdigest()
            _reply({"beats": beats, "wall": wall, "cpu_ms": cpu_ms, "digest": digest[:12]})
        gc.unfreeze()


def _reply(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


# -- parent: the children, alternated round by round -------------------------------------


class Child:
    """A child process serving rounds for one revision (``tree``) and its ``variants``."""

    def __init__(self, tree: Path, n_chunks: int, variants: list[str]) -> None:
        env = {**os.environ, "ZERDA_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
        command = [sys.executable, __file__, "--child", "--chunks", str(n_chunks)]
        command += ["--variants", json.dumps(variants)]
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def _read(self) -> dict[str, Any]:
        out: IO[str] | None = self.process.stdout
        assert out is not None
        line = out.readline()
        if not line:
            raise RuntimeError(f"a bench child exited with status {self.process.wait()}")
        message: dict[str, Any] = json.loads(line)
        return message

    def ready(self) -> None:
        self._read()

    def round(self, variant: str, round_no: int) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"variant": variant, "round": round_no}) + "\n")
        stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def _idle(seconds: float) -> list[float]:
    async def idle() -> None:
        await anyio.sleep(seconds)

    async def measured() -> list[float]:
        beats, _ = await with_heartbeat(idle)
        return beats

    return anyio.run(measured)


def start_spinners(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that each keep one core busy until killed (:func:`stop_spinners`)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_spinners(spinners: list[subprocess.Popen[bytes]]) -> None:
    """Kill the spinners started by :func:`start_spinners` and reap them."""
    for spinner in spinners:
        spinner.kill()
    for spinner in spinners:
        spinner.wait()


def measure(
    n_chunks: int, rounds: int, baselines: list[str], busy_cores: int = 0, one_thread: bool = False
) -> tuple[list[list[Any]], float]:
    """Alternated rounds of every (revision, variant); the table rows and this tree's worst."""
    tmps = [extract_revision(baseline) for baseline in baselines]
    children: dict[str, tuple[Child, str]] = {}
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        mine = [THIS, UNPACED, ONE_THREAD] if one_thread else [THIS, UNPACED]
        this = Child(_HERE.parent, n_chunks, mine)
        children = {name: (this, name) for name in mine}
        for baseline, tmp in zip(baselines, tmps, strict=True):
            base = Child(Path(tmp.name), n_chunks, [THIS])
            children[f"baseline {baseline}"] = (base, THIS)
        for child in {id(c): c for c, _ in children.values()}.values():
            child.ready()
        print(f"  indexed {n_chunks:,} chunks in every child", flush=True)
        spinners = start_spinners(busy_cores)
        data: dict[str, list[dict[str, Any]]] = {name: [] for name in children}
        idle: list[float] = []
        for round_no in range(rounds):
            names = list(children) if round_no % 2 == 0 else list(reversed(children))
            for name in names:
                child, variant = children[name]
                result = child.round(variant, round_no)
                data[name].append(result)
                print(
                    f"  round {round_no + 1}: {name}: {REQUESTS / result['wall']:.0f} q/s, "
                    f"max late {max(result['beats']):.1f} ms ({describe_load()})",
                    flush=True,
                )
            idle.extend(_idle(statistics.median(r["wall"] for v in data.values() for r in v)))
    finally:
        stop_spinners(spinners)
        for child in {id(c): c for c, _ in children.values()}.values():
            child.close()
        for tmp in tmps:
            tmp.cleanup()
    rows = []
    for name, results in data.items():
        beats = [b for r in results for b in r["beats"]]
        rates = [REQUESTS / r["wall"] for r in results]
        rows.append(
            [
                name,
                f"{statistics.median(rates):.0f}",
                f"{min(rates):.0f}-{max(rates):.0f}",
                f"{statistics.median(r['cpu_ms'] for r in results):.2f}",
                len(beats),
                max(beats),
                percentile(beats, 99),
                statistics.median(beats),
                ",".join(sorted({r["digest"] for r in results})),
            ]
        )
    idle_row = ["idle heartbeat", "-", "-", "-", len(idle), max(idle), percentile(idle, 99)]
    rows.append([*idle_row, statistics.median(idle), "-"])
    return rows, max(b for r in data[THIS] for b in r["beats"])


def main() -> None:
    """Parse the options, measure, print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round instead of four")
    parser.add_argument("--chunks", type=int, default=100_000, help="corpus size")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 4, quick 1)")
    parser.add_argument(
        "--baseline", action="append", help="git revision to compare with (repeatable; main)"
    )
    parser.add_argument(
        "--busy-cores", type=int, default=0, help="cores kept busy by spinning processes"
    )
    parser.add_argument(
        "--one-thread", action="store_true", help="add a row: this tree with thread_limit=1"
    )
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variants", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(serve_rounds, args.chunks, json.loads(args.variants))
        return
    rounds = args.rounds or (1 if args.quick else 4)
    baselines = [] if args.no_baseline else (args.baseline or ["main"])
    busy = f"; {args.busy_cores} core(s) kept busy by spinning processes" if args.busy_cores else ""
    header = [
        f"Machine: {describe_machine()}",
        f"Code: {describe_revision()} against {', '.join(baselines) or 'nothing'}; "
        f"{describe_load()} at start{busy}",
        f"Method: {REQUESTS} concurrent requests (run_many, concurrency {REQUESTS}), "
        f"{args.chunks:,} chunks x 64 dims, 20 ms coroutine batch embedder, "
        f"10 ms heartbeat; {rounds} alternated round(s) per row, one child process "
        "per revision",
    ]
    print("\n".join(header), flush=True)
    rows, worst = measure(args.chunks, rounds, baselines, args.busy_cores, args.one_thread)
    table = format_table(
        [
            "revision",
            "throughput q/s (median)",
            "range q/s",
            "CPU ms/request",
            "beats",
            "max late ms",
            "p99 late ms",
            "median late ms",
            "contexts sha256",
        ],
        rows,
    )
    verdict = (
        f"Worst lateness of this tree: {worst:.1f} ms -> target <= "
        f"{TARGET_LATE_MS:.0f} ms {'MET' if worst <= TARGET_LATE_MS else 'MISSED'} "
        f"({describe_load()} at end)"
    )
    print(table)
    print(verdict)
    write_summary(
        "loop_stall", "\n\n".join(["\n".join(header), f"`{command_line()}`", table, verdict])
    )


if __name__ == "__main__":
    main()

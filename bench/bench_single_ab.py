"""A/B of issue 18's two async targets: this tree against a git revision, children alternating.

Method
------
Corpus, queries and the 64-dim feature-hashing embedder are ``_common``'s
(seeded; the embedder's token memo warmed first).  Each measurement runs in a
child process on one tree: ``--baseline REV`` (default ``main``) extracted
with ``git archive`` (``_revisions.extract_revision``), or this tree.  The
children alternate, and which tree goes first alternates too (``--rounds``
pairs), so the machine's other load hits both alike.  Reported: the median
over each tree's children, and the load average after every round.

* **(a) one request at a time** (``bench_async.py`` part (a)): a sync facade
  and an ``AsyncContextEngine`` over the same chunks, cache off, 5 warm-up
  queries, then ``--queries`` new ones, each timed through the sync ``run()``
  and then the async ``await run()``; keyword-only and with the embedder as
  a plain ``embed_fn`` (with ``cheap_embedder_on_loop=True`` on a tree that
  has the opt-in).  Figures: median ms of each, their ratio (target
  async/sync <= 1.2), process CPU ms per query of each (``time.process_time``,
  all threads), and the share of the async engine's query-embedder calls
  made on the event loop's thread (the embedder notes its thread).
* **(b) run_many** (``bench_async.py`` part (b) at 1,000 chunks): 256 new
  queries, ``run_many(concurrency=c)`` for c = 64 (3 runs, median) and 256
  (1 run), fresh engine per run (default configuration, ``max_in_flight =
  max(64, c)``), a coroutine batch embedder sleeping 20 ms per call; q/s =
  256 / wall time, CPU ms per query as above.  The comparison, in the same
  child: the sync facade running the same queries one by one with a plain
  embedder sleeping 20 ms per query call (target >= 25x its q/s at c = 64).
  Every async context must equal the sync facade's (the child exits with
  status 1 otherwise), and a digest of them shows both trees give the same.

Run ``PYTHONPATH=$PWD .venv/bin/python bench/bench_single_ab.py`` (``--quick``
for a smoke run).  Outputs the table on stdout and ``bench/out/single_ab.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

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
    write_summary,
)
from _revisions import extract_revision
from numpy.typing import NDArray

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async import AsyncContextEngine

_HERE = Path(__file__).resolve().parent
EMBED_DELAY = 0.020
MANY = 256
LEVELS = {64: 3, 256: 1}  # concurrency: runs


def _config(cache: bool) -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = cache
    return config


class _Noting:
    """The plain embedder, counting the query calls made on the event loop's thread."""

    def __init__(self, base: HashedEmbedder) -> None:
        self.base = base
        self.loop_thread: int | None = None  # set once indexing is over
        self.calls = 0
        self.on_loop = 0

    def __call__(self, text: Any) -> NDArray[np.float64]:
        if self.loop_thread is not None:
            self.calls += 1
            self.on_loop += threading.get_ident() == self.loop_thread
        return self.base.vector(text)


def _opt_in() -> dict[str, Any]:
    """``cheap_embedder_on_loop=True`` where the tree has it (off by default: a cheap
    plain embedder then stays in threads, as in the trees before it)."""
    accepted = inspect.signature(AsyncContextEngine).parameters
    return {"cheap_embedder_on_loop": True} if "cheap_embedder_on_loop" in accepted else {}


async def _single(chunks: list[Any], base: HashedEmbedder, mode: str, n: int) -> dict[str, Any]:
    queries = make_queries(5 + n, seed=101)
    embedder = _Noting(base) if mode == "embed_fn" else None
    sync_fn = base.vector if embedder is not None else None
    sync_engine = ContextEngine(_config(False)).index(chunks, embed_fn=sync_fn)
    t_sync: list[float] = []
    t_async: list[float] = []
    cpu_sync = cpu_async = 0.0
    async with AsyncContextEngine(_config(False), **_opt_in()) as engine:
        await engine.index(chunks, embed_fn=embedder)
        if embedder is not None:
            embedder.loop_thread = threading.get_ident()
        for query in queries[:5]:
            sync_engine.run(query)
            await engine.run(query)
        for query in queries[5:]:
            c0, t0 = time.process_time(), time.perf_counter()
            expected = sync_engine.run(query)
            c1, t1 = time.process_time(), time.perf_counter()
            got = await engine.run(query)
            c2, t2 = time.process_time(), time.perf_counter()
            if got.context != expected.context:
                sys.exit(f"(a) {len(chunks)} {mode}: a context differs from the sync facade's")
            t_sync.append((t1 - t0) * 1000)
            t_async.append((t2 - t1) * 1000)
            cpu_sync += c1 - c0
            cpu_async += c2 - c1
    on_loop = embedder.on_loop / embedder.calls if embedder is not None else 0.0
    sync_ms, async_ms = statistics.median(t_sync), statistics.median(t_async)
    return {
        "sync": sync_ms,
        "async": async_ms,
        "ratio": async_ms / sync_ms,
        "cpu_sync": cpu_sync * 1000 / n,
        "cpu_async": cpu_async * 1000 / n,
        "on_loop": on_loop,
    }


class _SleepyBatch:
    """Coroutine batch embedder: one 20 ms sleep per call, whatever the batch size."""

    def __init__(self, base: HashedEmbedder) -> None:
        self.base = base

    async def __call__(self, texts: list[Any]) -> NDArray[np.float64]:
        await anyio.sleep(EMBED_DELAY)
        return self.base.matrix(texts)


async def _many(chunks: list[Any], base: HashedEmbedder) -> dict[str, Any]:
    queries = make_queries(MANY, seed=202)

    def sleepy(text: Any) -> NDArray[np.float64]:
        if sleeping:
            time.sleep(EMBED_DELAY)
        return base.vector(text)

    sleeping = False
    sync_engine = ContextEngine(_config(True)).index(chunks, embed_fn=sleepy)
    sleeping = True
    wall = time.perf_counter()
    reference = [sync_engine.run(query).context for query in queries]
    out: dict[str, Any] = {"sync_qps": MANY / (time.perf_counter() - wall)}
    digest = hashlib.sha256()
    for c, runs in LEVELS.items():
        qps: list[float] = []
        cpu: list[float] = []
        for _ in range(runs):
            async with AsyncContextEngine(_config(True), max_in_flight=max(64, c)) as engine:
                await engine.index(chunks, batch_embed_fn=_SleepyBatch(base))
                c0, t0 = time.process_time(), time.perf_counter()
                results = await engine.run_many(queries, concurrency=c)
                qps.append(MANY / (time.perf_counter() - t0))
                cpu.append((time.process_time() - c0) * 1000 / MANY)
            contexts = [r.context for r in results]
            if contexts != reference:
                sys.exit(f"(b) c={c}: a context differs from the sync facade's")
            digest.update("".join(contexts).encode())
        out[f"qps{c}"] = statistics.median(qps)
        out[f"cpu{c}"] = statistics.median(cpu)
        out[f"x{c}"] = out[f"qps{c}"] / out["sync_qps"]
    out["digest"] = digest.hexdigest()[:12]
    return out


def measure(sizes: list[int], n_queries: int) -> dict[str, Any]:
    """One child's figures: part (a) per size and mode, then part (b) at 1,000 chunks."""
    corpus = make_corpus(max(sizes))
    base = HashedEmbedder(64)
    base.matrix([c.text for c in corpus])
    out: dict[str, Any] = {}
    for n in sizes:
        for mode in ("keyword-only", "embed_fn"):
            out[f"{n}/{mode}"] = anyio.run(_single, corpus[:n], base, mode, n_queries)
    out["many"] = anyio.run(_many, corpus[:1_000], base)
    return out


def _child(tree: Path, sizes: list[int], n_queries: int) -> dict[str, Any]:
    env = {**os.environ, "ZERDA_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
    argv = [sys.executable, __file__, "--child", "--sizes", ",".join(map(str, sizes))]
    done = subprocess.run(
        [*argv, "--queries", str(n_queries)], env=env, capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"child on {tree} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _rows(runs: list[list[dict[str, Any]]], sizes: list[int]) -> list[list[Any]]:
    """One row per figure: the median of each tree's children, and after / before."""
    figures = []
    for n in sizes:
        for mode in ("keyword-only", "embed_fn"):
            part = f"{n}/{mode}"
            figures += [
                (part, "ratio", f"(a) {n:,} {mode}: async/sync of medians", 2),
                (part, "sync", f"(a) {n:,} {mode}: sync median ms", 3),
                (part, "async", f"(a) {n:,} {mode}: async median ms", 3),
                (part, "cpu_sync", f"(a) {n:,} {mode}: sync CPU ms/query", 3),
                (part, "cpu_async", f"(a) {n:,} {mode}: async CPU ms/query", 3),
            ]
            if mode == "embed_fn":
                figures.append((part, "on_loop", f"(a) {n:,} {mode}: query calls on the loop", 2))
    figures.append(("many", "sync_qps", "(b) sync facade, one by one, q/s", 1))
    for c in LEVELS:
        figures += [
            ("many", f"x{c}", f"(b) run_many c={c}: x the sync q/s", 1),
            ("many", f"qps{c}", f"(b) run_many c={c}: q/s", 0),
            ("many", f"cpu{c}", f"(b) run_many c={c}: CPU ms/query", 3),
        ]
    rows: list[list[Any]] = []
    before, after = runs
    for part, key, label, digits in figures:
        b = statistics.median(r[part][key] for r in before)
        a = statistics.median(r[part][key] for r in after)
        ratio = f"{a / b:.2f}" if b else "-"
        rows.append([label, f"{b:.{digits}f}", f"{a:.{digits}f}", ratio])
    digests = [",".join(sorted({r["many"]["digest"] for r in side})) for side in runs]
    rows.append(["(b) contexts digest", *digests, "same" if digests[0] == digests[1] else "DIFFER"])
    return rows


def main() -> None:
    """Parse the options, alternate the children, print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="part (a) corpus sizes")
    parser.add_argument("--queries", type=int, default=None, help="part (a) timed queries")
    parser.add_argument("--rounds", type=int, default=None, help="baseline/tree child pairs")
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    n_queries = args.queries or (60 if args.quick else 300)
    rounds = args.rounds or (1 if args.quick else 3)
    if args.child:
        print(json.dumps(measure(sizes, n_queries)))
        return
    header = [
        f"Machine: {describe_machine()}",
        f"Code: {describe_revision()} against {args.baseline}; {describe_load()} at start",
        f"Method: part (a) at {', '.join(f'{n:,}' for n in sizes)} chunks, {n_queries} queries;"
        f" part (b) at 1,000 chunks, {MANY} queries, c=64 x3 and c=256 x1; {rounds}"
        " alternating child pairs, medians",
    ]
    print("\n".join(header), flush=True)
    runs: list[list[dict[str, Any]]] = [[], []]
    loads: list[str] = []
    with extract_revision(args.baseline, "zerda-single-") as base_dir:
        trees = [(runs[0], Path(base_dir)), (runs[1], _HERE.parent)]
        for pair in range(rounds):
            for side, tree in trees if pair % 2 == 0 else trees[::-1]:
                side.append(_child(tree, sizes, n_queries))
                many = side[-1]["many"]
                name = "before" if side is runs[0] else "after"
                print(
                    f"  {name}: (b) c=64 {many['qps64']:.0f} q/s ({many['x64']:.1f}x),"
                    f" c=256 {many['qps256']:.0f} q/s",
                    flush=True,
                )
            loads.append(f"{os.getloadavg()[0]:.2f}")
            print(f"  round {pair + 1}/{rounds} measured ({describe_load()})", flush=True)
    table = format_table(
        ["figure", f"before ({args.baseline})", "after (this tree)", "after / before"],
        _rows(runs, sizes),
    )
    footer = f"1-minute load after each round: {', '.join(loads)}; {describe_load()} at end"
    print(table)
    print(footer)
    write_summary(
        "single_ab", "\n\n".join(["\n".join(header), f"`{command_line()}`", table, footer])
    )


if __name__ == "__main__":
    main()

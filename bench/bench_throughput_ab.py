"""A/B of the fixed cost of a request: this tree against a git revision, in the same run.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded),
  1,000 chunks by default (``--chunks``), vectors from the 64-dim
  feature-hashing embedder of ``_common`` (its token memo warmed first).
* Two trees: ``--baseline REV`` (default ``main``) extracted with ``git
  archive`` into a temporary directory, and this tree.  Each measurement runs
  in a child process on one tree; the children alternate (``--rounds`` pairs,
  which tree goes first alternating too), so the load of the machine hits both
  alike.  Reported: the median over the rounds of each child's figure.
* **sync**: the sync facade (``sync_api.ContextEngine``, cache off, plain
  ``embed_fn`` that does not wait) answering ``--queries`` new questions one by
  one after 20 warm-ups, for the documented and the recommended profile:
  wall ms per query and process CPU ms per query (``time.process_time``).
* **run_many**: ``AsyncContextEngine.run_many`` of 256 new questions at
  concurrency 64 with a coroutine batch embedder that sleeps 20 ms per call
  (what ``bench_async.py --parts b`` measures; default configuration,
  ``max_in_flight = 64``): process CPU ms per query (all threads) and
  queries per second.
* Output digest: SHA-256 over every sync run's context, citations and used
  chunks' scores and every run_many context, per profile, so the table shows
  whether the two trees produce the same bytes.

Run ``PYTHONPATH=$PWD .venv/bin/python bench/bench_throughput_ab.py``
(``--quick`` for fewer queries and rounds).  Outputs the table on stdout and
``bench/out/throughput_ab.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
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
PROFILES = ("documented", "recommended")
EMBED_DELAY = 0.020
MANY = 256
CONCURRENCY = 64


def _config(profile: str, cache: bool) -> ContextEngineConfig:
    recommended = profile == "recommended"
    config = ContextEngineConfig.recommended() if recommended else ContextEngineConfig()
    config.cache.enabled = cache
    return config


def _digest(digest: Any, result: Any) -> None:
    digest.update(result.context.encode())
    digest.update(repr(result.citations).encode())
    for sc in result.chunks_used:
        scores = (sc.vector_score, sc.keyword_score, sc.composite_score, sc.retrieval_rank)
        digest.update(f"{sc.doc_id}|{scores!r}".encode())


def _sync(chunks: list[Any], base: HashedEmbedder, profile: str, n: int) -> dict[str, Any]:
    engine = ContextEngine(_config(profile, cache=False)).index(chunks, embed_fn=base.vector)
    queries = make_queries(20 + n, seed=31)
    for query in queries[:20]:
        engine.run(query)
    digest = hashlib.sha256()
    cpu, wall = time.process_time(), time.perf_counter()
    results = [engine.run(query) for query in queries[20:]]
    wall_ms = (time.perf_counter() - wall) * 1000 / n
    cpu_ms = (time.process_time() - cpu) * 1000 / n
    for result in results:
        _digest(digest, result)
    return {"wall": wall_ms, "cpu": cpu_ms, "digest": digest.hexdigest()[:12]}


class _SleepyBatch:
    """Coroutine batch embedder: one 20 ms sleep per call, whatever the batch size."""

    def __init__(self, base: HashedEmbedder) -> None:
        self.base = base

    async def __call__(self, texts: list[Any]) -> NDArray[np.float64]:
        await anyio.sleep(EMBED_DELAY)
        return self.base.matrix(texts)


async def _many(chunks: list[Any], base: HashedEmbedder) -> dict[str, Any]:
    queries = make_queries(MANY, seed=202)
    async with AsyncContextEngine(_config("documented", True), max_in_flight=64) as engine:
        await engine.index(chunks, batch_embed_fn=_SleepyBatch(base))
        cpu, wall = time.process_time(), time.perf_counter()
        results = await engine.run_many(queries, concurrency=CONCURRENCY)
        wall_s = time.perf_counter() - wall
        cpu_ms = (time.process_time() - cpu) * 1000 / MANY
    digest = hashlib.sha256("".join(r.context for r in results).encode()).hexdigest()[:12]
    return {"cpu": cpu_ms, "qps": MANY / wall_s, "digest": digest}


def measure(n_chunks: int, n_queries: int) -> dict[str, Any]:
    """One child's figures: sync per profile, then run_many."""
    chunks = make_corpus(n_chunks)
    base = HashedEmbedder(64)
    base.matrix([c.text for c in chunks])
    out: dict[str, Any] = {p: _sync(chunks, base, p, n_queries) for p in PROFILES}
    out["many"] = anyio.run(_many, chunks, base)
    return out


def _child(tree: Path, n_chunks: int, n_queries: int) -> dict[str, Any]:
    env = {**os.environ, "ZERDA_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
    argv = [sys.executable, __file__, "--child", "--chunks", str(n_chunks)]
    done = subprocess.run(
        [*argv, "--queries", str(n_queries)], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _rows(runs: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    """One row per figure: median of each tree's children, and after / before."""
    before, after = runs.values()
    rows: list[list[Any]] = []
    figures = [
        (p, k, f"sync {p}, {what}")
        for p in PROFILES
        for k, what in (("wall", "ms/query"), ("cpu", "CPU ms/query"))
    ]
    figures += [("many", "cpu", "run_many c=64, CPU ms/query"), ("many", "qps", "run_many, q/s")]
    for part, key, label in figures:
        b = statistics.median(r[part][key] for r in before)
        a = statistics.median(r[part][key] for r in after)
        rows.append([label, f"{b:.3f}", f"{a:.3f}", f"{a / b:.2f}"])
    for part in (*PROFILES, "many"):
        digests = [",".join(sorted({r[part]["digest"] for r in side})) for side in (before, after)]
        same = "same" if digests[0] == digests[1] else "DIFFER"
        rows.append([f"output digest, {part}", *digests, same])
    return rows


def main() -> None:
    """Parse the options, alternate the children, print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=None, help="timed sync queries")
    parser.add_argument("--rounds", type=int, default=None, help="baseline/tree child pairs")
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_queries = args.queries or (200 if args.quick else 600)
    rounds = args.rounds or (2 if args.quick else 5)
    if args.child:
        print(json.dumps(measure(args.chunks, n_queries)))
        return
    header = [
        f"Machine: {describe_machine()}",
        f"Code: {describe_revision()} against {args.baseline}; {describe_load()} at start",
        f"Method: {args.chunks:,} chunks, 64-dim hashing embedder; sync facade {n_queries} "
        f"new queries per profile (cache off); run_many {MANY} queries at c={CONCURRENCY}, "
        f"20 ms batch embedder; {rounds} alternating child pairs, medians",
    ]
    print("\n".join(header), flush=True)
    label = f"before ({args.baseline})"
    runs: dict[str, list[dict[str, Any]]] = {label: [], "after (this tree)": []}
    with extract_revision(args.baseline, "zerda-ab-") as base_dir:
        trees = [(runs[label], Path(base_dir)), (runs["after (this tree)"], _HERE.parent)]
        for pair in range(rounds):
            for side, tree in trees if pair % 2 == 0 else trees[::-1]:
                side.append(_child(tree, args.chunks, n_queries))
            print(f"  round {pair + 1}/{rounds} measured ({describe_load()})", flush=True)
    table = format_table(["figure", *runs, "after / before"], _rows(runs))
    footer = f"{describe_load()} at end"
    print(table)
    print(footer)
    summary = ["\n".join(header), f"`{command_line()}`", table, footer]
    write_summary("throughput_ab", "\n\n".join(summary))


if __name__ == "__main__":
    main()

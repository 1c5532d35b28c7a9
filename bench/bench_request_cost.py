"""The fixed cost of one sync ``run()`` at 1,000 chunks: where it goes, and the outputs' digest.

Method
------
* Corpus: ``_common.make_corpus(1000)``; queries ``_common.make_queries``
  (unseen by the engine, so the cache never answers; the cache is disabled
  as well).  ``sync_api.ContextEngine`` with the documented configuration
  (``ContextEngineConfig()``) or the recommended one, indexed with the
  64-dimensional ``_common.HashedEmbedder`` (the golden cases' embedder).
* Timing: ``time.perf_counter`` around each ``run(query)``, one at a time,
  after 20 warm-up queries; median and p90 over ``--queries`` calls.
  Defaults otherwise (multi-turn on: every run records a turn).
* Output digest: SHA-256 over every call's context, citations and used
  chunks (doc id and ``repr`` of every score), so two revisions can show
  that an optimisation changed no byte of output: run both, compare digests.
* ``--profile`` prints cProfile's top functions (by own time) over the same
  calls, the profiler's overhead included.

Run ``.venv/bin/python bench/bench_request_cost.py [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import logging
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (
    HashedEmbedder,
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    summarise,
)

from sync_api import ContextEngine, ContextEngineConfig, ContextResult

CHUNKS = 1_000
WARM_UP = 20


def _engine(profile: str) -> ContextEngine:
    config = (
        ContextEngineConfig.recommended() if profile == "recommended" else ContextEngineConfig()
    )
    config.cache.enabled = False
    engine = ContextEngine(config)
    embedder = HashedEmbedder(64)
    engine.index(make_corpus(CHUNKS), embed_fn=embedder)
    return engine


def _digest(results: list[ContextResult]) -> str:
    sha = hashlib.sha256()
    for result in results:
        sha.update(result.context.encode())
        sha.update(repr(result.citations).encode())
        for sc in result.chunks_used:
            scores = (sc.vector_score, sc.keyword_score, sc.metadata_score, sc.composite_score)
            sha.update(f"{sc.doc_id}|{scores!r}|{sc.retrieval_rank}".encode())
    return sha.hexdigest()[:16]


def _run(engine: ContextEngine, query: str) -> ContextResult:
    return engine.run(query)


def measure(profile: str, count: int, show_profile: bool) -> list[object]:
    """One table row: median and p90 ms of a run, and the outputs' digest."""
    engine = _engine(profile)
    queries = make_queries(WARM_UP + count)
    for query in queries[:WARM_UP]:
        _run(engine, query)
    timed = queries[WARM_UP:]
    times, results = [], []
    for query in timed:
        start = time.perf_counter()
        results.append(_run(engine, query))
        times.append((time.perf_counter() - start) * 1000)
    median, p90 = summarise(times)
    if show_profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for query in timed:
            _run(engine, query)
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        print(f"--- {profile}: top functions by own time over {count} runs")
        print(out.getvalue())
    return [profile, count, f"{median:.3f}", f"{p90:.3f}", _digest(results)]


def main() -> None:
    """Print the machine, the method and the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    print(describe_machine())
    print(describe_revision())
    print(describe_load())
    print(f"sync run() at {CHUNKS:,} chunks, 64-dim hashed embedder, cache off")
    rows = [measure(p, args.queries, args.profile) for p in ("documented", "recommended")]
    print(format_table(["profile", "runs", "median ms", "p90 ms", "output digest"], rows))


if __name__ == "__main__":
    main()

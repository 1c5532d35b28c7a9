"""Long articles: what lifts COVID-QA recall@20 of the recommended profile (issue 21)?

The full COVID-QA (98 articles of ~23,500 characters, 1,380 questions) cut
by the readers' span chunker with each article's title (its first line) as
``search_heading``, as ``zerda index`` gives a file its title
(``bench_headings.load_documents``).  The **articles** are split in two
halves with the quality bench's seed: questions of the *tune* half choose a
setting, questions of the *report* half confirm it.  Every question is
asked over all 98 articles (the corpus is never split), so both halves
measure the full set's difficulty.

Each row is the recommended profile with one change:

* keyword only (default) or with multilingual-e5-small (``--e5``: vectors from
  the bench's cache, ``bench/_e5_vectors.py``), its input the chunk text or,
  with ``retriever.embed_heading``, ``"<title>: <text>"``;
* ``retriever.neighbour_weight`` and ``retriever.fusion_depth``;
* the heading's weight in BM25 (the heading given k times: ``heading×k``);
* chunk size and overlap (a chunk extended by the next ``overlap`` characters
  of its article, cut at a space; a bench emulation, the product's chunker
  has no overlap).

Metrics: recall@5, recall@20 and MRR@20 of retrieve 20 -> filter -> rank (as
``bench_quality.py``); with ``--contexts`` also the answer in the default
context and in a 4,000-character one (``run()``, cache off).  A relevant
chunk holds an answer text whole (whitespace normalised), else the answer's
start: with other chunk sizes recall@20 counts other units, so compare the
context figures there.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchChunk,
    command_line,
    describe_load,
    describe_machine,
    format_table,
    quality_data_dir,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, SEED, Corpus, Question, load_corpora
from _quality_engines import engine_ranker, make_engine
from _quality_metrics import context_metrics, ranking_metrics
from bench_headings import SETS, load_documents
from bench_quality import HEADERS as QUALITY_HEADERS
from bench_quality import measure as measure_sets

from zerda_async import ContextEngineConfig
from zerda_async.core.index.chunks import SEARCH_HEADING
from zerda_async.readers import Document, chunk_document

Tweak = Callable[[ContextEngineConfig], None]


@dataclass
class Variant:
    """One row: the recommended profile with one change."""

    label: str
    tweak: Tweak = field(default=lambda _: None)
    e5: bool = False
    chunk_size: int = 400
    overlap: int = 0
    heading_times: int = 1


def _set(**retriever: Any) -> Tweak:
    def tweak(config: ContextEngineConfig) -> None:
        for name, value in retriever.items():
            setattr(config.retriever, name, value)

    return tweak


def _overlapped(corpus: Corpus, overlap: int, texts: dict[str, str]) -> Corpus:
    """Each chunk extended by the next ``overlap`` characters of its article (at a space)."""
    if overlap <= 0:
        return corpus
    chunks = []
    for chunk in corpus.chunks:
        article = texts[chunk.metadata["source"]]
        end = chunk.metadata["end"]
        stop = article.rfind(" ", end, end + overlap)
        extra = article[end : stop if stop > end else end].rstrip()
        chunks.append(BenchChunk(chunk.doc_id, chunk.text + extra, chunk.metadata))
    squashed = {c.doc_id: " ".join(c.text.split()) for c in chunks}
    questions = []
    for q in corpus.questions:
        source = next(iter(q.relevant)).rsplit("-", 2)[0]
        holders = {
            d
            for d, t in squashed.items()
            if d.startswith(source + "-") and any(" ".join(a.split()) in t for a in q.answers)
        }
        questions.append(Question(q.text, q.answers, holders or q.relevant))
    return Corpus(corpus.name, chunks, questions)


def load(chunk_size: int, overlap: int, heading_times: int, articles: int = 0) -> Corpus:
    """COVID-QA in chunks of ``chunk_size`` (+ ``overlap``), its titles as headings.

    ``articles`` > 0 keeps the first that many articles of the file (and their questions).
    """
    _, file, lang, title_of = SETS[1]
    corpus = load_documents(quality_data_dir() / file, lang, chunk_size, title_of, True)
    if articles > 0:
        kept = {f"{lang}-{a}" for a in range(articles)}
        corpus.chunks = [c for c in corpus.chunks if c.metadata["source"] in kept]
        ids = {c.doc_id for c in corpus.chunks}
        corpus.questions = [q for q in corpus.questions if q.relevant <= ids]
    if overlap:
        texts = _articles()
        _record_ends(corpus, chunk_size, texts)
        corpus = _overlapped(corpus, overlap, texts)
    if heading_times > 1:
        for chunk in corpus.chunks:
            heading = chunk.metadata.get(SEARCH_HEADING)
            if heading:
                chunk.metadata[SEARCH_HEADING] = "\n".join([heading] * heading_times)
    return corpus


def _articles() -> dict[str, str]:
    """Each article's text by its ``source``."""
    with gzip.open(quality_data_dir() / SETS[1][1], "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    return {f"en-{a}": article["paragraphs"][0]["context"] for a, article in enumerate(data)}


def _record_ends(corpus: Corpus, chunk_size: int, texts: dict[str, str]) -> None:
    """Put each chunk's end offset in its article (the readers' chunker's span) in its metadata."""
    by_source: dict[str, list[BenchChunk]] = {}
    for chunk in corpus.chunks:
        by_source.setdefault(chunk.metadata["source"], []).append(chunk)
    for source, mine in by_source.items():
        document = Document(source=source, kind="text", text=texts[source])
        for chunk, span in zip(mine, chunk_document(document, chunk_size), strict=True):
            chunk.metadata["end"] = span.end


def split(corpus: Corpus) -> tuple[list[Question], list[Question]]:
    """Questions of the tune half and of the report half of the articles (fixed seed)."""
    sources = sorted({c.metadata["source"] for c in corpus.chunks})
    tune = set(random.Random(SEED).sample(sources, len(sources) // 2))

    def source(q: Question) -> str:
        return next(iter(q.relevant)).rsplit("-", 2)[0]

    return (
        [q for q in corpus.questions if source(q) in tune],
        [q for q in corpus.questions if source(q) not in tune],
    )


def variants(e5: bool, only: str) -> list[Variant]:
    """The rows: keyword-only tweaks, then (with ``--e5``) the e5 ones."""
    rows = [
        Variant("keyword only (recommended)"),
        Variant("neighbour_weight 0", _set(neighbour_weight=0.0)),
        Variant("neighbour_weight 0.75", _set(neighbour_weight=0.75)),
        Variant("neighbour_weight 1.0", _set(neighbour_weight=1.0)),
        Variant("fusion_depth 100", _set(fusion_depth=100)),
        Variant("fusion_depth 200", _set(fusion_depth=200)),
        Variant("heading×2 in BM25", heading_times=2),
        Variant("heading×3 in BM25", heading_times=3),
        Variant("chunks of 300", chunk_size=300),
        Variant("chunks of 600", chunk_size=600),
        Variant("chunks of 800", chunk_size=800),
        Variant("400 + 100 overlap", overlap=100),
        Variant("400 + 200 overlap", overlap=200),
    ]
    if e5:
        rows += [
            Variant("e5 (recommended)", e5=True),
            Variant("e5, embed_heading", _set(embed_heading=True), e5=True),
            Variant("e5, neighbour_weight 0.75", _set(neighbour_weight=0.75), e5=True),
            Variant("e5, fusion_depth 100", _set(fusion_depth=100), e5=True),
            Variant("e5, heading×2 in BM25", e5=True, heading_times=2),
            Variant("e5, 400 + 100 overlap", e5=True, overlap=100),
            Variant(
                "e5, vector 0.6 / keyword 0.4", _set(vector_weight=0.6, keyword_weight=0.4), e5=True
            ),
            Variant(
                "e5, vector 0.4 / keyword 0.6", _set(vector_weight=0.4, keyword_weight=0.6), e5=True
            ),
            Variant("e5, chunks of 600", e5=True, chunk_size=600),
            Variant("e5, chunks of 800", e5=True, chunk_size=800),
        ]
    return [v for v in rows if any(part in v.label for part in only.split(";"))]


def measure(
    rows: Sequence[Variant], e5: E5Embedder | None, contexts: bool, limit: int, articles: int
) -> list[list[str]]:
    """One table row per variant and split."""
    out = []
    loaded: dict[tuple[int, int, int], Corpus] = {}
    for variant in rows:
        key = (variant.chunk_size, variant.overlap, variant.heading_times)
        if key not in loaded:
            loaded[key] = load(*key, articles)
        corpus = loaded[key]
        started = time.process_time()
        config = ContextEngineConfig.recommended()
        variant.tweak(config)
        engine = make_engine(config, corpus.chunks, e5 if variant.e5 else None)
        ranked = engine_ranker(engine)
        for half, questions in zip(("tune", "report"), split(corpus), strict=True):
            questions = questions[:limit] if limit else questions
            r5, r20, mrr = ranking_metrics(ranked, questions)
            row = [variant.label, half, f"{len(questions)}", f"{len(corpus.chunks):,}"]
            row += [f"{r5:.1%}", f"{r20:.1%}", f"{mrr:.3f}"]
            if contexts:
                fig = context_metrics(engine, questions, [])
                row += [f"{fig.default:.1%}", f"{fig.wide:.1%}"]
            out.append(row)
        out[-1].append(f"{time.process_time() - started:.0f} s")
        out[-2].append("")
        print(" | ".join(out[-2]), "\n" + " | ".join(out[-1]), file=sys.stderr, flush=True)
    return out


def other_sets(sizes: Sequence[int], e5: E5Embedder | None) -> str:
    """``bench_quality``'s corpora (ARCD, 20 COVID-QA articles, mixed, XQuAD across
    languages) at each chunk size: the recommended profile keyword only and with e5."""
    systems: list[Any] = [("recommended, keyword only", ContextEngineConfig.recommended, None)]
    if e5 is not None:
        systems.append(("recommended + e5", ContextEngineConfig.recommended, e5))
    rows = []
    for size in sizes:
        for row in measure_sets(load_corpora(DATA, size, 500), systems):
            rows.append([row[0], f"{size}", *row[1:]])
    return format_table([QUALITY_HEADERS[0], "chunk size", *QUALITY_HEADERS[1:]], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--e5", action="store_true", help="add the e5 rows")
    parser.add_argument("--contexts", action="store_true", help="add answer-in-context figures")
    parser.add_argument(
        "--only", default="", help="only the rows whose label holds one of these (separated by ;)"
    )
    parser.add_argument("--limit", type=int, default=0, help="at most N questions per half")
    parser.add_argument(
        "--articles", type=int, default=0, help="only the file's first N articles (0: all 98)"
    )
    parser.add_argument(
        "--other-sets",
        default="",
        metavar="SIZES",
        help="instead: bench_quality's corpora at these chunk sizes (e.g. 400,600)",
    )
    args = parser.parse_args()
    e5 = E5Embedder(E5Vectors()) if args.e5 else None
    if args.other_sets:
        sizes = [int(s) for s in args.other_sets.split(",")]
        out = f"Load: {describe_load()}\nCommand: {command_line()}\n\n" + other_sets(sizes, e5)
        print(out)
        print(f"written to {write_summary('covid-other-sets', out)}")
        return
    headers = ["system", "half", "questions", "chunks", "recall@5", "recall@20", "MRR@20"]
    if args.contexts:
        headers += ["answer in default ctx", "answer in 4,000-char ctx"]
    headers.append("CPU time")
    rows = measure(variants(args.e5, args.only), e5, args.contexts, args.limit, args.articles)
    table = format_table(headers, rows)
    text = [
        "# Long articles: COVID-QA recall@20 (bench/bench_covid.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        f"Method: COVID-QA ({args.articles or 'all 98'} articles), readers' chunker, titles as"
        " search heading, articles split tune/report (seed of bench_quality), every question"
        " over all the articles; recommended profile with one change per row.",
        "",
        table,
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('covid', out)}")


if __name__ == "__main__":
    main()

"""Does a chunk's document title (and section path) help keyword retrieval find it?

``zerda index`` cuts files with the readers' span chunker and gives BM25 each
chunk's ``search_heading`` (the document title and section path) besides its
text.  Measured here on the public sets of ``../shared/quality-data``, with
the recommended profile, keyword only, on the same questions as
``bench_quality.py`` (500 per set, its seed):

* ``split_text`` — the chunker ``bench_quality.py`` and JSON Lines use (its
  figures are the documented ones);
* the readers' chunker (chunks are slices of the text), no heading;
* the readers' chunker with the title as ``search_heading``: ARCD's article
  titles, and COVID-QA's first line (each article's title), with and without
  neighbour-aware fusion evidence (``retriever.neighbour_weight`` 0.5, the
  recommended one, against 0; every other row uses 0.5).

``--e5`` adds the titled rows with multilingual-e5-small in convex fusion
(the recommended profile's default embedder; vectors from the bench's cache,
``bench/_e5_vectors.py``): the embedder reads the chunk's text, or, with
``retriever.embed_heading``, ``"<title>: <text>"``.

Neither set marks sections, so the section half of the heading is not
measured here.  Metrics as in ``bench_quality.py``: recall@5, recall@20 and
MRR@20 of retrieve 20 → filter → rank; answer in the default context and in a
4,000-character one (``run()``, cache off).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Callable
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
from _quality_data import Corpus, Question, load_set, subsample
from _quality_engines import engine_ranker, make_engine
from _quality_metrics import WIDE_BUDGET, context_metrics, ranking_metrics

from zerda_async import ContextEngineConfig
from zerda_async.core.index.chunks import SEARCH_HEADING
from zerda_async.readers import Document, chunk_document

TitleOf = Callable[[dict[str, Any], str], str]


def _squash(text: str) -> str:
    return " ".join(text.split())


def load_documents(
    path: Path,
    lang: str,
    chunk_size: int,
    title_of: TitleOf,
    heading: bool,
    size_of: Callable[[int], int] | None = None,
) -> Corpus:
    """Chunks of the readers' chunker (with the title as search heading when ``heading``).

    ``size_of(article length)`` gives each article's chunk size instead of
    ``chunk_size`` (``bench_long_chunks.py``'s rule by document length).
    """
    corpus = Corpus(lang)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    for a, article in enumerate(data):
        size = chunk_size
        if size_of is not None:
            size = size_of(sum(len(p["context"]) + 2 for p in article["paragraphs"]))
        number = 0
        for p, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            title = title_of(article, context)
            document = Document(source=f"{lang}-{a}", kind="text", text=context, title=title)
            chunks = chunk_document(document, size)
            ids = [f"{lang}-{a}-{p}-{i}" for i in range(len(chunks))]
            for doc_id, chunk in zip(ids, chunks, strict=True):
                # "chunk": the place in the article, numbered as zerda index numbers a file's.
                meta: dict[str, Any] = {"source": f"{lang}-{a}", "lang": lang, "chunk": number}
                number += 1
                if heading and title:
                    meta[SEARCH_HEADING] = title
                corpus.chunks.append(BenchChunk(doc_id=doc_id, text=chunk.text, metadata=meta))
            squashed = [_squash(c.text) for c in chunks]
            for qa in paragraph["qas"]:
                answers = [ans["text"] for ans in qa["answers"] if ans["text"].strip()]
                if not answers:
                    continue
                relevant = {
                    ids[i] for i, t in enumerate(squashed) if any(_squash(x) in t for x in answers)
                }
                if not relevant and chunks:
                    at = qa["answers"][0]["answer_start"]
                    holder = max((i for i, c in enumerate(chunks) if c.start <= at), default=0)
                    relevant = {ids[holder]}
                corpus.questions.append(Question(qa["question"], answers, relevant))
    return corpus


SETS: list[tuple[str, str, str, TitleOf]] = [
    ("Arabic (ARCD)", "arcd-train.json.gz", "ar", lambda article, _: str(article.get("title", ""))),
    (
        "English (COVID-QA)",
        "covid-qa.json.gz",
        "en",
        lambda _, context: context.split("\n", 1)[0].strip(),
    ),
]


def measure(data: Path, chunk_size: int, count: int, e5: Any = None) -> list[list[str]]:
    """One row per set and chunking (and, with ``e5``, the titled chunks with e5 too)."""
    rows = []
    for name, file, lang, title_of in SETS:
        titled = load_documents(data / file, lang, chunk_size, title_of, True)
        variants = [
            ("split_text (bench_quality's)", load_set(data / file, name, lang, chunk_size), 0.5),
            (
                "readers' chunker",
                load_documents(data / file, lang, chunk_size, title_of, False),
                0.5,
            ),
            ("readers' chunker + title, no neighbours (before)", titled, 0.0),
            ("readers' chunker + title as search heading", titled, 0.5),
        ]
        if e5 is not None:
            variants += [
                ("readers' chunker + title, no neighbours (before) + e5", titled, 0.0),
                ("readers' chunker + title as search heading + e5", titled, 0.5),
                ("readers' chunker + title, embed_heading + e5", titled, 0.5),
            ]
        for label, corpus, neighbours in variants:
            started = time.perf_counter()
            questions = subsample(corpus.questions, count)
            config = ContextEngineConfig.recommended()
            config.retriever.neighbour_weight = neighbours
            config.retriever.embed_heading = "embed_heading" in label
            engine = make_engine(config, corpus.chunks, e5 if label.endswith("e5") else None)
            r5, r20, mrr = ranking_metrics(engine_ranker(engine), questions)
            fig = context_metrics(engine, questions, [])
            rows.append(
                [
                    name,
                    label,
                    f"{len(corpus.chunks):,}",
                    f"{r5:.1%}",
                    f"{r20:.1%}",
                    f"{mrr:.3f}",
                    f"{fig.default:.1%}",
                    f"{fig.wide:.1%}",
                    f"{time.perf_counter() - started:.0f} s",
                ]
            )
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=quality_data_dir())
    parser.add_argument("--chunk-size", type=int, default=400)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument(
        "--e5", action="store_true", help="add the titled rows with e5 (bench/_e5_vectors.py)"
    )
    args = parser.parse_args()
    e5 = E5Embedder(E5Vectors()) if args.e5 else None
    headers = [
        "set",
        "chunking",
        "chunks",
        "recall@5",
        "recall@20",
        "MRR@20",
        "answer in default ctx",
        f"answer in {WIDE_BUDGET:,}-char ctx",
        "time",
    ]
    text = [
        "# Title as search heading (bench/bench_headings.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        f"Method: recommended profile, keyword only, chunks of at most {args.chunk_size}"
        f" characters, {args.questions} questions per set (bench_quality's seed).",
        "",
        format_table(headers, measure(args.data, args.chunk_size, args.questions, e5)),
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('headings', out)}")


if __name__ == "__main__":
    main()

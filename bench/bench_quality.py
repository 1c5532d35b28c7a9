"""Context quality on public question-answering data: does the context hold the answer?

Data (``bench/_quality_data.py``; ``--data DIR``): ARCD (Arabic), COVID-QA
(English; ``--covid-articles``, default 20 of its 98 articles, so that
embedding it with e5 stays bounded), a mixed corpus of both, and XQuAD's public
half across languages (Arabic questions over English paragraphs, English over
Arabic).  Chunks of ``--chunk-size`` characters (default 400, the command
line's) by the product's own chunker.

Measured per system, on the same questions:

* recall@5, recall@20 and MRR@20 of the ranked list (retrieve 20 -> filter ->
  rank, with the profile's own components);
* answer-in-context: the share of questions whose ``run()`` context contains an
  answer text (normalised: Arabic tashkeel/tatweel removed and alef unified,
  case-folded), at the profile's default budget and at 4,000 characters;
* "nothing relevant" flags on answerable questions (false) and on off-topic
  ones (another set's questions).

Systems: the documented profile (keyword only); the recommended one keyword
only, with and without its neighbour-aware fusion evidence
(``retriever.neighbour_weight`` 0.5 / 0; chunks carry ``source`` and their
``chunk`` number in the article, as ``zerda index`` gives them), and with
Snowball Arabic (``--snowball``); with
``zerda_async.embedders.default_embedder()`` when one is installed; with
multilingual-e5-small (the product's ``E5Embedder``, ``bench/_e5_vectors.py``,
vectors cached on disk): e5 cosine alone, the recommended profile with e5 and no
keyword search, with e5 and the previous RRF fusion, and with e5 and convex
fusion (today's recommended, and the same without neighbours); and
``bm25s`` (default tokenisation, no stemmer) as the reference.  Reference
rows (cosine alone, bm25s) rank only.

Questions are subsampled with a fixed seed (``--questions``, default 500 per
set); ``--only TEXT`` measures only the corpora whose name contains it;
``--same-language`` adds XQuAD's questions over their own language's
paragraphs (Wikipedia, like the held-out sets; no off-topic questions).
``--floor`` adds the trade-off of ``composer.min_vector_margin``; ``--latency``
also times ``run()`` of both profiles over 100,000 synthetic chunks.
``--held-out`` keeps only the answerable questions of odd articles: e5's floor,
script direction and question map were fitted on the even ones, so only this
half says what they do on questions they have not seen.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors, cosine_ranker, e5_line
from _quality_data import DATA, OFF_TOPIC, SEED, Corpus, half_of, load_corpora, load_set
from _quality_engines import (
    bm25s_ranker,
    default_embedder,
    embedder_line,
    engine_ranker,
    make_engine,
)
from _quality_latency import latency
from _quality_metrics import WIDE_BUDGET, context_metrics, ranking_metrics
from _vector_floor import FLOOR_HEADERS, floor_sweep

from zerda_async import ContextEngineConfig

Profile = tuple[str, Callable[[], ContextEngineConfig] | str, Any]
"""(label, config factory or the name of a ranking-only reference, embedder)."""


def _rrf_profile() -> ContextEngineConfig:
    """The recommended profile as it was before convex fusion: weighted RRF, keywords x2."""
    config = ContextEngineConfig.recommended()
    config.retriever.fusion = "rrf"
    config.retriever.vector_weight, config.retriever.keyword_weight = 0.5, 1.0
    config.composer.min_vector_margin = 0.0
    return config


def _embedder_only() -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.use_keyword = False
    return config


def _no_neighbours() -> ContextEngineConfig:
    """The recommended profile before neighbour-aware fusion evidence (``neighbour_weight`` 0)."""
    config = ContextEngineConfig.recommended()
    config.retriever.neighbour_weight = 0.0
    return config


def profiles(embedder: Any, e5: E5Embedder | None, snowball: bool) -> list[Profile]:
    """(label, config factory or reference name, embedder) of every measured system."""

    def snowball_config() -> ContextEngineConfig:
        config = ContextEngineConfig.recommended()
        config.retriever.text_analyzer = "multilingual-snowball"
        return config

    rows: list[Profile] = [
        ("documented, keyword only", ContextEngineConfig, None),
        ("recommended without neighbours, keyword only", _no_neighbours, None),
        ("recommended, keyword only", ContextEngineConfig.recommended, None),
    ]
    if snowball:
        rows.append(("recommended + Snowball Arabic, keyword only", snowball_config, None))
    if embedder is not None:
        rows.append((f"recommended + {embedder.name}", ContextEngineConfig.recommended, embedder))
    if e5 is not None:
        rows += [
            ("e5 cosine alone", "cosine", e5),
            ("recommended, e5 only (no keywords)", _embedder_only, e5),
            ("recommended + e5, RRF (previous fusion)", _rrf_profile, e5),
            ("recommended without neighbours + e5", _no_neighbours, e5),
            ("recommended + e5 (convex fusion)", ContextEngineConfig.recommended, e5),
        ]
    rows.append(("bm25s (default tokenisation)", "bm25s", None))
    return rows


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def measure(corpora: Sequence[Corpus], systems: Sequence[Profile]) -> list[list[Any]]:
    """One table row per corpus and system."""
    rows = []
    for corpus in corpora:
        for label, factory, emb in systems:
            started = time.perf_counter()
            if isinstance(factory, str):
                ranker = (
                    bm25s_ranker(corpus.chunks)
                    if factory == "bm25s"
                    else cosine_ranker(corpus.chunks, emb)
                )
                r5, r20, mrr = ranking_metrics(ranker, corpus.questions)
                ctx: list[str] = ["—"] * 5
            else:
                engine = make_engine(factory(), corpus.chunks, emb)
                r5, r20, mrr = ranking_metrics(engine_ranker(engine), corpus.questions)
                fig = context_metrics(engine, corpus.questions, corpus.off_topic)
                ctx = [
                    f"{fig.default:.1%}",
                    f"{fig.wide:.1%}",
                    f"{fig.mean_len:,.0f}",
                    _percent(fig.false_flags),
                    _percent(fig.off_topic),
                ]
            rows.append(
                [
                    corpus.name,
                    label,
                    f"{r5:.1%}",
                    f"{r20:.1%}",
                    f"{mrr:.3f}",
                    *ctx,
                    f"{time.perf_counter() - started:.0f} s",
                ]
            )
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    return rows


HEADERS = [
    "corpus",
    "system",
    "recall@5",
    "recall@20",
    "MRR@20",
    "answer in default ctx",
    f"answer in {WIDE_BUDGET:,}-char ctx",
    "mean default ctx chars",
    "false 'nothing relevant'",
    "off-topic flagged",
    "time",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--chunk-size", type=int, default=400)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--snowball", action="store_true", help="add the Snowball Arabic row")
    parser.add_argument("--latency", action="store_true", help="also time run() at 100k chunks")
    parser.add_argument(
        "--covid-articles", type=int, default=20, help="COVID-QA articles measured (0: all 98)"
    )
    parser.add_argument(
        "--no-default-embedder", action="store_true", help="skip the default embedder's row"
    )
    parser.add_argument("--no-e5", action="store_true", help="skip the e5 rows")
    parser.add_argument(
        "--only", default="", help="measure only the corpora whose name contains this text"
    )
    parser.add_argument(
        "--same-language",
        action="store_true",
        help="add XQuAD's English and Arabic questions over their own language's paragraphs",
    )
    parser.add_argument(
        "--floor", action="store_true", help="add the min_vector_margin trade-off (needs e5)"
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="answerable questions of odd articles only (the half no calibration was fitted on)",
    )
    args = parser.parse_args()

    corpora = load_corpora(args.data, args.chunk_size, args.questions, args.covid_articles)
    if args.same_language:
        for file, name, lang in (
            ("xquad-en-public.json.gz", "English questions -> English (XQuAD)", "xen"),
            ("xquad-ar-public.json.gz", "Arabic questions -> Arabic (XQuAD)", "xar"),
        ):
            corpora.append(load_set(args.data / file, name, lang, args.chunk_size))
    measured = [c for c in corpora if args.only in c.name]
    if args.held_out:
        for corpus in measured:
            corpus.questions = [q for q in corpus.questions if half_of(q) == "held-out"]
    embedder = None if args.no_default_embedder else default_embedder()
    e5 = None if args.no_e5 else E5Embedder(E5Vectors())
    rows = measure(measured, profiles(embedder, e5, args.snowball))
    sizes = ", ".join(
        f"{c.name}: {len(c.chunks):,} chunks, {len(c.questions)} questions" for c in measured
    )
    text = [
        "# Context quality (bench/bench_quality.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        f"Method: chunks of at most {args.chunk_size} characters (split_text); {sizes};"
        f" questions subsampled with seed {SEED}; off-topic: {OFF_TOPIC} questions of"
        " another set in another language (Arabic: COVID-QA's; English: ARCD's; Arabic ->"
        " English: ARCD's; English -> Arabic: COVID-QA's; the mixed corpus has none)."
        " Cross-lingual: XQuAD's Arabic questions over its English paragraphs and the"
        " reverse (a question's relevant chunks and answers are its twin's). Ranking"
        " metrics: retrieve 20, filter, rank; contexts: run(), cache off."
        + (" Held-out half only (odd articles)." if args.held_out else ""),
        embedder_line(embedder, [q.text for q in corpora[2].questions]),
        e5_line(e5, [q.text for q in corpora[2].questions]),
        "",
        format_table(HEADERS, rows),
    ]
    if args.floor and e5 is not None:
        margins = (0.0, 0.04, 0.05, 0.06, 0.07)
        text += [
            "",
            "Relevance floor: composer.min_vector_margin, recommended profile + e5 (0 = keywords"
            " alone decide, as before):",
            "",
            format_table(FLOOR_HEADERS, floor_sweep(corpora, make_engine, e5, margins)),
        ]
    if args.latency:
        text += [
            "",
            "run() latency, cache off, synthetic corpus (median of 300 queries):",
            "",
            format_table(
                ["profile", "retrieval", "chunks", "queries", "median run()", "vs documented"],
                latency(100_000, 300, 512),
            ),
        ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('quality', out)}")


if __name__ == "__main__":
    main()

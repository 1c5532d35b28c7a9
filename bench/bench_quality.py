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
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchChunk,
    HashedEmbedder,
    command_line,
    describe_load,
    describe_machine,
    format_table,
    make_corpus,
    make_queries,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors, cosine_ranker, e5_line
from _quality_data import (
    DATA,
    OFF_TOPIC,
    SEED,
    Corpus,
    Question,
    load_corpora,
    load_set,
    normalise,
)
from _vector_floor import FLOOR_HEADERS, floor_sweep

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig

WIDE_BUDGET = 4000
Ranked = Callable[[str], list[str]]


def engine_ranker(engine: ContextEngine) -> Ranked:
    """The profile's ranked doc ids: retrieve 20, filter, rank (its own components)."""
    state = engine._state

    retriever = state.retriever
    assert retriever is not None, "index the engine first"

    def ranked(query: str) -> list[str]:
        analysis = state.analyzer.analyze(query)
        found = retriever.retrieve(query, 20)
        kept = state.chunk_filter.filter(found)
        return [sc.doc_id for sc in state.ranker.rank(kept, analysis, 20)]

    return ranked


def bm25s_ranker(chunks: Sequence[BenchChunk]) -> Ranked:
    """bm25s with its default tokenisation (English stop words, no stemmer)."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([c.text for c in chunks], show_progress=False), show_progress=False
    )
    ids = [c.doc_id for c in chunks]

    def ranked(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        k = min(20, len(ids))
        docs, _ = retriever.retrieve(tokens, k=k, show_progress=False)
        return [ids[int(i)] for i in docs[0]]

    return ranked


class CachedEmbedder:
    """A batch embedder that embeds each distinct text once per bench run.

    The mixed corpus repeats the other two, and every question is embedded by
    ranking, by the default context and by the wide one: the memo keeps the
    run to a few minutes.  ``texts`` and ``seconds`` count the real embedding
    work (the indexing throughput reported with the table).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = type(inner).__name__
        self._memo: dict[str, Any] = {}
        self.texts = 0
        self.seconds = 0.0

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        import numpy as np

        items = [str(t or "") for t in texts]
        missing = list(dict.fromkeys(t for t in items if t not in self._memo))
        if missing:
            started = time.perf_counter()
            rows = self.inner.embed_batch(missing)
            self.seconds += time.perf_counter() - started
            self.texts += len(missing)
            self._memo.update(zip(missing, rows, strict=True))
        return np.stack([self._memo[t] for t in items])

    def __call__(self, text: Any) -> Any:
        return self.embed_batch([text])[0]


def make_engine(config: ContextEngineConfig, chunks: Sequence[BenchChunk], embedder: Any) -> Any:
    """A sync engine over ``chunks``, its vectors embedded in batches when ``embedder`` is set.

    The facade's ``index()`` takes only ``embed_fn`` (one call per chunk); the
    engine state takes the batch form too, as the async engine does.  The
    batch function embeds the chunks and ``embed_fn`` the queries, so an
    asymmetric embedder (e5: ``passage: `` / ``query: ``) gets each its form.
    """
    config.cache.enabled = False
    engine = ContextEngine(config)
    if embedder is None:
        engine.index(list(chunks))
    else:
        engine._state.index(list(chunks), embedder, batch_embed_fn=embedder.embed_batch)
    return engine


def default_embedder() -> CachedEmbedder | None:
    """``zerda_async.embedders.default_embedder()`` (memoised), or None when none is installed."""
    from zerda_async.embedders import default_embedder as factory

    found = factory()
    return None if found is None else CachedEmbedder(found)


# -- measuring ----------------------------------------------------------------------------


def ranking_metrics(ranked: Ranked, questions: Sequence[Question]) -> tuple[float, float, float]:
    """recall@5, recall@20 and MRR@20 over ``questions``."""
    r5 = r20 = mrr = 0.0
    for q in questions:
        ids = ranked(q.text)[:20]
        first = next((i for i, d in enumerate(ids) if d in q.relevant), None)
        if first is not None:
            r20 += 1
            r5 += first < 5
            mrr += 1 / (first + 1)
    n = len(questions)
    return r5 / n, r20 / n, mrr / n


@dataclass
class ContextFigures:
    """What the contexts of one profile measure on one corpus."""

    default: float  # answer in the default context
    wide: float  # answer in a WIDE_BUDGET context
    mean_len: float  # mean default context length (characters)
    false_flags: float  # answerable questions reported as "nothing relevant"
    off_topic: float | None  # questions of the other language's set reported so


def context_metrics(
    engine: Any, questions: Sequence[Question], off_topic: Sequence[Question]
) -> ContextFigures:
    """Answer in the default and the wide context, mean default length, relevance flags."""
    default = wide = flagged = 0
    lengths = []
    for q in questions:
        answers = [normalise(a) for a in q.answers]
        result = engine.run(q.text, use_history=False, record_turn=False)
        lengths.append(len(result.context))
        default += any(a in normalise(result.context) for a in answers)
        flagged += result.nothing_relevant
        ctx = engine.run(
            q.text, override_budget=WIDE_BUDGET, use_history=False, record_turn=False
        ).context
        wide += any(a in normalise(ctx) for a in answers)
    off = sum(
        engine.run(q.text, use_history=False, record_turn=False).nothing_relevant for q in off_topic
    )
    n = len(questions)
    return ContextFigures(
        default / n,
        wide / n,
        statistics.fmean(lengths),
        flagged / n,
        off / len(off_topic) if off_topic else None,
    )


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


class _SyntheticBatch:
    """``HashedEmbedder`` with the batch form: the same vectors for both profiles."""

    def __init__(self, dim: int) -> None:
        self._inner = HashedEmbedder(dim)

    def __call__(self, text: Any) -> Any:
        return self._inner.vector(text)

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return self._inner.matrix(texts)


def _median_run_ms(engine: Any, queries: Sequence[str]) -> float:
    for q in queries[:20]:  # warm-up: caches of term weights and analysed chunks
        engine.run(q, use_history=False, record_turn=False)
    times = []
    for q in queries:
        start = time.perf_counter()
        engine.run(q, use_history=False, record_turn=False)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def latency(n_chunks: int, n_queries: int, dim: int) -> list[list[Any]]:
    """Median ``run()`` of both profiles (cache off) over synthetic chunks.

    Keyword only, then hybrid with the same synthetic ``dim``-dimensional vectors
    for both profiles (the default embedder's size; its own query time is
    measured apart), so the rows compare the pipelines, not the embedders.
    """
    chunks = make_corpus(n_chunks)
    queries = make_queries(n_queries)
    rows: list[list[Any]] = []
    for mode, embedder in (("keyword only", None), (f"hybrid, {dim} dims", _SyntheticBatch(dim))):
        medians: dict[str, float] = {}
        for label, factory in (
            ("documented", ContextEngineConfig),
            ("recommended", ContextEngineConfig.recommended),
        ):
            engine = make_engine(factory(), chunks, embedder)
            medians[label] = _median_run_ms(engine, queries)
            del engine  # one index in memory at a time
            rows.append(
                [
                    label,
                    mode,
                    f"{n_chunks:,}",
                    len(queries),
                    f"{medians[label]:.2f} ms",
                    f"{medians[label] / medians['documented']:.2f}x",
                ]
            )
    return rows


def embedder_line(embedder: CachedEmbedder | None, queries: Sequence[str]) -> str:
    """Indexing throughput and query time of the default embedder, as measured in this run."""
    if embedder is None or not embedder.texts:
        return "Default embedder: none installed."
    inner = embedder.inner
    times = []
    for q in queries[:200]:
        start = time.perf_counter()
        inner(q)
        times.append((time.perf_counter() - start) * 1000)
    rate = embedder.texts / embedder.seconds
    return (
        f"Default embedder: {embedder.name} ({inner!r}); indexing embedded "
        f"{embedder.texts:,} distinct texts in {embedder.seconds:.1f} s "
        f"({rate:,.0f} texts/s, batches of up to 512); one query "
        f"{statistics.median(times):.2f} ms median."
    )


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
    args = parser.parse_args()

    corpora = load_corpora(args.data, args.chunk_size, args.questions, args.covid_articles)
    if args.same_language:
        for file, name, lang in (
            ("xquad-en-public.json.gz", "English questions -> English (XQuAD)", "xen"),
            ("xquad-ar-public.json.gz", "Arabic questions -> Arabic (XQuAD)", "xar"),
        ):
            corpora.append(load_set(args.data / file, name, lang, args.chunk_size))
    measured = [c for c in corpora if args.only in c.name]
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
        " metrics: retrieve 20, filter, rank; contexts: run(), cache off.",
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

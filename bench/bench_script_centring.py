"""Per-script centring of e5-small's cosines on bilingual corpora: the vector list and the engine.

multilingual-e5-small's cosines between scripts sit lower than within one,
so in a corpus of Arabic and English chunks an Arabic question's English
answer is outranked by Arabic chunks on other topics.  The bench measures
two corrections that need only the mean of each script's chunk vectors
(``m_ar``, ``m_other``, unit rows, from the corpus itself):

* ``mean-centred``: a chunk of script ``s`` scores ``cos(q, c) - q . m_s``
  (its cosine less the question's mean cosine over that script's chunks).
  In a one-script corpus this is one shift for every chunk: the ranking is
  unchanged.  It needs the chunk's script inside the scan.
* ``projected``: the question vector loses its component along the
  direction between the two means, ``d = m_ar - m_other``:
  ``q' = q - (q . d^) d^``, and the scan runs as before with ``q'``.  For a
  chunk sitting at its script's mean along ``d`` the score differs from the
  mean-centred one by a constant; it is one query vector, so every index
  placement (an SQL or HNSW scan too) serves it unchanged.  Only a corpus
  holding both scripts has a ``d``: a one-script corpus is untouched.

The engine ships a third flavour: ``projected`` along a fixed direction
that the embedder carries (``E5Embedder.script_direction``, measured here
with ``--direction``: the tune half's chunks of the four sets, averaged by
script), applied with ``retriever.script_centring`` (``core.script_centring``)
whatever the corpus, since the engine keeps no per-script means.

Part 1 ranks every chunk of each corpus by the four scores (numpy over the
cached vectors) and prints recall@20/@50 and MRR@20 of the answer chunk for
``bench_floor.py``'s answerable sets, plus English questions over a
bilingual corpus whose answer is Arabic (XQuAD en over XQuAD ar + COVID-QA,
the mirror of the floor bench's XQuAD ar over XQuAD en + ARCD).  Part 2
runs the recommended engine (sync facade, convex fusion) over the whole
floor-bench plan plus that mirror, every question through three settings in
turn on the same engine: before (no centring, ``E5_FLOOR`` as fitted before
it), centred with ``E5_MARGIN_FLOOR``, and centred with ``E5_FLOOR`` (the
recommended profile): the share flagged "nothing relevant" and the share
whose default context holds an answer.  Halves as in ``bench_floor.py``
(even articles tune, odd held-out).

    PYTHONPATH=$PWD python bench/bench_script_centring.py [--per-half 150] [--no-engine]
    PYTHONPATH=$PWD python bench/bench_script_centring.py --direction   # E5_DIRECTION's code
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchChunk, describe_load, describe_machine, format_table
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Question, normalise
from bench_floor import Plan, build, halves, make_engine, twins

from zerda_async.core.floor_model import FloorModel, FloorWeights, MarginRule, script_of
from zerda_async.core.vector_floor import Floor
from zerda_async.embedders import E5_FLOOR, E5_MARGIN_FLOOR
from zerda_async.embedders import E5Embedder as ProductE5

Matrix = NDArray[np.float64]
SCORES = ("plain cosine", "mean-centred", "projected", "shipped direction")


def unit(rows: Any) -> Matrix:
    m = np.asarray(rows, dtype=np.float64)
    out: Matrix = m / np.linalg.norm(m, axis=-1, keepdims=True)
    return out


def script_means(vectors: Matrix, scripts: Sequence[str]) -> dict[str, Matrix]:
    """The mean of each script's unit chunk vectors."""
    tags = np.asarray(scripts)
    return {s: vectors[tags == s].mean(axis=0) for s in sorted(set(scripts))}


def direction(means: dict[str, Matrix]) -> Matrix | None:
    """The unit direction from the other script's mean to the Arabic one (None: one script)."""
    if len(means) < 2:
        return None
    d = means["ar"] - means["other"]
    return d / np.linalg.norm(d)


def project(query: Matrix, d: Matrix | None) -> Matrix:
    """``query`` less its component along ``d``."""
    return query if d is None else query - float(query @ d) * d


def tune_direction(corpora: dict[str, list[BenchChunk]], vectors: E5Vectors) -> Matrix:
    """The shipped direction's measurement: script means of the tune half's chunks.

    The chunks of the even articles of the four sets (XQuAD en and ar, ARCD,
    COVID-QA), unit passage vectors, averaged by script.
    """
    rows: dict[str, list[Matrix]] = {}
    for name in ("XQuAD en", "XQuAD ar", "ARCD", "COVID-QA"):
        tune = [c for c in corpora[name] if int(c.doc_id.split("-")[1]) % 2 == 0]
        matrix = unit(vectors.passages([c.text for c in tune]))
        for script in ("ar", "other"):
            picked = [i for i, c in enumerate(tune) if script_of(c.text) == script]
            rows.setdefault(script, []).append(matrix[picked])
    means = {s: np.concatenate(r).mean(axis=0) for s, r in rows.items()}
    d = direction(means)
    assert d is not None
    return d


def direction_code(d: Matrix) -> str:
    """``d`` as the source of ``zerda_async/embedders/_e5_direction.py``'s constant."""
    values = [f"{float(v):.6f}" for v in d]
    lines = [", ".join(values[i : i + 8]) + "," for i in range(0, len(values), 8)]
    body = "\n".join(f"        {line}" for line in lines)
    return f"E5_DIRECTION = ScriptDirection(\n    (\n{body}\n    )\n)"


def extended(covid_articles: int, data: Path = DATA) -> tuple[dict[str, list[BenchChunk]], Plan]:
    """The floor bench's corpora and plan, plus English questions over XQuAD ar + COVID-QA."""
    corpora, plan = build(data, covid_articles)
    corpora["mixed: XQuAD ar + COVID-QA"] = corpora["XQuAD ar"] + corpora["COVID-QA"]
    en = {label: qs for _, label, qs, _ in plan if label == "XQuAD en"}["XQuAD en"]
    ar = {label: qs for _, label, qs, _ in plan if label == "XQuAD ar"}["XQuAD ar"]
    kind = "answerable, mixed corpus, other language"
    plan.append((kind, "XQuAD en", twins(en, ar), "mixed: XQuAD ar + COVID-QA"))
    return corpora, plan


def ranks(
    shipped: Matrix,
    vectors: Matrix,
    scripts: Sequence[str],
    ids: Sequence[str],
    qs: Matrix,
    questions: Sequence[Question],
) -> dict[str, list[int]]:
    """Per score: each question's rank of its best relevant chunk (1 = first)."""
    means = script_means(vectors, scripts)
    d = direction(means)
    tags = np.asarray(scripts)
    out: dict[str, list[int]] = {s: [] for s in SCORES}
    for q, question in zip(qs, questions, strict=True):
        plain = vectors @ q
        centred = plain.copy()
        for s, m in means.items():
            centred[tags == s] -= float(q @ m)
        projected = vectors @ unit(project(q, d))
        centring = vectors @ unit(project(q, shipped))
        relevant = [i for i, doc in enumerate(ids) if doc in question.relevant]
        for name, score in zip(SCORES, (plain, centred, projected, centring), strict=True):
            order = np.argsort(-np.round(score, 12), kind="stable")
            at = np.empty(len(order), dtype=np.int64)
            at[order] = np.arange(1, len(order) + 1)
            out[name].append(int(at[relevant].min()))
    return out


def vector_lists(
    corpora: dict[str, list[BenchChunk]], plan: Plan, per_half: int, vectors: E5Vectors
) -> str:
    """Part 1's table (``shipped direction``: ``E5Embedder.script_direction``)."""
    shipped = np.asarray(ProductE5.script_direction.unit)
    rows = []
    for kind, label, questions, corpus in plan:
        if not kind.startswith("answerable"):
            continue
        chunks = corpora[corpus]
        matrix = unit(vectors.passages([c.text for c in chunks]))
        scripts = [script_of(c.text) for c in chunks]
        ids = [c.doc_id for c in chunks]
        for half, picked in halves(questions, per_half).items():
            qs = unit(vectors.queries([q.text for q in picked]))
            found = ranks(shipped, matrix, scripts, ids, qs, picked)
            row: list[Any] = [
                half,
                kind.removeprefix("answerable, "),
                f"{label} -> {corpus}",
                len(picked),
            ]
            for name in SCORES:
                r = np.asarray(found[name])
                mrr = float(np.mean(np.where(r <= 20, 1.0 / r, 0.0)))
                row.append(f"{np.mean(r <= 20):.1%} / {np.mean(r <= 50):.1%} / {mrr:.3f}")
            rows.append(row)
    headers = ["half", "kind", "questions -> chunks", "n"] + [
        f"{s}: r@20 / r@50 / MRR@20" for s in SCORES
    ]
    return format_table(headers, sorted(rows, key=lambda r: (r[0] != "tune", r[1], r[2])))


FLOOR_BEFORE = FloorModel(
    same=FloorWeights(-60.5014, (67.869, 45.7422, 7.214, 1.8868)),
    cross=FloorWeights(-22.8246, (25.2675, 60.5256, 5.952, -0.0375)),
    depth=50,
    cross_alone=MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree),
)
"""``E5_FLOOR`` as fitted on cosines without script centring (before this bench)."""

SETTINGS: list[tuple[str, bool, Floor]] = [
    ("before (no centring, E5_FLOOR of before)", False, FLOOR_BEFORE),
    ("centred, E5_MARGIN_FLOOR", True, E5_MARGIN_FLOOR),
    ("centred, E5_FLOOR (recommended)", True, E5_FLOOR),
]
"""Part 2's engines: (label, retriever.script_centring, the floor)."""


def setting_engines(chunks: list[BenchChunk], vectors: E5Vectors) -> list[Any]:
    """One engine per setting over ``chunks``: its ``retriever.script_centring``, and
    an e5 wrapper carrying its floor over the same cached vectors."""
    out = []
    for _, centring, floor in SETTINGS:
        engine = make_engine(chunks, E5Embedder(vectors, vector_floor=floor))
        engine.config.retriever.script_centring = centring
        out.append(engine)
    return out


def run(engines: list[Any], q: Question, answerable: bool) -> list[tuple[bool, bool]]:
    """Per setting: (flagged "nothing relevant", an answer in the default context)."""
    answers = [normalise(a) for a in q.answers]
    out = []
    for engine in engines:
        result = engine.run(q.text, use_history=False, record_turn=False)
        context = normalise(result.context)
        found = answerable and any(a in context for a in answers)
        out.append((bool(result.nothing_relevant), found))
    return out


def engines(
    corpora: dict[str, list[BenchChunk]], plan: Plan, per_half: int, vectors: E5Vectors
) -> str:
    """Part 2's tables: flags and answers in context per setting, every question in turn."""
    built: dict[str, list[Any]] = {}
    totals: dict[tuple[str, str, str], list[float]] = {}
    for kind, label, questions, corpus in plan:
        if corpus not in built:
            built[corpus] = setting_engines(corpora[corpus], vectors)
        answerable = kind.startswith("answerable")
        for half, picked in halves(questions, per_half).items():
            for what in ("flagged", "answer in context") if answerable else ("flagged",):
                row = totals.setdefault((what, half, kind), [0.0] * (len(SETTINGS) + 1))
                row[0] += len(picked)
            for q in picked:
                for i, (flag, found) in enumerate(run(built[corpus], q, answerable)):
                    totals[("flagged", half, kind)][i + 1] += flag
                    if answerable:
                        totals[("answer in context", half, kind)][i + 1] += found
            print(f"{half} | {kind} | {label} -> {corpus}", file=sys.stderr, flush=True)
    rows = [
        [what, half, kind, int(t[0])] + [f"{x / max(1.0, t[0]):.1%}" for x in t[1:]]
        for (what, half, kind), t in sorted(totals.items())
    ]
    return format_table(["share", "half", "kind", "n"] + [s[0] for s in SETTINGS], rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)
    parser.add_argument("--no-engine", action="store_true", help="part 1 only")
    parser.add_argument("--direction", action="store_true", help="print E5_DIRECTION's code")
    args = parser.parse_args(argv)
    corpora, plan = extended(args.covid_articles)
    vectors = E5Vectors()
    if args.direction:
        print(direction_code(tune_direction(corpora, vectors)))
        return
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}")
    print("\nPart 1, the vector list alone (every chunk ranked):\n")
    print(vector_lists(corpora, plan, args.per_half, vectors))
    if not args.no_engine:
        print(
            "\nPart 2, the recommended engine (flag: 'nothing relevant'; ctx: answer in context):\n"
        )
        print(engines(corpora, plan, args.per_half, vectors))
    print(f"\nLoad: {describe_load()}")


if __name__ == "__main__":
    main()

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

Part 1 ranks every chunk of each corpus by the three scores (numpy over the
cached vectors) and prints recall@20/@50 and MRR@20 of the answer chunk for
``bench_floor.py``'s answerable sets, plus English questions over a
bilingual corpus whose answer is Arabic (XQuAD en over XQuAD ar + COVID-QA,
the mirror of the floor bench's XQuAD ar over XQuAD en + ARCD).  Part 2
runs the recommended engine (sync facade, convex fusion) on the bilingual
corpora with the plain and the projected question vector, question by
question in turn, through ``bench_floor.py``'s floor variants: the share
flagged "nothing relevant" and the share whose default context holds an
answer.  Halves as in ``bench_floor.py`` (even articles tune, odd held-out).

    PYTHONPATH=$PWD python bench/bench_script_centring.py [--per-half 150] [--no-engine]
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
from _quality_data import DATA, Question
from bench_floor import VARIANTS, Plan, build, halves, make_engine, measure, twins

from zerda_async.core.floor_model import script_of

Matrix = NDArray[np.float64]
SCORES = ("plain cosine", "mean-centred", "projected")


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


def extended(covid_articles: int) -> tuple[dict[str, list[BenchChunk]], Plan]:
    """The floor bench's corpora and plan, plus English questions over XQuAD ar + COVID-QA."""
    corpora, plan = build(DATA, covid_articles)
    corpora["mixed: XQuAD ar + COVID-QA"] = corpora["XQuAD ar"] + corpora["COVID-QA"]
    en = {label: qs for _, label, qs, _ in plan if label == "XQuAD en"}["XQuAD en"]
    ar = {label: qs for _, label, qs, _ in plan if label == "XQuAD ar"}["XQuAD ar"]
    kind = "answerable, mixed corpus, other language"
    plan.append((kind, "XQuAD en", twins(en, ar), "mixed: XQuAD ar + COVID-QA"))
    return corpora, plan


def ranks(
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
        relevant = [i for i, doc in enumerate(ids) if doc in question.relevant]
        for name, score in zip(SCORES, (plain, centred, projected), strict=True):
            order = np.argsort(-np.round(score, 12), kind="stable")
            at = np.empty(len(order), dtype=np.int64)
            at[order] = np.arange(1, len(order) + 1)
            out[name].append(int(at[relevant].min()))
    return out


def vector_lists(
    corpora: dict[str, list[BenchChunk]], plan: Plan, per_half: int, vectors: E5Vectors
) -> str:
    """Part 1's table."""
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
            found = ranks(matrix, scripts, ids, qs, picked)
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


class ProjectedE5(E5Embedder):
    """The bench's e5 wrapper whose question vectors lose their component along ``d``."""

    def __init__(self, vectors: E5Vectors, d: Matrix | None) -> None:
        super().__init__(vectors)
        self.direction = d

    def __call__(self, text: Any) -> Any:
        return project(np.asarray(super().__call__(text), dtype=np.float64), self.direction)


def engines(
    corpora: dict[str, list[BenchChunk]], plan: Plan, per_half: int, vectors: E5Vectors
) -> str:
    """Part 2's table: flags and answers in context, plain vs projected, on bilingual corpora."""
    plain_e5 = E5Embedder(vectors)
    rows = []
    built: dict[str, tuple[Any, Any]] = {}
    for kind, label, questions, corpus in plan:
        if not corpus.startswith("mixed"):
            continue
        if corpus not in built:
            chunks = corpora[corpus]
            matrix = unit(vectors.passages([c.text for c in chunks]))
            d = direction(script_means(matrix, [script_of(c.text) for c in chunks]))
            built[corpus] = (
                make_engine(chunks, plain_e5),
                make_engine(chunks, ProjectedE5(vectors, d)),
            )
        answerable = kind.startswith("answerable")
        for half, picked in halves(questions, per_half).items():
            sums = np.zeros((2, 2, len(VARIANTS)))
            for q in picked:
                for i, engine in enumerate(built[corpus]):
                    flags, answers = measure(engine, [q], answerable)
                    sums[i, 0] += flags
                    sums[i, 1] += answers
            n = max(1, len(picked))
            cells = []
            for v in range(1, len(VARIANTS)):
                for what in (0, 1) if answerable else (0,):
                    plain, proj = sums[0, what, v] / n, sums[1, what, v] / n
                    cells.append(f"{'flag' if what == 0 else 'ctx'} {plain:.1%} -> {proj:.1%}")
            rows.append([half, kind, f"{label} -> {corpus}", len(picked), "; ".join(cells)])
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    floors = ", ".join(v[0] for v in VARIANTS[1:])
    return format_table(
        ["half", "kind", "questions -> chunks", "n", f"plain -> projected ({floors})"], rows
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)
    parser.add_argument("--no-engine", action="store_true", help="part 1 only")
    args = parser.parse_args(argv)
    corpora, plan = extended(args.covid_articles)
    vectors = E5Vectors()
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

"""Pseudo-relevance feedback for e5's question vector: does a second scan pay?

Issue 19 ("meaning"): across languages the recommended profile with e5 ranks
the answer lower (held-out MRR@20 ~0.72 Arabic -> English, ~0.80 English ->
Arabic) than the targets (0.78 / 0.82).  A question asked in the other
language than the documents lands in e5's space between the two languages;
the chunks the first scan ranks highest are in the documents' language.
Moving the question toward them (Rocchio) and scanning again might shift it
into that language's region:

    q' = normalise(q + alpha * sum_i w_i d_i)        (d_i: the first scan's top k)

``q`` is the script-centred question (``retriever.script_centring``, as the
recommended profile searches), ``w`` sums to 1 (``uniform``, or ``rank``:
proportional to 1 / rank), ``recentre`` takes the script direction out of
``q'`` again (the top chunks' own script component), and ``cross`` applies
the feedback only when most of the top k are in the other script than the
question (``core.floor_model.script_of``), leaving every same-language
question's list as it is.

Part 1, the vector list alone (every chunk ranked by numpy over cached
vectors; cheap): a grid of variants, summarised by their mean tune
ΔMRR@20 against the centred e5 list, and a shortlist chosen on tune by the
rule below.  Part 2, the recommended profile (retrieve 20, filter, rank;
``bench_rerank.ranked_list``) with the shortlist's feedback in its vector
search (``FeedbackEmbedder``: its query vector is the feedback vector over
the engine's own chunk vectors), against the profile as shipped.

The rule, applied to tune only: among the variants that lose nothing beyond
noise in any same-language or mixed set (the 95% interval of ΔMRR@20 reaches
0 or above), the one with the largest mean ΔMRR@20 over the four
cross-language sets.  Held-out figures are reported, not chosen on.

Sets: ``bench_pair.ranking_sets`` (``bench_rerank``'s sets with COVID-QA on
20 articles, and two bilingual corpora), every question, tune = even
articles, held-out = odd ones; recall@20 / MRR@20 of the answer chunk and
the paired 95% interval of ΔMRR@20 (``_quality_metrics.paired_delta``).

    PYTHONPATH=$PWD python bench/bench_feedback.py [--shortlist 4] [--only NAME]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors
from _feedback_ideas import ideas, part_three
from _quality_data import DATA, Corpus
from _quality_engines import make_engine
from _quality_metrics import paired_delta
from bench_pair import HALVES, by_half, ranking_sets, split, vector_ranks
from bench_rerank import _config, ranked_list

from zerda_async.core.floor_model import script_of
from zerda_async.embedders import E5Embedder as ProductE5

Matrix = np.ndarray
Ranks = list[int | None]
CROSS = (
    "Arabic -> English (XQuAD)",
    "English -> Arabic (XQuAD)",
    "XQuAD ar -> XQuAD en + ARCD",
    "XQuAD en -> XQuAD ar + COVID-QA",
)
"""The sets whose questions are asked in another language than (some of) their chunks."""
DIRECTION = np.asarray(ProductE5.script_direction.unit)


@dataclass(frozen=True)
class Feedback:
    """One feedback variant (module notes)."""

    k: int
    alpha: float
    weights: str = "uniform"
    recentre: bool = False
    gate: str = "always"

    @property
    def label(self) -> str:
        """A short name for the tables."""
        extra = (", recentred" if self.recentre else "") + (
            ", cross only" if self.gate == "cross" else ""
        )
        return f"k {self.k}, α {self.alpha}, {self.weights}{extra}"


def centre(queries: Matrix) -> Matrix:
    """Question vectors less their component along ``E5_DIRECTION`` (the shipped centring)."""
    out: Matrix = queries - np.outer(queries @ DIRECTION, DIRECTION)
    return out


def apply(spec: Feedback, queries: Matrix, passages: Matrix, q_ar: Matrix, p_ar: Matrix) -> Matrix:
    """The feedback vectors of centred ``queries`` (rows) over ``passages`` (unit rows).

    ``q_ar`` / ``p_ar``: whether each question / chunk is in Arabic script (the gate).
    """
    sims = queries @ passages.T
    k = min(spec.k, passages.shape[0])
    top = np.argsort(-np.round(sims, 12), axis=1, kind="stable")[:, :k]
    w = np.ones(k) if spec.weights == "uniform" else 1.0 / np.arange(1, k + 1)
    w = w / w.sum()
    shift = np.einsum("k,qkd->qd", w, passages[top])
    if spec.gate == "cross":
        other = p_ar[top] != q_ar[:, None]
        shift = shift * (other.mean(axis=1) > 0.5)[:, None]
    out = queries + spec.alpha * shift
    if spec.recentre:
        out = centre(out)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: Matrix = out / np.where(norms > 0, norms, 1.0)
    return result


def grid() -> list[Feedback]:
    """The variants of part 1."""
    return [
        Feedback(k, a, w, r, g)
        for k, a, w, r, g in itertools.product(
            (3, 5, 10), (0.25, 0.5, 1.0), ("uniform", "rank"), (False, True), ("always", "cross")
        )
    ]


@dataclass
class SetData:
    """One set's cached vectors, scripts and halves."""

    corpus: Corpus
    passages: Matrix
    queries: Matrix  # centred
    p_ar: Matrix
    q_ar: Matrix
    halves: list[str]

    @property
    def ids(self) -> list[str]:
        """Chunk ids in the vectors' order."""
        return [c.doc_id for c in self.corpus.chunks]


def load(corpus: Corpus, e5v: E5Vectors) -> SetData:
    """A set's vectors from the e5 cache (embedding what is missing)."""
    texts = [c.text for c in corpus.chunks]
    asked = [q.text for q in corpus.questions]
    return SetData(
        corpus,
        e5v.passages(texts, progress=True).astype(np.float64),
        centre(e5v.queries(asked, progress=True).astype(np.float64)),
        np.asarray([script_of(t) == "ar" for t in texts]),
        np.asarray([script_of(t) == "ar" for t in asked]),
        split(corpus),
    )


def deltas(ranks: Ranks, base: Ranks, halves: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Per half, ΔMRR@20 against ``base`` and its 95% half-width."""
    out = {}
    for half in HALVES:
        keep = [i for i, h in enumerate(halves) if h == half]
        out[half] = paired_delta([ranks[i] for i in keep], [base[i] for i in keep])
    return out


Scores = dict[str, dict[str, dict[str, tuple[float, float]]]]
"""variant -> set -> half -> (ΔMRR@20, half-width)."""


def choose(scores: Scores, count: int) -> list[str]:
    """The ``count`` best variants by the module's rule, on the tune half only."""

    def safe(name: str) -> bool:
        return all(
            m + w >= 0 for s, d in scores[name].items() if s not in CROSS for m, w in [d["tune"]]
        )

    def gain(name: str) -> float:
        return statistics.fmean(scores[name][s]["tune"][0] for s in CROSS if s in scores[name])

    ranked = sorted((n for n in scores if safe(n)), key=gain, reverse=True)
    return ranked[:count]


def cell(d: dict[str, tuple[float, float]], half: str) -> str:
    """``+0.012 ± 0.010``."""
    mean, width = d[half]
    return f"{mean:+.3f} ± {width:.3f}"


def part_one(sets: Sequence[SetData]) -> tuple[Scores, dict[str, Feedback], str]:
    """The grid on the vector list alone: scores per variant and a summary table."""
    variants = {spec.label: spec for spec in grid()}
    scores: Scores = {name: {} for name in variants}
    for data in sets:
        base = vector_ranks(data.queries @ data.passages.T, data.ids, data.corpus)
        for name, spec in variants.items():
            moved = apply(spec, data.queries, data.passages, data.q_ar, data.p_ar)
            ranks = vector_ranks(moved @ data.passages.T, data.ids, data.corpus)
            scores[name][data.corpus.name] = deltas(ranks, base, data.halves)
    rows = []
    for name in variants:
        per = scores[name]
        row: list[Any] = [name]
        for half in HALVES:
            cross = [per[s][half][0] for s in per if s in CROSS]
            same = [per[s][half][0] for s in per if s not in CROSS]
            row += [f"{statistics.fmean(cross):+.3f}", f"{statistics.fmean(same):+.3f}"]
            row.append(f"{min(same):+.3f}")
        rows.append(row)
    headers = ["variant (vector list alone)"]
    for half in HALVES:
        headers += [f"{half} Δ cross (mean)", f"{half} Δ same (mean)", f"{half} Δ same (worst)"]
    return scores, variants, format_table(headers, rows)


class FeedbackEmbedder(E5Embedder):
    """The bench's e5 whose query vector is the feedback vector over the indexed chunks.

    The engine indexes through ``embed_batch`` (the chunk matrix is kept);
    a query is centred and moved here, so the engine must not centre it again
    (no ``script_direction``).  ``spec`` ``None``: the centred question alone.
    """

    def __init__(self, vectors: E5Vectors, spec: Feedback | None) -> None:
        super().__init__(vectors)
        self.spec = spec
        self.script_direction = None  # type: ignore[assignment]
        self.passages = np.zeros((0, vectors.dim))
        self.p_ar = np.zeros(0, dtype=bool)
        self.seconds: list[float] = []

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        rows = self.vectors.passages(texts)
        self.passages = np.asarray(rows, dtype=np.float64)
        self.p_ar = np.asarray([script_of(str(t)) == "ar" for t in texts])
        return rows

    def __call__(self, text: Any) -> Any:
        query = centre(np.asarray(self.vectors.query(text), dtype=np.float64)[None, :])
        if self.spec is None:
            return query[0]
        started = time.process_time()
        q_ar = np.asarray([script_of(str(text)) == "ar"])
        moved = apply(self.spec, query, self.passages, q_ar, self.p_ar)[0]
        # What the engine would add: one more scan of the chunk matrix.
        _ = self.passages @ moved
        self.seconds.append(time.process_time() - started)
        return moved


def profile_ranks(corpus: Corpus, embedder: Any) -> Ranks:
    """Each question's 1-based rank of its answer in the recommended profile's list."""
    engine = make_engine(_config(), corpus.chunks, embedder)
    ranks: Ranks = []
    for q in corpus.questions:
        got = [sc.doc_id for sc in ranked_list(engine, q.text, 20)]
        ranks.append(next((i + 1 for i, x in enumerate(got) if x in q.relevant), None))
    return ranks


def part_two(
    sets: Sequence[SetData], e5v: E5Vectors, chosen: dict[str, Feedback]
) -> tuple[Scores, list[list[Any]], list[float]]:
    """The profile, shipped and with each chosen feedback: rows and ΔMRR per variant."""
    rows: list[list[Any]] = []
    scores: Scores = {name: {} for name in chosen}
    costs: list[float] = []
    for data in sets:
        corpus = data.corpus
        alone = vector_ranks(data.queries @ data.passages.T, data.ids, corpus)
        shipped = profile_ranks(corpus, E5Embedder(e5v))
        n = len(corpus.questions)
        rows.append([corpus.name, "e5 vector list alone", n, *by_half(alone, data.halves), "", ""])
        rows.append(
            [corpus.name, "recommended (shipped)", n, *by_half(shipped, data.halves), "", ""]
        )
        for name, spec in chosen.items():
            moved = apply(spec, data.queries, data.passages, data.q_ar, data.p_ar)
            listed = vector_ranks(moved @ data.passages.T, data.ids, corpus)
            d = deltas(listed, alone, data.halves)
            cells = by_half(listed, data.halves) + [cell(d, h) for h in HALVES]
            rows.append([corpus.name, f"e5 list + feedback {name} (Δ vs list)", n, *cells])
            embedder = FeedbackEmbedder(e5v, spec)
            ranks = profile_ranks(corpus, embedder)
            costs += embedder.seconds
            d = deltas(ranks, shipped, data.halves)
            scores[name][corpus.name] = d
            cells = by_half(ranks, data.halves) + [cell(d, h) for h in HALVES]
            rows.append([corpus.name, f"recommended + feedback {name}", n, *cells])
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    return scores, rows, costs


def part_three_table(sets: Sequence[SetData], e5v: E5Vectors) -> tuple[Scores, str]:
    """Part 3 (``_feedback_ideas``): each idea's vector list against the centred e5 list."""

    def rank(scores: Matrix, data: SetData) -> Ranks:
        return vector_ranks(scores, data.ids, data.corpus)

    found = part_three(sets, ideas(e5v, DIRECTION, centre), rank)
    scores: Scores = {name: {} for name in found}
    rows: list[list[Any]] = []
    for data in sets:
        base = rank(data.queries @ data.passages.T, data)
        for name, per_set in found.items():
            ranks = per_set[data.corpus.name]
            d = scores[name][data.corpus.name] = deltas(ranks, base, data.halves)
            cells = by_half(ranks, data.halves) + [cell(d, h) for h in HALVES]
            rows.append([data.corpus.name, name, len(ranks), *cells])
    headers = ["set", "e5 list, re-scored", "questions", "tune R@20 / MRR@20"]
    headers += ["held-out R@20 / MRR@20", "tune ΔMRR vs list (95%)", "held-out ΔMRR vs list"]
    return scores, format_table(headers, rows)


REFERENCE = Feedback(5, 0.25)
"""Textbook Rocchio (every question, uniform weights), run beside the rule's picks."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--shortlist", type=int, default=4, help="variants run in the profile")
    parser.add_argument("--only", default="", help="only the sets whose name contains this")
    parser.add_argument("--variants", default="", help="';'-separated labels instead of the rule")
    args = parser.parse_args(argv)
    load_start = describe_load()
    e5v = E5Vectors()
    sets = [load(c, e5v) for c in ranking_sets(DATA) if args.only in c.name]
    scores, variants, summary = part_one(sets)
    picked = [v for v in args.variants.split(";") if v] or choose(scores, args.shortlist)
    chosen = {name: variants[name] for name in picked}
    chosen.setdefault(REFERENCE.label, REFERENCE)
    profile_scores, rows, costs = part_two(sets, e5v, chosen)
    final = choose(profile_scores, 1)
    idea_scores, ideas_table = part_three_table(sets, e5v)
    best_idea = choose(idea_scores, 1)
    headers = ["set", "system", "questions", "tune R@20 / MRR@20", "held-out R@20 / MRR@20"]
    headers += ["tune ΔMRR vs shipped (95%)", "held-out ΔMRR vs shipped (95%)"]
    cost = f"{statistics.median(costs) * 1000:.3f}" if costs else "-"
    text = [
        "# Pseudo-relevance feedback (bench/bench_feedback.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {load_start} at start; {describe_load()}",
        f"Command: {command_line()}",
        "",
        "Part 1, the vector list alone; ΔMRR@20 against the centred e5 list:",
        "",
        summary,
        "",
        f"Shortlist (tune rule): {', '.join(chosen)}",
        "",
        "Part 2, the recommended profile:",
        "",
        format_table(headers, rows),
        "",
        f"Chosen on the profile's tune half: {final[0] if final else 'none passes the rule'}",
        "",
        "Part 3, other changes to the vector list (bench/_feedback_ideas.py):",
        "",
        ideas_table,
        "",
        f"Chosen on tune by the same rule: {best_idea[0] if best_idea else 'none'}",
        f"Feedback and its second scan: {cost} ms CPU per query (median, numpy, these corpora)",
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('feedback', out)}")


if __name__ == "__main__":
    main()

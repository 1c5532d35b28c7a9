"""A second vector opinion: multilingual USE v3 beside e5-small — ranking and the floor.

Issue 19 ("meaning"): e5-small's cross-language cosines overlap between
answerable and off-topic questions, and its MRR@20 misses the targets in
English and across languages.  USE v3 costs ~5% of e5 (1 ms a query, ~195
chunks/s) and was trained on translation pairs.  Does it pay beside e5?
Every figure here comes from cached vectors (e5: ``bench/_e5_vectors.py``;
USE: ``bench/_pair_vectors.py``, filled on the first run) and is printed for
the *tune* half (even articles) and the *held-out* half (odd ones); choices
are made on tune.

Part 1, ranking (``--part ranking``; ``bench_rerank.py``'s sets, every
question, plus two bilingual corpora: XQuAD's Arabic questions over XQuAD en
+ ARCD, its English ones over XQuAD ar + 20 COVID-QA articles):

* the vector list alone, every chunk ranked by numpy: e5 (question centred
  along ``E5_DIRECTION``, as the recommended profile does), USE, and the
  weighted cosine ``w cos_e5 + (1 - w) cos_use``;
* the recommended profile (keyword + vector convex fusion, filter, ranker;
  ``bench_rerank.ranked_list``) with e5, with USE and with the pair
  embedder of weight ``w`` (``_pair_vectors.PairEmbedder``: its dot product
  is the weighted cosine).

recall@20 / MRR@20 of the answer chunk.

Part 2, the floor (``--part floor``; ``bench_floor_fit.py``'s rows: per
question, one row per script group of the listed chunks; answerable rows
of the answer's group against every row of off-topic questions; ``same``
= the question's script, ``cross`` = the other).  For each feature set an
L2 logistic fit on the tune half, then on the held-out half: AUC, and the
false-flag / off-topic-flag rates at three thresholds set on tune: 1% false
flags, 97.5% off-topic flagged, and the off-topic flag rate the shipped
``E5_FLOOR`` reaches on that side of the tune half.  Feature sets: e5's
shipped four (best cosine, its margin, best keyword coverage, Arabic
question), + bench_floor_fit's centred cosine, + USE's best cosine over the
group's listed chunks and its margin over USE's 50th best cosine in the
corpus, and the shipped four computed on the pair embedder's own lists
(its weighted cosine and margin).

    PYTHONPATH=$PWD python bench/bench_pair.py [--part ranking|floor|all]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import describe_load, describe_machine, format_table
from _e5_vectors import E5Embedder, E5Vectors
from _pair_floor import fit_pair, floor
from _pair_vectors import PairEmbedder, UseVectors
from _quality_data import DATA, SEED, Corpus, half_of
from _quality_engines import make_engine
from _quality_metrics import paired_delta
from bench_rerank import _config, corpora, ranked_list

from zerda_async.embedders import E5Embedder as ProductE5
from zerda_async.embedders import E5UseEmbedder

Matrix = np.ndarray
HALVES = ("tune", "held-out")


def ranking_sets(data: Path) -> list[Corpus]:
    """``bench_rerank``'s sets (COVID-QA on 20 articles) and two bilingual corpora."""
    sets = [c for c, _ in corpora(data, True)]
    by = {c.name: c for c in sets}
    arcd, xen, xar = (
        by["Arabic (ARCD)"],
        by["English (XQuAD en -> en)"],
        by["Arabic (XQuAD ar -> ar)"],
    )
    covid = sets[-1]
    ar_en, en_ar = by["Arabic -> English (XQuAD)"], by["English -> Arabic (XQuAD)"]
    sets.append(Corpus("XQuAD ar -> XQuAD en + ARCD", xen.chunks + arcd.chunks, ar_en.questions))
    sets.append(
        Corpus("XQuAD en -> XQuAD ar + COVID-QA", xar.chunks + covid.chunks, en_ar.questions)
    )
    assert en_ar.chunks is xar.chunks or len(en_ar.chunks) == len(xar.chunks)
    return sets


def rank_metrics(first: Sequence[int | None]) -> str:
    """recall@20 / MRR@20 from each question's 1-based rank of its first relevant chunk."""
    found = [r for r in first if r is not None and r <= 20]
    n = max(1, len(first))
    return f"{len(found) / n:.1%} / {sum(1 / r for r in found) / n:.3f}"


def vector_ranks(scores: Matrix, ids: Sequence[str], corpus: Corpus) -> list[int | None]:
    out: list[int | None] = []
    for row, q in zip(scores, corpus.questions, strict=True):
        order = np.argsort(-np.round(row, 12), kind="stable")[:20]
        out.append(next((i + 1 for i, j in enumerate(order) if ids[j] in q.relevant), None))
    return out


def split(corpus: Corpus) -> list[str]:
    return [half_of(q) for q in corpus.questions]


def by_half(ranks: Sequence[int | None], halves: Sequence[str]) -> list[str]:
    return [
        rank_metrics([r for r, h in zip(ranks, halves, strict=True) if h == half])
        for half in HALVES
    ]


def paired(
    ranks: Sequence[int | None], base: Sequence[int | None], halves: Sequence[str]
) -> list[str]:
    """Per half: the MRR@20 difference against ``base`` on the same questions, with the
    half-width of its 95% interval (``_quality_metrics.paired_delta``)."""
    out = []
    for half in HALVES:
        pairs = [(a, b) for a, b, h in zip(ranks, base, halves, strict=True) if h == half]
        mean, width = paired_delta([a for a, _ in pairs], [b for _, b in pairs])
        out.append(f"{mean:+.3f} ± {width:.3f}")
    return out


def ranking(weights: Sequence[float], profile_weights: Sequence[float]) -> str:
    """Part 1's two tables (vector list alone; the recommended profile)."""
    e5v, usev = E5Vectors(), UseVectors()
    d = np.asarray(ProductE5.script_direction.unit)
    alone_rows, profile_rows = [], []
    for corpus in ranking_sets(DATA):
        texts = [c.text for c in corpus.chunks]
        ids = [c.doc_id for c in corpus.chunks]
        asked = [q.text for q in corpus.questions]
        halves = split(corpus)
        pe, pu = (
            e5v.passages(texts).astype(np.float64),
            usev.passages(texts, progress=True).astype(np.float64),
        )
        qe, qu = e5v.queries(asked).astype(np.float64), usev.queries(asked).astype(np.float64)
        qe = qe - np.outer(qe @ d, d)  # script centring, as the recommended profile
        se, su = qe @ pe.T, qu @ pu.T
        columns = {"e5 (centred)": se, "USE": su}
        for w in weights:
            columns[f"w {w}"] = w * se + (1 - w) * su
        first = vector_ranks(se, ids, corpus)
        for name, scores in columns.items():
            found = vector_ranks(scores, ids, corpus)
            cells = by_half(found, halves) + paired(found, first, halves)
            alone_rows.append([corpus.name, name, len(asked), *cells])
        engines: dict[str, Any] = {
            "recommended + e5": E5Embedder(e5v),
            "recommended + USE": PairEmbedder(e5v, usev, 0.0),
        }
        for w in profile_weights:
            engines[f"recommended + pair w {w}"] = PairEmbedder(e5v, usev, w)
        base: list[int | None] = []
        for name, embedder in engines.items():
            engine = make_engine(_config(), corpus.chunks, embedder)
            ranks: list[int | None] = []
            for q in corpus.questions:
                got = [sc.doc_id for sc in ranked_list(engine, q.text, 20)]
                ranks.append(next((i + 1 for i, x in enumerate(got) if x in q.relevant), None))
            base = base or ranks
            cells = by_half(ranks, halves) + paired(ranks, base, halves)
            profile_rows.append([corpus.name, name, len(asked), *cells])
            print(" | ".join(map(str, profile_rows[-1])), file=sys.stderr, flush=True)
    headers = ["set", "system", "questions", "tune R@20 / MRR@20", "held-out R@20 / MRR@20"]
    headers += ["tune ΔMRR vs e5 (95%)", "held-out ΔMRR vs e5 (95%)"]
    return "\n\n".join(
        [
            "Vector list alone (every chunk ranked):",
            format_table(headers, alone_rows),
            "Recommended profile (retrieve 20, filter, rank):",
            format_table(headers, profile_rows),
        ]
    )


def cost(sample: int, queries: int) -> str:
    """CPU of the product's embedders, e5 alone against the pair, one thread each.

    ``sample`` ARCD and XQuAD chunks drawn with the fixed seed, embedded by
    ``E5Embedder(threads=1)`` and ``E5UseEmbedder(threads=1)`` in turn over
    two rounds (``time.process_time``); then ``queries`` questions one at a
    time by each (median milliseconds of wall time).
    """
    sets = ranking_sets(DATA)
    chunks = [c.text for c in sets[0].chunks + sets[2].chunks]
    asked = [q.text for q in sets[1].questions + sets[2].questions]
    rng = random.Random(SEED)
    picked, questions = rng.sample(chunks, sample), rng.sample(asked, queries)
    models: dict[str, Any] = {
        "e5-small": ProductE5(threads=1).load(),
        "e5-small + USE v3": E5UseEmbedder(threads=1).load(),
    }
    cpu = dict.fromkeys(models, 0.0)
    for _ in range(2):
        for name, model in models.items():
            started = time.process_time()
            model.embed_batch(picked)
            cpu[name] += time.process_time() - started
    rows = []
    for name, model in models.items():
        times = []
        for q in questions:
            started = time.perf_counter()
            model.embed_query(q)
            times.append((time.perf_counter() - started) * 1000)
        rate = 2 * sample / cpu[name]
        dim = model.dim
        rows.append([name, dim, f"{rate:.1f}", f"{statistics.median(times):.1f}"])
    headers = ["embedder", "dims", "chunks per CPU second", "query ms (median)"]
    return format_table(headers, rows)


def parse(values: str) -> list[float]:
    """``"0.8,0.9"`` as numbers."""
    return [float(v) for v in values.split(",") if v]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--part", choices=("ranking", "floor", "fit", "cost", "all"), default="all")
    parser.add_argument("--sample", type=int, default=48, help="--part cost: chunks")
    parser.add_argument("--fit-weight", type=float, default=0.9, help="--part fit: the pair's w")
    parser.add_argument("--weights", default="0.5,0.6,0.7,0.8,0.9")
    parser.add_argument("--profile-weights", default="0.6,0.8")
    parser.add_argument("--floor-weights", default="0.7")
    parser.add_argument("--per-half", type=int, default=150)
    parser.add_argument("--covid-articles", type=int, default=6)
    args = parser.parse_args(argv)
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}")
    print(f"Threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    if args.part in ("ranking", "all"):
        print(ranking(parse(args.weights), parse(args.profile_weights)))
    if args.part in ("floor", "all"):
        print(floor(args.per_half, args.covid_articles, parse(args.floor_weights)))
    if args.part == "cost":
        print(cost(args.sample, 50))
    if args.part == "fit":
        print(fit_pair(args.per_half, args.covid_articles, args.fit_weight))
    print(f"Load: {describe_load()}")


if __name__ == "__main__":
    main()

"""Chunks embedded in both of e5's forms: does a chunk's "query: " vector help? (issue 19)

e5 is asymmetric: questions are embedded as ``"query: " + text`` and chunks as
``"passage: " + text``.  Across languages a question lies closer to another
question than to a passage, so a chunk's vector in the query form might meet
a question in the other language better.  Scored by cosine alone, the sum of
the two (question · passage + question · chunk-as-query) ranked the answer
higher across languages on both halves of XQuAD.  Measured here inside the
recommended profile: each chunk's vector is ``passage + weight x query``,
made unit length, so the index holds one vector per chunk as before (the
embedding cost doubles); questions are unchanged.  The relevance floor
(``E5_FLOOR``) is the shipped one, fitted on passage vectors.

Every question of XQuAD's public half (across languages and within each),
ARCD, 20 COVID-QA articles and their mixed corpus; tune = even articles,
held-out = odd ones.  MRR@20 per half (retrieve 20, filter, rank), then the
answer in the default context and the false "nothing relevant" flags.

    PYTHONPATH=$PWD python bench/bench_dual_form.py [--weights 0.5 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import print_report
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import Corpus, half_of, normalise
from _quality_engines import make_engine
from _quality_metrics import reciprocal
from bench_budgets import sets
from bench_misses import first_rank
from bench_pair import HALVES, vector_ranks
from bench_rerank import _config, ranked_list


class DualForm(E5Embedder):
    """The bench's e5 whose chunk vectors are ``passage + weight x query``, unit length."""

    def __init__(self, vectors: E5Vectors, weight: float) -> None:
        super().__init__(vectors)
        self.weight = weight

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        passages = np.asarray(self.vectors.passages(texts), dtype=np.float64)
        queries = np.asarray(self.vectors.queries(texts), dtype=np.float64)
        rows = passages + self.weight * queries
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def mrr_by_half(corpus: Corpus, ranks: Sequence[int | None]) -> str:
    """'tune / held-out' MRR@20 of each question's rank of its first relevant chunk."""
    by_half: dict[str, list[float]] = {half: [] for half in HALVES}
    for q, rank in zip(corpus.questions, ranks, strict=True):
        by_half[half_of(q)].append(reciprocal(rank))
    return " / ".join(f"{statistics.fmean(by_half[half] or [0.0]):.3f}" for half in HALVES)


def measure(corpus: Corpus, embedder: Any) -> str:
    """'tune / held-out MRR@20 · answer in context · false flags' of one system."""
    engine = make_engine(_config(), corpus.chunks, embedder)
    ranks = [
        first_rank([sc.chunk.doc_id for sc in ranked_list(engine, q.text, 20)], q)
        for q in corpus.questions
    ]
    answered = flagged = 0
    for q in corpus.questions:
        result = engine.run(q.text, use_history=False, record_turn=False)
        answered += any(normalise(a) in normalise(result.context) for a in q.answers)
        flagged += result.nothing_relevant
    n = max(1, len(corpus.questions))
    return f"{mrr_by_half(corpus, ranks)} · {answered / n:.1%} · {flagged / n:.1%}"


def cosine_alone(corpus: Corpus, vectors: E5Vectors) -> list[str]:
    """MRR@20 tune / held-out of the cosine alone: question · passage, then that plus
    question · chunk-as-query (no profile, no centring)."""
    passages = np.asarray(vectors.passages([c.text for c in corpus.chunks]), dtype=np.float64)
    as_queries = np.asarray(vectors.queries([c.text for c in corpus.chunks]), dtype=np.float64)
    questions = np.asarray(vectors.queries([q.text for q in corpus.questions]), dtype=np.float64)
    ids = [c.doc_id for c in corpus.chunks]
    return [
        mrr_by_half(corpus, vector_ranks(scores, ids, corpus))
        for scores in (questions @ passages.T, questions @ (passages + as_queries).T)
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--weights", type=float, nargs="+", default=[0.5, 1.0])
    args = parser.parse_args(argv)
    started = time.perf_counter()
    vectors = E5Vectors()
    systems: list[tuple[str, Any]] = [("passage vectors (shipped)", E5Embedder(vectors))]
    systems += [(f"passage + {w:g} x query", DualForm(vectors, w)) for w in args.weights]
    rows = []
    for corpus in sets():
        cells = [measure(corpus, embedder) for _, embedder in systems]
        print(f"{corpus.name} | {' | '.join(cells)}", file=sys.stderr, flush=True)
        rows.append([corpus.name, len(corpus.questions), *cells])
    alone = [[c.name, *cosine_alone(c, vectors)] for c in sets() if "XQuAD" in c.name]
    headers = ["set", "question · passage", "+ question · chunk as query"]
    print_report("cosine alone, MRR@20 tune / held-out", headers, alone, started)
    print()
    caption = "MRR@20 tune / held-out · answer in the default context · false flags"
    print_report(caption, ["set", "questions", *(name for name, _ in systems)], rows, started)


if __name__ == "__main__":
    main()

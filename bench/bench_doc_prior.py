"""A document-level prior in convex fusion: does the article's evidence pick the chunk? (issue 21)

Hierarchical retrieval, emulated over the recommended profile's own method
lists: after convex fusion (``fuse_convex``, all candidates kept), each
chunk's fused score gains ``λ × doc(source)``, its document's evidence among
the candidates, then the list is re-sorted and cut to ``top_k``.  The
document's evidence, from what the lists already hold (no re-embedding):

* ``max``: its best chunk's fused score, divided by the best document's;
* ``sum``: the sum of its chunks' fused scores, likewise divided;
* ``softmax``: ``0.1 × log Σ exp(fused / 0.1)``, likewise divided;
* ``coverage``: the query coverage (idf-weighted share of the query's
  analysed terms) of all its candidates' terms together, as
  ``neighbour_weight`` pools a passage's terms, but over the whole document.

COVID-QA, all 98 articles, 400-character chunks, titles as search heading
(``bench_covid.load``); questions of the *tune* half only (``bench_covid.split``:
a negative result is not confirmed on the report half).  Metrics as in
``bench_quality.py``: recall@5, recall@20, MRR@20 of retrieve 20 → filter → rank.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors
from _quality_engines import engine_ranker, make_engine
from _quality_metrics import ranking_metrics
from bench_covid import load, split

from zerda_async import ContextEngineConfig
from zerda_async.core.models import ScoredChunk
from zerda_async.core.retrieval import fusion

_ORIGINAL = fusion.fuse_convex
MODES = ("max", "sum", "softmax", "coverage")


class Prior:
    """The prior in force (``mode`` None: the fusion as shipped) and the query being fused."""

    mode: str | None = None
    weight = 0.0
    query = ""
    keyword: Any = None  # the engine's keyword retriever (its index and term memo)


def _document_scores(fused: Sequence[ScoredChunk]) -> dict[Any, float]:
    by_source: dict[Any, list[ScoredChunk]] = {}
    for sc in fused:
        by_source.setdefault(sc.metadata.get("source"), []).append(sc)
    if Prior.mode == "coverage":
        index = Prior.keyword._view.index
        weights = index.query_weights(Prior.query)
        total = sum(w for _, w in weights) or 1.0
        scores = {}
        for source, chunks in by_source.items():
            held: set[str] = set()
            for sc in chunks:
                held |= Prior.keyword._terms.terms(sc, index.analyzer)
            scores[source] = sum(w for t, w in weights if t in held) / total
        return scores
    raw = {}
    for source, chunks in by_source.items():
        values = [sc.fused_score for sc in chunks]
        if Prior.mode == "max":
            raw[source] = max(values)
        elif Prior.mode == "sum":
            raw[source] = sum(values)
        else:
            raw[source] = 0.1 * math.log(sum(math.exp(v / 0.1) for v in values))
    best = max(raw.values(), default=1.0) or 1.0
    return {source: value / best for source, value in raw.items()}


def fuse_with_prior(
    lists: Any,
    top_k: int,
    weights: Any,
    keyword_evidence: Any = None,
    neighbour_weight: float = 0.0,
    *,
    cross_script: bool = False,
) -> list[ScoredChunk]:
    """``fuse_convex``, then each chunk raised by ``Prior.weight`` × its document's score."""
    if Prior.mode is None or Prior.weight <= 0:
        return _ORIGINAL(
            lists, top_k, weights, keyword_evidence, neighbour_weight, cross_script=cross_script
        )
    fused = _ORIGINAL(
        lists, 1 << 30, weights, keyword_evidence, neighbour_weight, cross_script=cross_script
    )
    documents = _document_scores(fused)
    for sc in fused:
        sc.fused_score += Prior.weight * documents[sc.metadata.get("source")]
    fused.sort(key=lambda sc: sc.fused_score, reverse=True)
    kept = fused[:top_k]
    for position, sc in enumerate(kept):
        sc.retrieval_rank, sc.composite_score = position, sc.fused_score
    return kept


def measure(e5: E5Embedder | None, weights: Sequence[float]) -> list[list[str]]:
    """One row per (embedder, mode, λ) on the tune half."""
    corpus = load(400, 0, 1)
    tune, _ = split(corpus)
    fusion.fuse_convex = fuse_with_prior
    rows = []
    for embedder in (None, e5) if e5 is not None else (None,):
        engine = make_engine(ContextEngineConfig.recommended(), corpus.chunks, embedder)
        retriever = engine._state.retriever
        Prior.keyword = retriever.keyword_retriever
        retrieve = retriever.retrieve

        def remember(query: str, *args: Any, _retrieve: Any = retrieve, **kwargs: Any) -> Any:
            Prior.query = query
            return _retrieve(query, *args, **kwargs)

        retriever.retrieve = remember
        ranked = engine_ranker(engine)
        system = "keyword only" if embedder is None else "+ e5"
        settings: list[tuple[str | None, float]] = [(None, 0.0)]
        settings += [(mode, w) for mode in MODES for w in weights]
        for mode, weight in settings:
            Prior.mode, Prior.weight = mode, weight
            started = time.process_time()
            r5, r20, mrr = ranking_metrics(ranked, tune)
            label = "none (recommended)" if mode is None else mode
            row = [system, label, f"{weight:g}", f"{r5:.1%}", f"{r20:.1%}", f"{mrr:.3f}"]
            row.append(f"{time.process_time() - started:.1f} s")
            rows.append(row)
            print(" | ".join(row), file=sys.stderr, flush=True)
    fusion.fuse_convex = _ORIGINAL
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--e5", action="store_true", help="add the e5 rows (cached vectors)")
    parser.add_argument("--weights", default="0.1,0.2,0.3,0.5", help="the λ values")
    args = parser.parse_args()
    e5 = E5Embedder(E5Vectors()) if args.e5 else None
    rows = measure(e5, [float(w) for w in args.weights.split(",")])
    headers = ["system", "document score", "λ", "recall@5", "recall@20", "MRR@20", "CPU time"]
    text = [
        "# A document-level prior: COVID-QA tune half (bench/bench_doc_prior.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        "",
        format_table(headers, rows),
    ]
    out = "\n".join(text) + "\n"
    print(out)
    print(f"written to {write_summary('doc-prior', out)}")


if __name__ == "__main__":
    main()

"""Keywords across languages: the question's words translated by e5, word by word (issue 19).

An Arabic question over English chunks (or the reverse) shares no words with
its answer, so the keyword half of the recommended profile is blind there and
the ranking rests on the vectors alone (held-out MRR@20 ~0.73 / ~0.80 against
the issue's 0.78 / 0.82).  ``_word_translation.TranslatedKeywords`` gives it a
keyword list again: each content word of the question replaced by its ``k``
nearest corpus words in e5's space, weighted by cosine ** ``sharpness``, and
scored by BM25.

Measured here, on XQuAD's two cross-language sets (every question; tune =
even articles, held-out = odd ones, as every fitting bench splits):

* the translated keywords alone (recall@20 / MRR@20);
* the recommended profile with e5 (``bench_rerank.ranked_list``: retrieve 30,
  filter, rank) as shipped;
* that list re-scored as composite / best composite + ``weight`` x translated
  BM25 / best translated BM25 over the corpus, for a grid of ``k``,
  ``sharpness`` and ``weight``: the variant with the largest mean tune
  ΔMRR@20 over both sets is chosen on tune, and its held-out ΔMRR@20 (with its
  paired 95% interval) is what the figures say.

    PYTHONPATH=$PWD python bench/bench_word_translation.py
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import describe_load, describe_machine, format_table
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Corpus, half_of
from _quality_engines import make_engine
from _quality_metrics import paired_delta
from _word_translation import TranslatedKeywords, WordVectors
from bench_pair import HALVES, rank_metrics
from bench_rerank import _config, corpora, ranked_list

Ranks = list[int | None]
CROSS = ("Arabic -> English (XQuAD)", "English -> Arabic (XQuAD)")
GRID = list(itertools.product((1, 3, 5), (1.0, 4.0), (0.05, 0.1, 0.2, 0.3)))
"""(k, sharpness, weight) of every variant measured."""
DEPTH = 30


def first_relevant(ids: Sequence[str], relevant: set[str]) -> int | None:
    return next((i + 1 for i, d in enumerate(ids[:20]) if d in relevant), None)


def measure(corpus: Corpus, words: WordVectors, e5: E5Embedder) -> dict[str, Ranks]:
    """Every question's rank of its first relevant chunk, per system."""
    ids = [c.doc_id for c in corpus.chunks]
    where = {d: i for i, d in enumerate(ids)}
    translated = TranslatedKeywords([c.text for c in corpus.chunks], words)
    engine = make_engine(_config(), corpus.chunks, e5)
    out: dict[str, Ranks] = {"profile": [], "translated alone": []}
    for q in corpus.questions:
        listed = ranked_list(engine, q.text, DEPTH)
        listed_ids = [sc.chunk.doc_id for sc in listed]
        composite = np.asarray([sc.composite_score for sc in listed])
        composite = composite / (composite.max() if len(listed) and composite.max() > 0 else 1.0)
        out["profile"].append(first_relevant(listed_ids, q.relevant))
        for k, sharpness in {(k, s) for k, s, _ in GRID}:
            bm25 = translated.scores(q.text, k, sharpness)
            if (k, sharpness) == (3, 4.0):
                order = [ids[j] for j in np.argsort(-bm25, kind="stable")] if bm25.max() > 0 else []
                out["translated alone"].append(first_relevant(order, q.relevant))
            bonus = np.asarray([bm25[where[d]] for d in listed_ids]) / (bm25.max() or 1.0)
            for weight in sorted({w for kk, s, w in GRID if (kk, s) == (k, sharpness)}):
                score = composite + weight * bonus
                order = [listed_ids[i] for i in np.argsort(-score, kind="stable")]
                out.setdefault(f"k {k}, sharpness {sharpness:g}, weight {weight:g}", []).append(
                    first_relevant(order, q.relevant)
                )
    return out


def delta(ranks: Ranks, base: Ranks, halves: Sequence[str], half: str) -> tuple[float, float]:
    pairs = [(a, b) for a, b, h in zip(ranks, base, halves, strict=True) if h == half]
    return paired_delta([a for a, _ in pairs], [b for _, b in pairs])


def main() -> None:
    started = time.perf_counter()
    vectors = E5Vectors()
    e5, words = E5Embedder(vectors), WordVectors()
    results: dict[str, tuple[dict[str, Ranks], list[str]]] = {}
    for corpus, _ in corpora(DATA, False):
        if corpus.name in CROSS:
            print(f"measuring {corpus.name} ...", file=sys.stderr, flush=True)
            results[corpus.name] = (
                measure(corpus, words, e5),
                [half_of(q) for q in corpus.questions],
            )
    variants = [name for name in next(iter(results.values()))[0] if name.startswith("k ")]
    tune_gain = {
        name: statistics.fmean(
            delta(ranks[name], ranks["profile"], halves, "tune")[0]
            for ranks, halves in results.values()
        )
        for name in variants
    }
    chosen = max(variants, key=lambda name: tune_gain[name])
    rows = []
    for set_name, (ranks, halves) in results.items():
        for system in ("profile", "translated alone", chosen):
            cells = [
                rank_metrics([r for r, h in zip(ranks[system], halves, strict=True) if h == half])
                for half in HALVES
            ]
            gains = ["—", "—"]
            if system == chosen:
                gains = [
                    "{:+.3f} ± {:.3f}".format(*delta(ranks[system], ranks["profile"], halves, h))
                    for h in HALVES
                ]
            label = f"profile + translated ({system})" if system == chosen else system
            rows.append([set_name, label, *cells, *gains])
    headers = [
        "set",
        "system",
        "tune recall@20 / MRR@20",
        "held-out recall@20 / MRR@20",
        "tune ΔMRR@20",
        "held-out ΔMRR@20",
    ]
    print(f"Machine: {describe_machine()}\nLoad: {describe_load()}\n")
    print(format_table(headers, rows))
    best = sorted(tune_gain.items(), key=lambda kv: -kv[1])[:5]
    print("\nBest variants on tune (mean ΔMRR@20 over both sets):")
    for name, gain in best:
        held = statistics.fmean(
            delta(ranks[name], ranks["profile"], halves, "held-out")[0]
            for ranks, halves in results.values()
        )
        print(f"  {name}: tune {gain:+.3f}, held-out {held:+.3f}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

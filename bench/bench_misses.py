"""Where the recommended profile's first chunk is not the answer's: what it ranks instead.

Issue 19's MRR@20 targets count the rank of the first chunk that holds the
answer.  This bench runs the recommended profile with e5 (retrieve 20,
filter, rank: ``bench_rerank.ranked_list``) over ``bench_pair.ranking_sets``
(every question, both halves) and sorts each question whose answer chunk is
not first by what is: a *sibling* (another chunk of the answer's paragraph,
before or after it), another paragraph of the same article, or another
article, and by the answer's rank (2, 3, later or not in the 20).  Chunk ids
are ``lang-article-paragraph-i``.  It also prints the MRR@20 the set would
have if every question whose first chunk is a sibling had its answer first:
how much of the gap to a target is the chunk boundary inside a paragraph
rather than the wrong passage.

``--swap`` also measures the obvious rule that fails: when the second chunk
is a sibling of the first (the next one, or either) and their ranker scores
differ by at most δ, put the second first; MRR@20 change with a paired 95%
interval on each half (tune = even articles, held-out = odd ones).

    PYTHONPATH=$PWD python bench/bench_misses.py [--swap]   # ~10 s (+30) with the e5 cache filled
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Corpus, Question
from _quality_engines import make_engine
from _quality_metrics import paired_delta, reciprocal
from bench_pair import HALVES, ranking_sets, split
from bench_rerank import _config, ranked_list

SWAPS = [(mode, delta) for mode in ("next", "either") for delta in (0.02, 0.1, 1.0)]
"""The swap rule's settings (``--swap``): which sibling, the largest score gap."""
KINDS = ("sibling before", "sibling after", "same article", "other article")
RANKS = ("2", "3", "4-20", "not in 20")


def kind_of(first: str, answer: str) -> str:
    """How the first-ranked chunk ``first`` stands to the answer's chunk ``answer``."""
    a, b = first.split("-"), answer.split("-")
    if a[:3] == b[:3]:
        return "sibling before" if int(a[3]) < int(b[3]) else "sibling after"
    return "same article" if a[:2] == b[:2] else "other article"


def rank_band(rank: int | None) -> str:
    if rank is None or rank > 20:
        return "not in 20"
    return str(rank) if rank <= 3 else "4-20"


def swapped(ranked: Sequence[Any], mode: str, delta: float) -> list[str]:
    """The ids of ``ranked`` with the swap rule applied (module notes)."""
    ids = [sc.doc_id for sc in ranked]
    if len(ranked) < 2 or ranked[0].composite_score - ranked[1].composite_score > delta:
        return ids
    kind = kind_of(ids[1], ids[0])  # where the second stands to the first
    if kind == "sibling after" or (mode == "either" and kind == "sibling before"):
        return [ids[1], ids[0], *ids[2:]]
    return ids


def first_rank(ids: Sequence[str], question: Question) -> int | None:
    return next((i + 1 for i, doc in enumerate(ids) if doc in question.relevant), None)


def swap_row(corpus: Corpus, engine: Any) -> list[str]:
    """The swap rule's MRR@20 change per setting and half."""
    halves = split(corpus)
    lists = [ranked_list(engine, q.text, 20) for q in corpus.questions]
    pairs = list(zip(lists, corpus.questions, strict=True))
    base = [first_rank([sc.doc_id for sc in r], q) for r, q in pairs]
    cells = []
    for mode, delta in SWAPS:
        new = [first_rank(swapped(r, mode, delta), q) for r, q in pairs]
        per = []
        for half in HALVES:
            keep = [i for i, h in enumerate(halves) if h == half]
            gain, width = paired_delta([new[i] for i in keep], [base[i] for i in keep])
            per.append(f"{gain:+.3f} ± {width:.3f}")
        cells.append(", ".join(per))
    return [corpus.name, *cells]


def misses(corpus: Corpus, engine: Any) -> list[str]:
    """One table row: the set's MRR@20, its misses by kind and rank, and the MRR@20 with
    every sibling-first question counted as answered first."""
    counts: Counter[tuple[str, str]] = Counter()
    mrr = siblings_first = 0.0
    for q in corpus.questions:
        got = [sc.doc_id for sc in ranked_list(engine, q.text, 20)]
        rank = first_rank(got, q)
        mrr += reciprocal(rank)
        if rank == 1 or not got:
            siblings_first += reciprocal(rank)
            continue
        # The answer's chunk: the listed one, else any (the kind reads its paragraph).
        answer = got[rank - 1] if rank is not None else sorted(q.relevant)[0]
        kind = kind_of(got[0], answer)
        counts[kind, rank_band(rank)] += 1
        siblings_first += 1.0 if kind.startswith("sibling") else reciprocal(rank)
    n = len(corpus.questions)
    cells = []
    for kind in KINDS:
        per = [counts[kind, band] for band in RANKS]
        cells.append(f"{sum(per)} ({' / '.join(map(str, per))})")
    return [corpus.name, str(n), f"{mrr / n:.3f}", *cells, f"{siblings_first / n:.3f}"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", help="measure only the sets whose name contains this text")
    parser.add_argument("--swap", action="store_true", help="also measure the swap rule")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    vectors = E5Vectors()
    rows, swaps = [], []
    for corpus in ranking_sets(DATA):
        if args.only is not None and args.only not in corpus.name:
            continue
        engine = make_engine(_config(), corpus.chunks, E5Embedder(vectors))
        rows.append(misses(corpus, engine))
        if args.swap:
            swaps.append(swap_row(corpus, engine))
    headers = ["set", "n", "MRR@20"]
    headers += [f"first is {k}: n (answer at {' / '.join(RANKS)})" for k in KINDS]
    headers.append("MRR@20, siblings counted first")
    text = "\n".join(
        [
            "# What ranks first when the answer's chunk does not (bench_misses.py)",
            "",
            describe_machine(),
            describe_load(),
            f"- command: `{command_line()}`; {time.perf_counter() - started:.0f} s",
            "",
            format_table(headers, rows),
        ]
    )
    if swaps:
        swap_headers = ["set"] + [f"{m} sibling, δ {d} (tune, held-out)" for m, d in SWAPS]
        text += "\n\n## The swap rule: MRR@20 change\n\n" + format_table(swap_headers, swaps)
    print(text)
    write_summary("misses", text)


if __name__ == "__main__":
    main()

"""The recommended profile's budget for simple questions: answer in context against length.

The profile sizes a context by the question's complexity
(``query_analyzer.budget_low / medium / high``; most questions of the public
sets are "low").  A larger budget holds chunks ranked lower, so the answer is
in more contexts, and the LLM reads more.  Measured here for several low
budgets (medium 4,000 and high 6,000 as shipped), with e5 (vectors cached
under ``bench/out/cache``), on every question of ARCD, XQuAD's public half
(English and Arabic, and each across languages), 20 COVID-QA articles and
the mixed corpus of ARCD and those articles: the share of questions whose
answer is in the default context, and the mean and largest context length.

    PYTHONPATH=$PWD python bench/bench_budgets.py [--low 2000 2500 3000 3500]
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

from _common import print_report
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, Corpus, articles_subset, cross_lingual, load_set, normalise
from _quality_engines import make_engine
from bench_rerank import _config

from zerda_async.core.config import RECOMMENDED_BUDGETS


def sets() -> list[Corpus]:
    arcd = load_set(DATA / "arcd-train.json.gz", "Arabic (ARCD)", "ar", 400)
    covid = load_set(DATA / "covid-qa.json.gz", "English (COVID-QA)", "en", 400)
    covid = articles_subset(covid, 20)
    xen = load_set(DATA / "xquad-en-public.json.gz", "English (XQuAD en)", "xen", 400)
    xar = load_set(DATA / "xquad-ar-public.json.gz", "Arabic (XQuAD ar)", "xar", 400)
    mixed = Corpus("mixed (ARCD + COVID-QA)", arcd.chunks + covid.chunks)
    mixed.questions = arcd.questions + covid.questions
    return [
        arcd,
        covid,
        mixed,
        xen,
        xar,
        cross_lingual(xar, xen, "Arabic -> English (XQuAD)"),
        cross_lingual(xen, xar, "English -> Arabic (XQuAD)"),
    ]


def measure(corpus: Corpus, low: int, embedder: Any) -> tuple[float, float, int]:
    """Answer in the default context, mean and largest context length."""
    config = _config()
    config.query_analyzer.budget_low = low
    engine = make_engine(config, corpus.chunks, embedder)
    found, lengths = 0, []
    for q in corpus.questions:
        context = engine.run(q.text, use_history=False, record_turn=False).context
        lengths.append(len(context))
        found += any(normalise(a) in normalise(context) for a in q.answers)
    return found / max(1, len(corpus.questions)), statistics.fmean(lengths), max(lengths)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--low", type=int, nargs="+", default=[2000, 2500, 3000, 3500])
    args = parser.parse_args(argv)
    started = time.perf_counter()
    e5 = E5Embedder(E5Vectors())
    rows = []
    for corpus in sets():
        cells = []
        for low in args.low:
            share, mean, most = measure(corpus, low, e5)
            cells.append(f"{share:.1%} · {mean:,.0f} · {most:,}")
            print(f"{corpus.name} | {low} | {cells[-1]}", file=sys.stderr, flush=True)
        rows.append([corpus.name, len(corpus.questions), *cells])
    shipped = RECOMMENDED_BUDGETS[0]
    headers = [
        "set",
        "questions",
        *(f"low {low:,}{' (shipped)' if low == shipped else ''}" for low in args.low),
    ]
    caption = "answer in the default context · mean characters · largest"
    print_report(caption, headers, rows, started)


if __name__ == "__main__":
    main()

"""The relevance floor on ``bench_quality.py``'s corpora: margin floor and ``E5_FLOOR`` in one run.

``bench_quality.py``'s e5 row (recommended profile + multilingual-e5-small,
convex fusion, vectors cached on disk) over its five corpora and questions
(``load_corpora``: the same subsamples, seed and chunks), with an engine a
floor (each with an e5 wrapper carrying it, over the same cached vectors):
every question runs through both floors in turn, so machine load touches them
alike.  Measured
per corpus and floor:

* answer in the default context and false "nothing relevant" flags on the
  answerable questions;
* off-topic flagged: ``bench_quality.py``'s off-topic questions (another set's,
  in the other language than the chunks), and the same count of another set's
  questions in the chunks' language (``same_language_off_topic``).

    PYTHONPATH=$PWD python bench/bench_floor_quality.py [--questions 500] [--covid-articles 20]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _e5_vectors import E5Embedder, E5Vectors
from _quality_data import DATA, SEED, Question, load_corpora, normalise
from _quality_engines import make_engine

from zerda_async import ContextEngineConfig
from zerda_async.core.vector_floor import Floor
from zerda_async.embedders import E5_FLOOR, E5_MARGIN_FLOOR

FLOORS: list[tuple[str, Floor]] = [
    ("margin floor (before)", E5_MARGIN_FLOOR),
    ("E5_FLOOR (now)", E5_FLOOR),
]


def flags(
    engines: Sequence[Any], questions: Sequence[Question], answers: bool
) -> list[tuple[float, float]]:
    """Per floor (``engines``, in ``FLOORS`` order): (share flagged "nothing relevant", share
    with an answer in the context)."""
    flagged = [0] * len(FLOORS)
    found = [0] * len(FLOORS)
    for q in questions:
        wanted = [normalise(a) for a in q.answers]
        for i, engine in enumerate(engines):
            result = engine.run(q.text, use_history=False, record_turn=False)
            flagged[i] += result.nothing_relevant
            if answers:
                context = normalise(result.context)
                found[i] += any(a in context for a in wanted)
    n = max(1, len(questions))
    return [(f / n, a / n) for f, a in zip(flagged, found, strict=True)]


def cell(before: float, now: float) -> str:
    return f"{before:.1%} → {now:.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--covid-articles", type=int, default=20)
    args = parser.parse_args()
    corpora = load_corpora(args.data, 400, args.questions, args.covid_articles)
    e5 = E5Embedder(E5Vectors())
    rows = []
    for corpus in corpora:
        # An engine a floor, each with an e5 wrapper carrying it over the same vectors.
        engines = [
            make_engine(
                ContextEngineConfig.recommended(),
                corpus.chunks,
                E5Embedder(e5.vectors, vector_floor=floor),
            )
            for _, floor in FLOORS
        ]
        answerable = flags(engines, corpus.questions, True)
        other = flags(engines, corpus.off_topic, False) if corpus.off_topic else None
        same = corpus.same_language_off_topic
        own = flags(engines, same, False) if same else None
        rows.append(
            [
                corpus.name,
                len(corpus.questions),
                cell(answerable[0][1], answerable[1][1]),
                cell(answerable[0][0], answerable[1][0]),
                f"{len(corpus.off_topic)}: {cell(other[0][0], other[1][0])}" if other else "—",
                f"{len(same)}: {cell(own[0][0], own[1][0])}" if own else "—",
            ]
        )
        print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    headers = [
        "corpus",
        "questions",
        "answer in default ctx",
        "false 'nothing relevant'",
        "off-topic in the other language flagged",
        "off-topic in the chunks' language flagged",
    ]
    text = "\n".join(
        [
            "# Relevance floor on the quality corpora (bench/bench_floor_quality.py)",
            "",
            f"Machine: {describe_machine()}",
            f"Load: {describe_load()}",
            f"Command: {command_line()}",
            f"Method: recommended profile + {e5.vectors.name} (convex fusion, cached vectors),"
            f" 400-character chunks, bench_quality.py's corpora and questions (seed {SEED});"
            " each question runs through both floors in turn (an engine a floor, over the same"
            " vectors). Cells:"
            f" {FLOORS[0][0]} → {FLOORS[1][0]}.",
            "",
            format_table(headers, rows),
        ]
    )
    print(text)
    print(f"written to {write_summary('floor_quality', text)}")


if __name__ == "__main__":
    main()

"""The trade-off of ``composer.min_vector_margin``: cross-language answers against off-topic flags.

The relevance floor says "nothing relevant" when no chunk holds
``min_query_coverage`` of the query's words, unless a chunk's cosine stands
``min_vector_margin`` above the last of the vector list (convex fusion sets
``vector_margin``).  A lower margin lets more cross-language questions through
— and more off-topic ones.  For each margin and corpus, with the recommended
profile and e5: answer in the default context, answerable questions flagged,
off-topic questions flagged (in another language than the chunks, and in
theirs).  The adaptive budget is off here (see ``floor_sweep``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from _quality_data import Corpus, Question, normalise

from zerda_async import ContextEngineConfig

__all__ = ["FLOOR_HEADERS", "floor_sweep"]

FLOOR_HEADERS = [
    "corpus",
    "min_vector_margin",
    "answer in default ctx",
    "false 'nothing relevant'",
    "off-topic flagged (other language)",
    "off-topic flagged (chunks' language)",
]


def _flagged(engine: Any, questions: Sequence[Question]) -> str:
    if not questions:
        return "—"
    flags = sum(
        engine.run(q.text, use_history=False, record_turn=False).nothing_relevant for q in questions
    )
    return f"{flags / len(questions):.1%}"


def floor_sweep(
    corpora: Sequence[Corpus],
    make_engine: Callable[[ContextEngineConfig, Sequence[Any], Any], Any],
    embedder: Any,
    margins: Sequence[float],
) -> list[list[Any]]:
    """One row per corpus and margin (0 = keywords alone decide, as before convex fusion)."""
    rows: list[list[Any]] = []
    for corpus in corpora:
        for margin in margins:
            config = ContextEngineConfig.recommended()
            config.composer.min_vector_margin = margin
            # The fixed margin alone (the embedder's calibration: bench_floor.py).
            config.composer.embedder_floor = False
            # The adaptive budget shrinks after a run of short contexts, and every
            # "nothing relevant" placeholder is one: with it on, each row would also
            # measure the flags of the questions asked before (see bench/README.md).
            config.enable_adaptive = False
            engine = make_engine(config, corpus.chunks, embedder)
            answered = flagged = 0
            for q in corpus.questions:
                result = engine.run(q.text, use_history=False, record_turn=False)
                context = normalise(result.context)
                answered += any(normalise(a) in context for a in q.answers)
                flagged += result.nothing_relevant
            n = len(corpus.questions)
            rows.append(
                [
                    corpus.name,
                    margin,
                    f"{answered / n:.1%}",
                    f"{flagged / n:.1%}",
                    _flagged(engine, corpus.off_topic),
                    _flagged(engine, corpus.same_language_off_topic),
                ]
            )
    return rows

"""The quality figures of ``bench_quality.py`` and its sibling benches: recall and MRR of a
ranked list, answer in context and relevance flags of ``run()``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _quality_data import Question, normalise
from _quality_engines import Ranked

WIDE_BUDGET = 4000


def reciprocal(rank: int | None) -> float:
    """The reciprocal rank at cut 20 of a 1-based rank (``None``: not listed)."""
    return 0.0 if rank is None or rank > 20 else 1.0 / rank


def paired_delta(ranks: Sequence[int | None], base: Sequence[int | None]) -> tuple[float, float]:
    """MRR@20 of ``ranks`` less ``base``'s on the same questions, and the half-width of its
    95% interval (1.96 standard errors of the per-question differences)."""
    diff = [reciprocal(a) - reciprocal(b) for a, b in zip(ranks, base, strict=True)]
    if not diff:
        return 0.0, 0.0
    se = statistics.stdev(diff) / len(diff) ** 0.5 if len(diff) > 1 else 0.0
    return statistics.fmean(diff), 1.96 * se


def ranking_metrics(ranked: Ranked, questions: Sequence[Question]) -> tuple[float, float, float]:
    """recall@5, recall@20 and MRR@20 over ``questions``."""
    r5 = r20 = mrr = 0.0
    for q in questions:
        ids = ranked(q.text)[:20]
        first = next((i for i, d in enumerate(ids) if d in q.relevant), None)
        if first is not None:
            r20 += 1
            r5 += first < 5
            mrr += 1 / (first + 1)
    n = len(questions)
    return r5 / n, r20 / n, mrr / n


@dataclass
class ContextFigures:
    """What the contexts of one profile measure on one corpus."""

    default: float  # answer in the default context
    wide: float  # answer in a WIDE_BUDGET context
    mean_len: float  # mean default context length (characters)
    false_flags: float  # answerable questions reported as "nothing relevant"
    off_topic: float | None  # questions of the other language's set reported so


def context_metrics(
    engine: Any, questions: Sequence[Question], off_topic: Sequence[Question]
) -> ContextFigures:
    """Answer in the default and the wide context, mean default length, relevance flags."""
    default = wide = flagged = 0
    lengths = []
    for q in questions:
        answers = [normalise(a) for a in q.answers]
        result = engine.run(q.text, use_history=False, record_turn=False)
        lengths.append(len(result.context))
        default += any(a in normalise(result.context) for a in answers)
        flagged += result.nothing_relevant
        ctx = engine.run(
            q.text, override_budget=WIDE_BUDGET, use_history=False, record_turn=False
        ).context
        wide += any(a in normalise(ctx) for a in answers)
    off = sum(
        engine.run(q.text, use_history=False, record_turn=False).nothing_relevant for q in off_topic
    )
    n = len(questions)
    return ContextFigures(
        default / n,
        wide / n,
        statistics.fmean(lengths),
        flagged / n,
        off / len(off_topic) if off_topic else None,
    )

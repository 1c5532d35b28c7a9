"""Engine operations around the stage list: multi-query runs and the legacy tuple API.

These functions hold the documented semantics so that the sync facade and the
async engine share one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zerda_async.core.budget import ComplexityBasedAllocation, EqualBudgetAllocation
from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.models import QueryAnalysis, ScoredChunk
from zerda_async.core.truncation import truncate
from zerda_async.pipeline._state import EngineState

__all__ = [
    "MultiQueryPlan",
    "build_context",
    "build_multi_query_context",
    "compress_context",
    "context_stats",
    "join_multi_query",
    "plan_multi_query",
]


class MultiQueryPlan:
    """Budgets and analyses of a multi-query run (raw queries, no enrichment)."""

    __slots__ = ("analyses", "budgets", "queries", "total_budget")

    def __init__(
        self,
        queries: list[Any],
        total_budget: int,
        budgets: list[int],
        analyses: list[QueryAnalysis],
    ) -> None:
        self.queries = queries
        self.total_budget = total_budget
        self.budgets = budgets
        self.analyses = analyses


def plan_multi_query(
    state: EngineState,
    queries: Sequence[Any],
    global_budget: int | None,
    use_weighted: bool,
) -> MultiQueryPlan:
    """Split the global budget between ``queries`` (complexity-weighted or equal).

    The injected budget allocator is deliberately not used: the documented
    engine hard-codes these two allocations.
    """
    query_list = list(queries)
    total = global_budget or state.config.composer.max_context_length
    analyses = [state.analyzer.analyze(q) for q in query_list]
    if use_weighted:
        budgets = ComplexityBasedAllocation().allocate(total, len(query_list), analyses)
    else:
        budgets = EqualBudgetAllocation().allocate(total, len(query_list))
    return MultiQueryPlan(query_list, total, budgets, analyses)


def join_multi_query(state: EngineState, plan: MultiQueryPlan, contexts: Sequence[str]) -> str:
    """Label each query's context, join them and clamp to the global budget."""
    sections = []
    for i, (query, analysis, context) in enumerate(
        zip(plan.queries, plan.analyses, contexts, strict=True)
    ):
        # The Arabic label's extra colon is documented behaviour.
        label = f"Query: {i + 1}" if analysis.is_arabic else f"Query {i + 1}"
        sections.append(f"--- {label}: {query} ---\n{context}")
    combined = "\n\n".join(sections)
    if state.counter(combined) > plan.total_budget:
        combined = truncate(combined, plan.total_budget, state.counter, None)
    return combined


def build_context(
    state: EngineState,
    query: Any,
    chunks: Sequence[Any],
    max_chunks: int | None = None,
    max_length: int | None = None,
) -> str:
    """Legacy: compose ``(chunk, score)`` tuples for ``query`` (no cache, guard or history)."""
    analysis = state.analyzer.analyze(query)
    budget = max_length or analysis.context_budget
    scored = [
        ScoredChunk(chunk=chunk, vector_score=float(score), composite_score=float(score))
        for chunk, score in chunks
    ]
    filtered = state.chunk_filter.filter(scored)
    ranked = state.ranker.rank(
        filtered, analysis, max_n=max_chunks or state.config.ranking.max_chunks_to_rank
    )
    context: str = state.composer.compose(ranked, analysis, budget)
    return context


def build_multi_query_context(
    state: EngineState,
    queries: Sequence[Any],
    all_chunks: Sequence[Sequence[Any]],
) -> str:
    """Legacy: one ``build`` per query, sections joined by blank lines (no clamp)."""
    sections = [
        f"--- {query} ---\n{build_context(state, query, chunks)}"
        for query, chunks in zip(queries, all_chunks, strict=False)
    ]
    return "\n\n".join(sections)


def compress_context(state: EngineState, context: str, target_length: int) -> str:
    """Legacy: the composer's word-boundary truncation (not a semantic compression)."""
    truncated: str = state.composer._hard_truncate(context, target_length)
    return truncated


def context_stats(state: EngineState, context: str) -> dict[str, Any]:
    """Legacy: the composer's stats, or just the length for a custom composer."""
    if isinstance(state.composer, SmartContextComposer):
        return state.composer.get_stats(context)
    return {"total_length": len(context)}

"""Splitting one global budget between the queries of a multi-query run.

All three strategies give any rounding remainder to the first query, which is
why the first entry can end up 0 or negative (see each class).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from .models import QueryAnalysis, QueryComplexity
from .strategy import BudgetAllocationStrategy

__all__ = [
    "ComplexityBasedAllocation",
    "EqualBudgetAllocation",
    "WeightedBudgetAllocation",
]


class EqualBudgetAllocation(BudgetAllocationStrategy):
    """Equal shares by floor division; the first query absorbs the remainder."""

    def allocate(self, total_budget: int, n_queries: int) -> list[int]:
        """``[]`` for ``n_queries <= 0``; e.g. ``(1000, 3)`` gives ``[334, 333, 333]``."""
        if n_queries <= 0:
            return []
        per = total_budget // n_queries
        budgets = [per] * n_queries
        budgets[0] += total_budget - sum(budgets)
        return budgets


class WeightedBudgetAllocation(BudgetAllocationStrategy):
    """Shares proportional to ``weights`` (stored as given, neither copied nor checked).

    Each share is truncated to an int and raised to at least 1, then the first
    share absorbs the difference to ``total_budget`` — which can make it 0 or
    negative when the floors of 1 overshoot a small total.
    """

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = weights

    def allocate(self, total_budget: int, n_queries: int) -> list[int]:
        """Raise ``ValueError`` unless there is exactly one weight per query.

        All-zero weights are treated as a total weight of 1.  With no weights
        and ``n_queries == 0`` the remainder step raises ``IndexError``.
        """
        weights = self.weights
        if len(weights) != n_queries:
            raise ValueError("weights length must equal n_queries.")
        total_w = sum(weights) or 1.0
        raw = [total_budget * w / total_w for w in weights]
        budgets = [max(1, int(b)) for b in raw]
        budgets[0] += total_budget - sum(budgets)
        return budgets


class ComplexityBasedAllocation(BudgetAllocationStrategy):
    """Weights each query by its complexity (LOW 1.0, MEDIUM 1.5, HIGH 2.5).

    Without analyses, or with a number of analyses different from
    ``n_queries``, it silently falls back to :class:`EqualBudgetAllocation`.
    """

    _COMPLEXITY_WEIGHTS: ClassVar[dict[QueryComplexity, float]] = {
        QueryComplexity.LOW: 1.0,
        QueryComplexity.MEDIUM: 1.5,
        QueryComplexity.HIGH: 2.5,
    }

    def allocate(
        self,
        total_budget: int,
        n_queries: int,
        analyses: Sequence[QueryAnalysis] | None = None,
    ) -> list[int]:
        """Budgets for ``n_queries`` queries, weighted by ``analyses[i].complexity``."""
        if not analyses or len(analyses) != n_queries:
            return EqualBudgetAllocation().allocate(total_budget, n_queries)
        weights = [self._COMPLEXITY_WEIGHTS.get(a.complexity, 1.5) for a in analyses]
        return WeightedBudgetAllocation(weights).allocate(total_budget, n_queries)

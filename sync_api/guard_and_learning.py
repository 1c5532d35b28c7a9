"""Guard, adaptive learning, budget allocation and cache (re-exported from the core)."""

from zerda_async.core.adaptive import AdaptiveLearningSystem
from zerda_async.core.budget import (
    ComplexityBasedAllocation,
    EqualBudgetAllocation,
    WeightedBudgetAllocation,
)
from zerda_async.core.cache import ContextCache
from zerda_async.core.guard import ContextGuard

__all__ = [
    "AdaptiveLearningSystem",
    "ComplexityBasedAllocation",
    "ContextCache",
    "ContextGuard",
    "EqualBudgetAllocation",
    "WeightedBudgetAllocation",
]

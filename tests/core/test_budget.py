"""Tests of the budget allocation strategies (spec: guard_and_learning.md §3)."""

from __future__ import annotations

import pytest

from zerda_async.core.budget import (
    ComplexityBasedAllocation,
    EqualBudgetAllocation,
    WeightedBudgetAllocation,
)
from zerda_async.core.models import QueryAnalysis, QueryComplexity
from zerda_async.core.strategy import BudgetAllocationStrategy


def _analysis(complexity: QueryComplexity) -> QueryAnalysis:
    return QueryAnalysis(original_query="q", normalized="q", complexity=complexity)


def test_all_subclass_the_strategy() -> None:
    for strategy in (
        EqualBudgetAllocation(),
        WeightedBudgetAllocation([1.0]),
        ComplexityBasedAllocation(),
    ):
        assert isinstance(strategy, BudgetAllocationStrategy)


# ── equal ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("total", "n", "expected"),
    [
        (1000, 3, [334, 333, 333]),
        (2, 3, [2, 0, 0]),
        (10, 0, []),
        (1000, 1, [1000]),
        (2, 5, [2, 0, 0, 0, 0]),
        (0, 4, [0, 0, 0, 0]),
        (1000, -2, []),
        (6001, 4, [1501, 1500, 1500, 1500]),
    ],
)
def test_equal_examples(total: int, n: int, expected: list[int]) -> None:
    assert EqualBudgetAllocation().allocate(total, n) == expected


def test_equal_negative_total_uses_floor_division() -> None:
    # -5 // 2 == -3, the first share absorbs +1.
    assert EqualBudgetAllocation().allocate(-5, 2) == [-2, -3]


def test_equal_sum_is_preserved() -> None:
    for total in (0, 1, 7, 999, 10**9):
        for n in range(1, 8):
            assert sum(EqualBudgetAllocation().allocate(total, n)) == total


def test_equal_bad_input_raises_type_error() -> None:
    with pytest.raises(TypeError):
        EqualBudgetAllocation().allocate(None, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        EqualBudgetAllocation().allocate(100, None)  # type: ignore[arg-type]


# ── weighted ─────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("weights", "total", "n", "expected"),
    [
        ([0.5, 0.3, 0.2], 1000, 3, [500, 300, 200]),
        ([1, 1, 1], 1000, 3, [334, 333, 333]),
        ([0, 0], 10, 2, [9, 1]),
        ([1, 2], 1, 2, [0, 1]),
        ([1.0, 2.5, 1.5], 6000, 3, [1200, 3000, 1800]),
    ],
)
def test_weighted_examples(weights: list[float], total: int, n: int, expected: list[int]) -> None:
    assert WeightedBudgetAllocation(weights).allocate(total, n) == expected


def test_weighted_first_entry_can_go_negative() -> None:
    assert WeightedBudgetAllocation([1, 1, 1, 1]).allocate(2, 4) == [-1, 1, 1, 1]


def test_weighted_length_mismatch_message() -> None:
    with pytest.raises(ValueError, match=r"^weights length must equal n_queries\.$"):
        WeightedBudgetAllocation([1, 2]).allocate(1000, 3)


def test_weighted_empty_with_zero_queries_raises_index_error() -> None:
    with pytest.raises(IndexError):
        WeightedBudgetAllocation([]).allocate(100, 0)


def test_weighted_stores_weights_without_copy() -> None:
    weights = [1.0, 1.0]
    strategy = WeightedBudgetAllocation(weights)
    assert strategy.weights is weights
    weights.append(2.0)
    assert strategy.allocate(400, 3) == [100, 100, 200]


def test_weighted_negative_weights_are_not_validated() -> None:
    # total_w = 0 -> 1.0; raw = [-100, 100] -> floored [1, 100]; first absorbs -1.
    assert WeightedBudgetAllocation([-1, 1]).allocate(100, 2) == [0, 100]


def test_weighted_none_weights_raise_type_error() -> None:
    with pytest.raises(TypeError):
        WeightedBudgetAllocation(None).allocate(100, 1)  # type: ignore[arg-type]


# ── complexity ───────────────────────────────────────────────────────────────


def test_complexity_weights_constant() -> None:
    assert ComplexityBasedAllocation._COMPLEXITY_WEIGHTS == {
        QueryComplexity.LOW: 1.0,
        QueryComplexity.MEDIUM: 1.5,
        QueryComplexity.HIGH: 2.5,
    }


def test_complexity_spec_example() -> None:
    analyses = [
        _analysis(QueryComplexity.LOW),
        _analysis(QueryComplexity.MEDIUM),
        _analysis(QueryComplexity.HIGH),
    ]
    assert ComplexityBasedAllocation().allocate(6000, 3, analyses) == [1200, 1800, 3000]


def test_complexity_without_analyses_falls_back_to_equal() -> None:
    assert ComplexityBasedAllocation().allocate(6000, 3) == [2000, 2000, 2000]
    assert ComplexityBasedAllocation().allocate(900, 3, None) == [300, 300, 300]
    assert ComplexityBasedAllocation().allocate(900, 3, []) == [300, 300, 300]


def test_complexity_mismatched_analyses_fall_back_silently() -> None:
    analyses = [_analysis(QueryComplexity.HIGH)]
    assert ComplexityBasedAllocation().allocate(1000, 3, analyses) == [334, 333, 333]


def test_complexity_same_complexity_is_equal_split() -> None:
    analyses = [_analysis(QueryComplexity.HIGH)] * 2
    assert ComplexityBasedAllocation().allocate(1001, 2, analyses) == [501, 500]


def test_complexity_unknown_value_weighs_like_medium() -> None:
    odd = _analysis(QueryComplexity.LOW)
    odd.complexity = "weird"  # type: ignore[assignment]
    analyses = [_analysis(QueryComplexity.LOW), odd]
    assert ComplexityBasedAllocation().allocate(2500, 2, analyses) == [1000, 1500]


def test_complexity_zero_queries_without_analyses() -> None:
    assert ComplexityBasedAllocation().allocate(100, 0) == []

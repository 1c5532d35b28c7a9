"""Tests of the adaptive learning system (spec: guard_and_learning.md §2)."""

from __future__ import annotations

import logging

import pytest

from zerda_async.core.adaptive import AdaptiveLearningSystem
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import QueryAnalysis

LOGGER = "zerda_async.core.adaptive"


def _analysis(budget: int) -> QueryAnalysis:
    return QueryAnalysis(original_query="q", normalized="q", context_budget=budget)


def _learner(enabled: bool = True) -> AdaptiveLearningSystem:
    cfg = ContextEngineConfig()
    cfg.enable_adaptive = enabled
    return AdaptiveLearningSystem(cfg)


def _record(
    learner: AdaptiveLearningSystem,
    n: int,
    context_length: int,
    *,
    chunk_count: int = 3,
    response_ms: float = 12.5,
    fail_every: int = 0,
) -> None:
    for i in range(n):
        failed = fail_every > 0 and i % fail_every == fail_every - 1
        learner.record(
            query="q",
            analysis=None,
            context_length=context_length,
            chunk_count=chunk_count,
            response_ms=response_ms,
            guard_passed=not failed,
        )


def test_window_constant() -> None:
    assert AdaptiveLearningSystem.WINDOW == 100


# ── suggest_budget ───────────────────────────────────────────────────────────


def test_spec_example_placeholder_collapse_to_200() -> None:
    learner = _learner()
    _record(learner, 10, 69)
    assert learner.suggest_budget(_analysis(800)) == 200


def test_spec_example_floor_raises_small_base_to_200() -> None:
    learner = _learner()
    _record(learner, 10, 40)
    assert learner.suggest_budget(_analysis(100)) == 200


def test_fewer_than_ten_samples_returns_base() -> None:
    learner = _learner()
    _record(learner, 9, 10)
    assert learner.suggest_budget(_analysis(800)) == 800
    _record(learner, 1, 10)
    assert learner.suggest_budget(_analysis(800)) == 200


def test_adjusted_budget_is_truncated_not_rounded() -> None:
    learner = _learner()
    _record(learner, 10, 399)
    # 399 * 1.3 = 518.7 -> 518
    assert learner.suggest_budget(_analysis(800)) == 518
    assert learner.suggest_budget(_analysis(2000)) == 518


def test_shrink_threshold_is_strict() -> None:
    learner = _learner()
    _record(learner, 10, 400)
    assert learner.suggest_budget(_analysis(800)) == 800
    assert learner.suggest_budget(_analysis(801)) == 520


def test_base_below_average_is_unchanged() -> None:
    learner = _learner()
    _record(learner, 10, 100)
    for base in (100, 150, 199):
        assert learner.suggest_budget(_analysis(base)) == base
    assert learner.suggest_budget(_analysis(201)) == 200
    assert learner.suggest_budget(_analysis(10_000)) == 200


def test_average_uses_true_division() -> None:
    learner = _learner()
    _record(learner, 5, 1000)
    _record(learner, 5, 1001)
    # avg 1000.5 -> int(1300.65) = 1300
    assert learner.suggest_budget(_analysis(4000)) == 1300


def test_suggest_budget_uses_only_the_window() -> None:
    learner = _learner()
    _record(learner, 100, 10)
    _record(learner, 100, 3000)
    assert learner.suggest_budget(_analysis(10_000)) == 3900


def test_disabled_returns_base_and_records_nothing() -> None:
    learner = _learner(enabled=False)
    _record(learner, 25, 50)
    assert learner.suggest_budget(_analysis(800)) == 800
    assert learner.get_performance_report() == {
        "total_queries": 0,
        "avg_response_ms": 0.0,
        "avg_context_length": 0.0,
        "avg_chunk_count": 0.0,
        "guard_failure_rate": 0.0,
        "samples": 0,
    }


def test_enable_flag_is_snapshotted() -> None:
    cfg = ContextEngineConfig()
    learner = AdaptiveLearningSystem(cfg)
    cfg.enable_adaptive = False
    _record(learner, 10, 50)
    assert learner.suggest_budget(_analysis(800)) == 200


def test_suggest_budget_logs_before_the_floor(caplog: pytest.LogCaptureFixture) -> None:
    learner = _learner()
    _record(learner, 10, 69)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        learner.suggest_budget(_analysis(800))
    assert caplog.messages == ["AdaptiveLearning: adjusting budget 800 → 89"]


def test_suggest_budget_does_not_mutate_analysis() -> None:
    learner = _learner()
    _record(learner, 10, 69)
    analysis = _analysis(800)
    learner.suggest_budget(analysis)
    assert analysis.context_budget == 800


# ── report ───────────────────────────────────────────────────────────────────


def test_report_keys_order_and_rounding() -> None:
    learner = _learner()
    learner.record("q", None, 100, 1, 10.123, True)
    learner.record("q", None, 101, 2, 10.0, False)
    learner.record("q", None, 101, 2, 10.0, True)
    report = learner.get_performance_report()
    assert list(report) == [
        "total_queries",
        "avg_response_ms",
        "avg_context_length",
        "avg_chunk_count",
        "guard_failure_rate",
        "samples",
    ]
    assert report == {
        "total_queries": 3,
        "avg_response_ms": 10.04,
        "avg_context_length": 100.7,
        "avg_chunk_count": 1.67,
        "guard_failure_rate": 0.333,
        "samples": 3,
    }


def test_report_window_caps_samples_but_not_total() -> None:
    learner = _learner()
    _record(learner, 120, 3000, fail_every=4)
    report = learner.get_performance_report()
    assert report["total_queries"] == 120
    assert report["samples"] == 100
    assert report["guard_failure_rate"] == 0.25
    assert report["avg_context_length"] == 3000.0


def test_report_failure_rate_within_window() -> None:
    learner = _learner()
    _record(learner, 25, 50, fail_every=4)
    assert learner.get_performance_report()["guard_failure_rate"] == 0.24


def test_empty_report_is_zeroes() -> None:
    report = _learner().get_performance_report()
    assert report["avg_response_ms"] == 0.0
    assert isinstance(report["avg_response_ms"], float)
    assert report["samples"] == 0


def test_query_and_analysis_are_ignored() -> None:
    learner = _learner()
    learner.record(None, None, 10, 1, 1.0, True)  # type: ignore[arg-type]
    assert learner.get_performance_report()["total_queries"] == 1


def test_suggested_budgets_window_is_never_filled() -> None:
    learner = _learner()
    _record(learner, 30, 10)
    learner.suggest_budget(_analysis(800))
    assert len(learner._suggested_budgets) == 0


# ── _auto_tune ───────────────────────────────────────────────────────────────


def test_auto_tune_runs_every_twentieth_record(caplog: pytest.LogCaptureFixture) -> None:
    learner = _learner()
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        _record(learner, 19, 10, response_ms=3000.0, fail_every=1)
        assert caplog.records == []
        _record(learner, 1, 10, response_ms=3000.0, fail_every=1)
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.INFO]
    assert caplog.messages == [
        "AdaptiveLearning: Guard failure rate is high (100.0%) — please check the "
        "quality of the retrieval system.",
        "AdaptiveLearning: Average response time 3000ms — consider enabling caching.",
    ]


def test_auto_tune_thresholds_are_strict(caplog: pytest.LogCaptureFixture) -> None:
    learner = _learner()
    # 6 failures out of 20 = 0.3 exactly; average 2000 ms exactly.
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        for i in range(20):
            learner.record("q", None, 10, 1, 2000.0, i >= 6)
    assert caplog.records == []


def test_auto_tune_changes_nothing() -> None:
    learner = _learner()
    _record(learner, 19, 10, response_ms=5000.0, fail_every=1)
    before = learner.get_performance_report()
    learner._auto_tune()
    assert learner.get_performance_report() == before


# ── snapshot / restore ───────────────────────────────────────────────────────


def test_snapshot_is_independent() -> None:
    learner = _learner()
    _record(learner, 10, 69)
    copy = learner.snapshot()
    assert copy is not learner
    assert copy.get_performance_report() == learner.get_performance_report()
    assert copy.suggest_budget(_analysis(800)) == 200

    _record(copy, 50, 5000)
    assert learner.get_performance_report()["total_queries"] == 10
    assert learner.suggest_budget(_analysis(800)) == 200
    _record(learner, 5, 1)
    assert copy.get_performance_report()["total_queries"] == 60


def test_snapshot_keeps_window_and_enabled_flag() -> None:
    learner = _learner()
    _record(learner, 100, 10)
    copy = learner.snapshot()
    _record(copy, 100, 3000)
    assert copy.get_performance_report()["samples"] == 100
    assert copy.suggest_budget(_analysis(10_000)) == 3900

    off = _learner(enabled=False).snapshot()
    _record(off, 10, 10)
    assert off.get_performance_report()["total_queries"] == 0


def test_restore_copies_state_from_snapshot() -> None:
    learner = _learner()
    _record(learner, 3, 10)
    staged = learner.snapshot()
    _record(staged, 10, 69)
    learner.restore(staged)
    assert learner.get_performance_report() == staged.get_performance_report()
    _record(staged, 5, 1)
    assert learner.get_performance_report()["total_queries"] == 13


# ── bad input ────────────────────────────────────────────────────────────────


def test_suggest_budget_with_none_analysis_raises() -> None:
    with pytest.raises(AttributeError):
        _learner().suggest_budget(None)  # type: ignore[arg-type]


def test_non_numeric_lengths_fail_when_averaged() -> None:
    learner = _learner()
    for _ in range(10):
        learner.record("q", None, None, 1, 1.0, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        learner.suggest_budget(_analysis(800))
    with pytest.raises(TypeError):
        learner.get_performance_report()


def test_huge_values_are_averaged_exactly() -> None:
    learner = _learner()
    _record(learner, 10, 10**12)
    assert learner.suggest_budget(_analysis(800)) == 800
    assert learner.get_performance_report()["avg_context_length"] == 1e12

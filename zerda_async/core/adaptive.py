"""Rolling run statistics and the budget suggestion derived from them.

The learner keeps the last :attr:`AdaptiveLearningSystem.WINDOW` runs' response
times, context lengths, chunk counts and guard outcomes.  Its only effect on
results is :meth:`AdaptiveLearningSystem.suggest_budget`, which replaces a base
budget by a smaller (or, below 200, larger) one once recent contexts have been
much shorter than the base.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import Any, ClassVar

from .config import ContextEngineConfig
from .models import QueryAnalysis

__all__ = ["AdaptiveLearningSystem"]

logger = logging.getLogger(__name__)

# Thresholds of the documented package.
_MIN_SAMPLES = 10
_SHRINK_RATIO = 0.5
_GROWTH = 1.3
_BUDGET_FLOOR = 200
_TUNE_EVERY = 20
_HIGH_FAILURE_RATE = 0.3
_SLOW_RESPONSE_MS = 2000


def _avg(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


class AdaptiveLearningSystem:
    """Rolling statistics over the last ``WINDOW`` runs and a budget suggestion.

    ``config.enable_adaptive`` is read once, at construction: when it is off,
    nothing is recorded and :meth:`suggest_budget` returns the base budget.
    Instances are mutable and not locked; callers that share one across
    threads must serialise :meth:`record` themselves (or work on a
    :meth:`snapshot`).
    """

    WINDOW: ClassVar[int] = 100

    def __init__(self, config: ContextEngineConfig) -> None:
        self.cfg = config
        self._enabled = config.enable_adaptive
        self._response_times: deque[float] = deque(maxlen=self.WINDOW)
        self._context_lengths: deque[int] = deque(maxlen=self.WINDOW)
        self._chunk_counts: deque[int] = deque(maxlen=self.WINDOW)
        # True means the guard failed for that run.
        self._guard_failures: deque[bool] = deque(maxlen=self.WINDOW)
        # Kept for parity with the documented package, which never fills it.
        self._suggested_budgets: deque[int] = deque(maxlen=self.WINDOW)
        self._total_queries = 0

    def record(
        self,
        query: str,
        analysis: QueryAnalysis | None,
        context_length: int,
        chunk_count: int,
        response_ms: float,
        guard_passed: bool,
    ) -> None:
        """Add one run to the windows (``query`` and ``analysis`` are ignored).

        Every 20th recorded run triggers :meth:`_auto_tune`, which only logs.
        """
        if not self._enabled:
            return
        self._response_times.append(response_ms)
        self._context_lengths.append(context_length)
        self._chunk_counts.append(chunk_count)
        self._guard_failures.append(not guard_passed)
        self._total_queries += 1
        if self._total_queries % _TUNE_EVERY == 0:
            self._auto_tune()

    def suggest_budget(self, analysis: QueryAnalysis) -> int:
        """The budget to use for ``analysis`` given the recent context lengths.

        With at least 10 samples whose mean is below half of
        ``analysis.context_budget``, returns ``max(int(mean * 1.3), 200)``;
        otherwise returns ``analysis.context_budget`` unchanged.  The floor
        of 200 can exceed a small base budget.
        """
        base = analysis.context_budget
        if not self._enabled or len(self._context_lengths) < _MIN_SAMPLES:
            return base
        avg = sum(self._context_lengths) / len(self._context_lengths)
        if avg < base * _SHRINK_RATIO:
            adjusted = int(avg * _GROWTH)
            logger.debug("AdaptiveLearning: adjusting budget %d → %d", base, adjusted)
            return max(adjusted, _BUDGET_FLOOR)
        return base

    def get_performance_report(self) -> dict[str, Any]:
        """Totals and rounded window averages (all averages are ``0.0`` when empty)."""
        return {
            "total_queries": self._total_queries,
            "avg_response_ms": round(_avg(self._response_times), 2),
            "avg_context_length": round(_avg(self._context_lengths), 1),
            "avg_chunk_count": round(_avg(self._chunk_counts), 2),
            "guard_failure_rate": round(_avg(self._guard_failures), 3),
            "samples": len(self._response_times),
        }

    def snapshot(self) -> AdaptiveLearningSystem:
        """An independent copy of this learner, for the async engine.

        The copy shares the (read-only) configuration but has its own windows
        and counter, so a speculative :meth:`suggest_budget` or ``record`` on
        it never touches this instance, and vice versa.
        """
        clone = AdaptiveLearningSystem.__new__(AdaptiveLearningSystem)
        clone.cfg = self.cfg
        clone._enabled = self._enabled
        clone._response_times = deque(self._response_times, maxlen=self.WINDOW)
        clone._context_lengths = deque(self._context_lengths, maxlen=self.WINDOW)
        clone._chunk_counts = deque(self._chunk_counts, maxlen=self.WINDOW)
        clone._guard_failures = deque(self._guard_failures, maxlen=self.WINDOW)
        clone._suggested_budgets = deque(self._suggested_budgets, maxlen=self.WINDOW)
        clone._total_queries = self._total_queries
        return clone

    def restore(self, snapshot: AdaptiveLearningSystem) -> None:
        """Replace this learner's state by a copy of ``snapshot``'s state.

        The counterpart of :meth:`snapshot`: the async engine can record on a
        copy and then commit it.  ``enabled`` and the configuration are taken
        from ``snapshot`` as well; later changes to ``snapshot`` do not leak in.
        """
        state = snapshot.snapshot()
        self.cfg = state.cfg
        self._enabled = state._enabled
        self._response_times = state._response_times
        self._context_lengths = state._context_lengths
        self._chunk_counts = state._chunk_counts
        self._guard_failures = state._guard_failures
        self._suggested_budgets = state._suggested_budgets
        self._total_queries = state._total_queries

    def _auto_tune(self) -> None:
        """Log advice on a high guard failure rate or slow responses; changes nothing."""
        avg_rt = _avg(self._response_times)
        fail_rate = _avg(self._guard_failures)
        if fail_rate > _HIGH_FAILURE_RATE:
            logger.warning(
                "AdaptiveLearning: Guard failure rate is high (%.1f%%) — please check "
                "the quality of the retrieval system.",
                fail_rate * 100,
            )
        if avg_rt > _SLOW_RESPONSE_MS:
            logger.info(
                "AdaptiveLearning: Average response time %.0fms — consider enabling caching.",
                avg_rt,
            )

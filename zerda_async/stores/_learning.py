"""Turning a shared learning window back into the engine's adaptive learner."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from ..core.adaptive import AdaptiveLearningSystem
from ._protocols import LearningSample

__all__ = ["apply_window"]


def apply_window(
    learner: AdaptiveLearningSystem, samples: Sequence[LearningSample], total: int
) -> None:
    """Load ``samples`` (oldest first) and the shared ``total`` into ``learner``.

    ``learner.suggest_budget`` then answers from every replica's runs, as one
    process's learner answers from its own.
    """
    window = learner.WINDOW
    kept = list(samples)[-window:]
    learner._response_times = deque((s.response_ms for s in kept), maxlen=window)
    learner._context_lengths = deque((s.context_length for s in kept), maxlen=window)
    learner._chunk_counts = deque((s.chunk_count for s in kept), maxlen=window)
    learner._guard_failures = deque((not s.guard_passed for s in kept), maxlen=window)
    learner._total_queries = total

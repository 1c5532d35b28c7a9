"""Tuple-based helpers of the documented package's older API (re-exported from the core)."""

from zerda_async.core.legacy import (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)

__all__ = [
    "GreedyCompression",
    "HashDeduplication",
    "PrefixDeduplication",
    "ScoreRanking",
    "validate_chunk",
]

"""What an engine reports about itself, and how its speculative stages are placed."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["OFFLOAD_MODES", "EngineStatistics", "Offload"]

Offload = Literal["auto", "threads", "inline"]
"""Where the speculative stages run: by measured cost (default), always in threads, never."""

OFFLOAD_MODES: dict[str, bool | None] = {"auto": None, "threads": True, "inline": False}


class EngineStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`AsyncContextEngine.statistics` reports."""

    in_flight: int
    """Requests submitted and not finished."""
    max_in_flight: int
    free_slots: int
    """In-flight slots free now (``max_in_flight - in_flight`` once abandoned requests left)."""
    single_flights: int
    """Cache misses leading a single flight (identical requests wait for them)."""
    workers: int
    sessions: int
    """Per-``session_id`` conversations kept."""
    cached_contexts: int
    corpus_size: int
    corpus_version: int
    vector_dtype: str
    cache_bypassed: int = 0
    """Requests whose shared cache store did not answer (served without the cache)."""
    learning_bypassed: int = 0
    """Samples or reads the shared learning store did not answer (this replica's kept)."""

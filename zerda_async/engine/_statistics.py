"""What an engine reports about itself, how its speculative stages are placed, its checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from zerda_async.core.index import VECTOR_DTYPES
from zerda_async.pipeline import Components

__all__ = ["OFFLOAD_MODES", "EngineStatistics", "Offload", "check_arguments"]

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


def check_arguments(offload: str, vector_dtype: str, components: Mapping[str, object]) -> None:
    """Bad constructor arguments raise before anything is built, naming the argument."""
    if offload not in OFFLOAD_MODES:
        raise ValueError(f"offload must be one of {sorted(OFFLOAD_MODES)}, got {offload!r}")
    if vector_dtype not in VECTOR_DTYPES:
        raise ValueError(f"vector_dtype must be one of {VECTOR_DTYPES}, got {vector_dtype!r}")
    unknown = set(components) - set(Components.__annotations__)
    if unknown:
        raise TypeError(
            f"AsyncContextEngine() got an unexpected keyword argument {sorted(unknown)[0]!r}"
        )
    reranker = components.get("reranker")
    if reranker is not None and not callable(getattr(reranker, "scores", None)):
        raise TypeError(f"reranker must have a scores(question, texts) method, got {reranker!r}")

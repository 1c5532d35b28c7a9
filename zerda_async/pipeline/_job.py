"""The per-request record that flows through the stages."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from zerda_async.core.models import Citation, ContextResult, QueryAnalysis, ScoredChunk

__all__ = ["Job", "RunOptions"]


class RunOptions(msgspec.Struct, frozen=True):
    """The caller's arguments of one ``run`` call (documented names and defaults)."""

    metadata_filters: dict[str, Any] | None = None
    max_chunks: int | None = None
    override_budget: int | None = None
    use_history: bool = True
    record_turn: bool = True
    session_id: str | None = None


class Job(msgspec.Struct):
    """Everything one request has computed so far.

    Stages fill the fields in pipeline order; ``result`` is set either by the
    cache-lookup stage (a hit ends the run early) or when the run finishes.
    """

    query: Any
    options: RunOptions
    request_id: str = ""
    t_start: float = msgspec.field(default_factory=time.perf_counter)
    cache_key: str | None = None
    effective_query: Any = None
    query_vector: Any = None
    analysis: QueryAnalysis | None = None
    budget: int = 0
    retrieved: list[ScoredChunk] = msgspec.field(default_factory=list)
    filtered: list[ScoredChunk] = msgspec.field(default_factory=list)
    ranked: list[ScoredChunk] = msgspec.field(default_factory=list)
    context: str = ""
    citations: tuple[Citation, ...] = ()
    nothing_relevant: bool = False
    guard_passed: bool = True
    guard_warnings: list[str] = msgspec.field(default_factory=list)
    elapsed_ms: float = 0.0
    result: ContextResult | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """True once a result exists (a cache hit finishes the run early)."""
        return self.result is not None

"""The run as one ordered list of stages.

Each stage is a small object with a ``name``, an ``access`` tag and a sync
``apply(job, state)``.  ``access`` tells a runner what the stage touches:

* ``"pure"`` — reads only the job, the components and index-time state, so it
  may run ahead of earlier requests, concurrently, in a worker thread;
* ``"shared"`` — reads or writes state other requests see (cache, histories,
  adaptive statistics), so it must run in submission order.

``speculative`` marks the pure stages whose only input besides index-time
state is the effective query (analysis, retrieval, source quality, filter,
rank).  The async runner runs them ahead on the raw query and keeps their
output when the history stage leaves the query unchanged.

The sync runner simply loops over :data:`STAGES`; the async runner executes the
same objects, reordering only ``pure`` stages, which is why both return the
same result for the same request.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Literal

from zerda_async.core.composer import compose_with_citations
from zerda_async.core.models import Composition, ContextResult
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._state import EngineState

__all__ = [
    "STAGES",
    "AdaptiveRecord",
    "Analysis",
    "Budget",
    "CacheLookup",
    "CacheStore",
    "Compose",
    "Filter",
    "Guard",
    "HistoryEnrichment",
    "HistoryRecord",
    "Rank",
    "Retrieval",
    "SourceQuality",
    "Stage",
    "build_result",
]

Access = Literal["pure", "shared"]


class Stage(ABC):
    """One step of the pipeline; subclasses implement :meth:`apply`."""

    name: str = "stage"
    access: Access = "pure"
    speculative: bool = False

    @abstractmethod
    def apply(self, job: Job, state: EngineState) -> None:
        """Advance ``job`` by this step."""

    def __repr__(self) -> str:
        return f"<stage {self.name} ({self.access})>"


class CacheLookup(Stage):
    """Step 0: a cached context for the raw query ends the run with a cache-hit result."""

    name = "cache_lookup"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        if state.cache is None:
            return
        job.cache_key = state.cache_key(job.query, job.options.metadata_filters)
        cached = state.cache.get_composition(job.cache_key)
        if cached is not None and cached.context:
            analysis = state.analyzer.analyze(job.query)
            job.analysis = analysis
            job.context = cached.context
            job.result = ContextResult(
                context=cached.context,
                query_analysis=analysis,
                chunks_used=[],
                pipeline_ms=(time.perf_counter() - job.t_start) * 1000,
                metadata={"from_cache": True},
                citations=list(cached.citations),
                nothing_relevant=cached.nothing_relevant,
            )


class HistoryEnrichment(Stage):
    """Step 1: prefix the query with the recent answered turns of its conversation."""

    name = "history_enrichment"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        job.effective_query = job.query
        history = state.history_for(job.options.session_id)
        if job.options.use_history and history and state.config.multi_turn:
            job.effective_query = history.get_enriched_query(job.query, n=2)


class Analysis(Stage):
    """Step 2: analyse the (possibly enriched) query."""

    name = "analysis"

    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        job.analysis = state.analyzer.analyze(job.effective_query)


class Budget(Stage):
    """Step 3: the override, or the adaptive suggestion; written into the analysis."""

    name = "budget"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        assert job.analysis is not None
        job.budget = job.options.override_budget or state.adaptive.suggest_budget(job.analysis)
        job.analysis.context_budget = job.budget


class Retrieval(Stage):
    """Step 4: hybrid retrieval of candidates for the effective query."""

    name = "retrieval"

    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        job.retrieved = []
        if state.retriever:
            # A query vector computed ahead (the async engine's micro-batched
            # embedder) is only passed when present, so injected retrievers
            # keep the documented three-keyword call.
            extra = {} if job.query_vector is None else {"query_vector": job.query_vector}
            job.retrieved = state.retriever.retrieve(
                query=job.effective_query,
                top_k=job.options.max_chunks or state.config.retriever.top_k,
                filters=job.options.metadata_filters,
                **extra,
            )


class SourceQuality(Stage):
    """Step 4b: apply the index-time source-quality map to the candidates, in place."""

    name = "source_quality"

    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        if not job.retrieved:
            return
        quality_map = state.require_source_quality_map()
        for sc in job.retrieved:
            quality = quality_map.get(sc.source)
            if quality:
                sc.source_quality = quality


class Filter(Stage):
    """Step 5: noise, length and duplicate filtering."""

    name = "filter"

    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        job.filtered = state.chunk_filter.filter(job.retrieved)


class Rank(Stage):
    """Step 6: multi-factor ranking (overwrites ``composite_score`` in place)."""

    name = "rank"

    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        assert job.analysis is not None
        job.ranked = state.ranker.rank(
            job.filtered,
            job.analysis,
            max_n=job.options.max_chunks or state.config.ranking.max_chunks_to_rank,
        )


class Compose(Stage):
    """Step 7: pack the ranked chunks into the budget with the template."""

    name = "compose"

    def apply(self, job: Job, state: EngineState) -> None:
        composition = compose_with_citations(state.composer, job.ranked, job.analysis, job.budget)
        job.context = composition.context
        job.citations = composition.citations
        job.nothing_relevant = composition.nothing_relevant


class Guard(Stage):
    """Step 8: validate the context against the effective query (never blocks)."""

    name = "guard"

    def apply(self, job: Job, state: EngineState) -> None:
        passed, warnings = state.guard.validate(job.context, job.effective_query, job.analysis)
        job.guard_passed = passed
        job.guard_warnings = warnings


class CacheStore(Stage):
    """Step 9: cache the context when the guard passed."""

    name = "cache_store"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        if state.cache is not None and job.cache_key and job.guard_passed:
            composition = Composition(job.context, job.citations, job.nothing_relevant)
            state.cache.put_composition(job.cache_key, composition)


class HistoryRecord(Stage):
    """Step 10: record the raw query and its context as a new (unanswered) turn."""

    name = "history_record"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        # Sessions are evicted least recently run first (the sync facade has none).
        state.touch_session(job.options.session_id)
        history = state.history_for(job.options.session_id)
        if job.options.record_turn and history:
            history.add_turn(query=job.query, context=job.context, analysis=job.analysis)


class AdaptiveRecord(Stage):
    """Step 11: feed the adaptive budget statistics."""

    name = "adaptive_record"
    access = "shared"

    def apply(self, job: Job, state: EngineState) -> None:
        job.elapsed_ms = (time.perf_counter() - job.t_start) * 1000
        state.adaptive.record(
            query=job.query,
            analysis=job.analysis,
            context_length=len(job.context),
            chunk_count=len(job.ranked),
            response_ms=job.elapsed_ms,
            guard_passed=job.guard_passed,
        )


STAGES: tuple[Stage, ...] = (
    CacheLookup(),
    HistoryEnrichment(),
    Analysis(),
    Budget(),
    Retrieval(),
    SourceQuality(),
    Filter(),
    Rank(),
    Compose(),
    Guard(),
    CacheStore(),
    HistoryRecord(),
    AdaptiveRecord(),
)
"""The documented run order; both runners execute exactly these objects."""


def build_result(job: Job) -> ContextResult:
    """Step 12: the result of a run that went through every stage."""
    if job.result is not None:
        return job.result
    assert job.analysis is not None
    job.result = ContextResult(
        context=job.context,
        query_analysis=job.analysis,
        chunks_used=job.ranked,
        total_retrieved=len(job.retrieved),
        total_after_filter=len(job.filtered),
        total_after_rank=len(job.ranked),
        pipeline_ms=job.elapsed_ms,
        guard_passed=job.guard_passed,
        guard_warnings=job.guard_warnings,
        citations=list(job.citations),
        nothing_relevant=job.nothing_relevant,
    )
    return job.result

"""The run as one ordered list of stages.

Each stage is a small object with a ``name`` and a sync ``apply(job, state)``;
a stage that must await I/O (the query embedding of a coroutine embedder)
also says so in :meth:`Stage.awaits` and implements :meth:`Stage.apply_async`.
The walker (:mod:`._walker`) applies them in order for one job; both runners
use it, so the same request runs the same stages in the same order either way.

``speculative`` marks the stages whose only inputs are the effective query and
index-time state (query embedding, analysis, retrieval, source quality, filter,
rank): they read no state that other requests change, so the async runner
applies them ahead of the request's turn, concurrently, and the walker keeps
that work when the history stage left the query as it was.  The other stages
read or write shared state (cache, histories, adaptive budget) or need the
budget (composition, guard), and run in submission order.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

import zerda_async.pipeline._shared as _shared
from zerda_async.core.composer import compose_with_citations
from zerda_async.core.filter_language import matches, parse_filters
from zerda_async.core.models import Composition, ContextResult
from zerda_async.pipeline._job import Job, options_cache_suffix
from zerda_async.pipeline._state import EngineState
from zerda_async.stores import LearningSample

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
    "QueryEmbedding",
    "Rank",
    "Retrieval",
    "SourceQuality",
    "Stage",
    "build_result",
]


class Stage(ABC):
    """One step of the pipeline; subclasses implement :meth:`apply`."""

    name: str = "stage"
    speculative: bool = False

    @property
    def error_name(self) -> str:
        """The stage named on an exception this stage raises (see ``errors.failed_stage``)."""
        return self.name

    @abstractmethod
    def apply(self, job: Job, state: EngineState) -> None:
        """Advance ``job`` by this step."""

    def awaits(self, state: EngineState) -> bool:
        """True when this stage must be applied with :meth:`apply_async` for ``state``."""
        return False

    async def apply_async(self, job: Job, state: EngineState) -> None:
        """Advance ``job`` by this step, awaiting I/O (only called when :meth:`awaits`)."""
        self.apply(job, state)

    def __repr__(self) -> str:
        return f"<stage {self.name}>"


class CacheLookup(Stage):
    """Step 0: a cached context for the raw query ends the run with a cache-hit result.

    With a shared cache or index store the lookup awaits it (the key carries
    the store's corpus version; see :mod:`._shared`).
    """

    name = "cache_lookup"

    def apply(self, job: Job, state: EngineState) -> None:
        if state.cache is None:
            return
        job.cache_key = state.cache_key(job.query, job.options.metadata_filters)
        job.cache_key += options_cache_suffix(job.options, state.config.composer.template)
        _serve_cached(job, state, state.cache.get_composition(job.cache_key))

    def awaits(self, state: EngineState) -> bool:
        return _shares_cache(state)

    async def apply_async(self, job: Job, state: EngineState) -> None:
        _serve_cached(job, state, await _shared.cached_composition(job, state))


def _shares_cache(state: EngineState) -> bool:
    """True when cache keys need a store (a shared cache, or the index store's version)."""
    return state.cache is not None and (
        state.stores.cache is not None or state.stores.index is not None
    )


def _serve_cached(job: Job, state: EngineState, cached: Composition | None) -> None:
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

    def apply(self, job: Job, state: EngineState) -> None:
        job.effective_query = job.query
        history = state.history_for(job.options.session_id)
        if job.options.use_history and history and state.config.multi_turn:
            job.effective_query = history.get_enriched_query(job.query, n=2)

    def awaits(self, state: EngineState) -> bool:
        return state.stores.sessions is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        session_id = job.options.session_id
        if session_id is None or not state.config.multi_turn:
            self.apply(job, state)
            return
        # Read at the request's turn: every turn completed before, on any replica.
        job.effective_query = job.query
        if job.options.use_history:
            history = await _shared.read_history(state, session_id)
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

    def apply(self, job: Job, state: EngineState) -> None:
        assert job.analysis is not None
        job.budget = job.options.override_budget or state.adaptive.suggest_budget(job.analysis)
        job.analysis.context_budget = job.budget

    def awaits(self, state: EngineState) -> bool:
        return state.stores.learning is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        if not job.options.override_budget:
            await _shared.refresh_learning(state)
        self.apply(job, state)


class QueryEmbedding(Stage):
    """Step 4a: embed the effective query ahead of retrieval, when the engine can await it.

    The async engine embeds every query here (``state.query_embedder``: a
    coroutine embedder awaited, a plain one in a thread hop, batched across
    requests when it has a batch form); the sync facade's retriever embeds
    the query itself, as the documented engine does, and this stage does
    nothing there.  The embedding is
    part of the documented retrieval step, so its errors name ``retrieval``.
    """

    name = "query_embedding"
    speculative = True

    @property
    def error_name(self) -> str:
        return "retrieval"

    def apply(self, job: Job, state: EngineState) -> None:
        if self.awaits(state):
            raise RuntimeError("query_embedding awaits its embedder: apply it with apply_async")

    def awaits(self, state: EngineState) -> bool:
        return state.query_embedder is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        embedder = state.query_embedder
        if embedder is not None:
            job.query_vector = (await embedder.embed_many([job.effective_query]))[0]


class Retrieval(Stage):
    """Step 4: hybrid retrieval of candidates for the effective query.

    The run's restricting ``filters`` go to the retriever as ``where=`` when
    it says it takes them (``accepts_where``, as the engine's own does); an
    injected retriever that does not keeps its documented call, and its
    candidates outside the filters are dropped here.
    """

    name = "retrieval"
    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        job.retrieved = []
        if state.retriever:
            # A query vector computed ahead (the async engine's micro-batched
            # embedder) and the restricting filters are only passed when
            # present, so injected retrievers keep the documented call.
            extra: dict[str, Any] = {}
            if job.query_vector is not None:
                extra["query_vector"] = job.query_vector
            where = parse_filters(job.options.filters)
            pushed = bool(where) and getattr(state.retriever, "accepts_where", False)
            if pushed:
                extra["where"] = job.options.filters
            job.retrieved = state.retriever.retrieve(
                query=job.effective_query,
                top_k=job.options.max_chunks or state.config.retriever.top_k,
                filters=job.options.metadata_filters,
                **extra,
            )
            if where and not pushed:
                job.retrieved = [sc for sc in job.retrieved if matches(sc.metadata, where)]

    def awaits(self, state: EngineState) -> bool:
        return state.stores.index is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        job.retrieved = await _shared.store_retrieve(job, state)


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
    """Step 7: pack the ranked chunks into the budget with the template.

    The run's ``template`` option reaches the engine's own composer; an
    injected composer always composes with its own template.
    """

    name = "compose"

    def apply(self, job: Job, state: EngineState) -> None:
        composition = compose_with_citations(
            state.composer, job.ranked, job.analysis, job.budget, template=job.options.template
        )
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

    def apply(self, job: Job, state: EngineState) -> None:
        if state.cache is not None and job.cache_key and job.guard_passed:
            composition = Composition(job.context, job.citations, job.nothing_relevant)
            state.cache.put_composition(job.cache_key, composition)

    def awaits(self, state: EngineState) -> bool:
        return _shares_cache(state)

    async def apply_async(self, job: Job, state: EngineState) -> None:
        if job.cache_key is not None:
            await _shared.store_composition(job, state)


class HistoryRecord(Stage):
    """Step 10: record the raw query and its context as a new (unanswered) turn."""

    name = "history_record"

    def apply(self, job: Job, state: EngineState) -> None:
        # Sessions are evicted least recently run first (the sync facade has none).
        state.touch_session(job.options.session_id)
        history = state.history_for(job.options.session_id)
        if job.options.record_turn and history:
            history.add_turn(query=job.query, context=job.context, analysis=job.analysis)

    def awaits(self, state: EngineState) -> bool:
        return state.stores.sessions is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        session_id = job.options.session_id
        if session_id is None:
            self.apply(job, state)
        elif job.options.record_turn and state.config.multi_turn:
            await _shared.record_turn(state, session_id, job.query)


class AdaptiveRecord(Stage):
    """Step 11: feed the adaptive budget statistics."""

    name = "adaptive_record"

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

    def awaits(self, state: EngineState) -> bool:
        return state.stores.learning is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        self.apply(job, state)
        sample = LearningSample(
            response_ms=job.elapsed_ms,
            context_length=len(job.context),
            chunk_count=len(job.ranked),
            guard_passed=job.guard_passed,
        )
        await _shared.record_learning(state, sample)


STAGES: tuple[Stage, ...] = (
    CacheLookup(),
    HistoryEnrichment(),
    Analysis(),
    Budget(),
    QueryEmbedding(),
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

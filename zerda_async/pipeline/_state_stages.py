"""The stages that read or write state shared by requests, applied in submission order.

The cache (lookup and store), the conversation histories (enrichment and
record) and the adaptive budget (suggestion and record).  Each has a sync
``apply`` for the in-process state and, when the engine has the
corresponding shared store, an ``apply_async`` that awaits it (see
:mod:`._shared`).
"""

from __future__ import annotations

import time
from typing import Any

import zerda_async.pipeline._shared as _shared
from zerda_async.core.followups import refers_back
from zerda_async.core.models import Composition, ContextResult
from zerda_async.core.validation import check_history_enrichment
from zerda_async.pipeline._cache_keys import local_context_key
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._stage import Stage
from zerda_async.pipeline._state import EngineState
from zerda_async.stores import LearningSample

__all__ = [
    "AdaptiveRecord",
    "Budget",
    "CacheLookup",
    "CacheStore",
    "HistoryEnrichment",
    "HistoryRecord",
    "enriched_query",
]


class CacheLookup(Stage):
    """Step 0: a cached context for the query ends the run with a cache-hit result.

    The documented key is the raw query's, looked up before the enrichment;
    the async engine (``state.private_cache``) enriches the query first and
    keys by the effective query, private to its conversation when enriched
    (:mod:`._cache_keys`).  With a shared cache or index store the lookup
    awaits it (the key carries the store's corpus version; see :mod:`._shared`).
    """

    name = "cache_lookup"

    def apply(self, job: Job, state: EngineState) -> None:
        if state.cache is None:
            return
        if state.private_cache:
            _enrich(job, state)
        job.cache_key = local_context_key(job, state)
        _serve_cached(job, state, state.cache.get_composition(job.cache_key))

    def awaits(self, state: EngineState) -> bool:
        return _shares_cache(state) or (
            state.cache is not None and state.private_cache and state.stores.sessions is not None
        )

    async def apply_async(self, job: Job, state: EngineState) -> None:
        if state.private_cache:
            await _enrich_async(job, state)
        if not _shares_cache(state):
            self.apply(job, state)  # enriched already: apply() does not read the store again
            return
        _serve_cached(job, state, await _shared.cached_composition(job, state))


def _shares_cache(state: EngineState) -> bool:
    """True when cache keys need a store (a shared cache, or the index store's version)."""
    return state.cache is not None and (
        state.stores.cache is not None or state.stores.index is not None
    )


def _serve_cached(job: Job, state: EngineState, cached: Composition | None) -> None:
    if cached is not None and cached.context:
        # The documented hit analyses the raw query; the async engine's hit, the
        # query its context was composed for (as the miss reported it).
        query = job.effective_query if state.private_cache else job.query
        analysis = state.analyzer.analyze(query)
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


def enriched_query(job: Job, state: EngineState) -> Any:
    """The query the history enrichment makes of ``job``'s, from its in-process conversation.

    Changes nothing (a session not seen yet has no turns to enrich with).
    """
    session_id = job.options.session_id
    history = state.history if session_id is None else state.sessions.get(session_id)
    if job.options.use_history and history and state.config.multi_turn and _may_enrich(job, state):
        return history.get_enriched_query(job.query, n=2)
    return job.query


def _may_enrich(job: Job, state: EngineState) -> bool:
    """Whether ``config.history_enrichment`` lets the turns enrich ``job``'s query.

    ``always`` is the documented rule (any query, with the last two answered
    turns); ``refers_back`` only a query that points back to them
    (:func:`~zerda_async.core.followups.refers_back`), ``never`` none.  An
    unknown mode raises :class:`~zerda_async.errors.ConfigError` naming the field.
    """
    mode = state.config.history_enrichment
    if mode == "always":
        return True
    check_history_enrichment(mode)
    return mode == "refers_back" and refers_back(job.query)


def _enrich(job: Job, state: EngineState) -> None:
    """Set ``job.effective_query`` from its in-process conversation (once per job)."""
    if not job.enriched:
        job.effective_query = enriched_query(job, state)
        job.enriched = True


async def _enrich_async(job: Job, state: EngineState) -> None:
    """:func:`_enrich`, reading a session's conversation from the session store when shared."""
    session_id = job.options.session_id
    if job.enriched:
        return
    if state.stores.sessions is None or session_id is None or not state.config.multi_turn:
        _enrich(job, state)
        return
    # Read at the request's turn: every turn completed before, on any replica.
    # A query the mode leaves alone needs no read of the store.
    job.effective_query = job.query
    if job.options.use_history and _may_enrich(job, state):
        history = await _shared.read_history(state, session_id)
        job.effective_query = history.get_enriched_query(job.query, n=2)
    job.enriched = True


class HistoryEnrichment(Stage):
    """Step 1: prefix the query with the recent answered turns of its conversation
    (every query, or as ``config.history_enrichment`` asks).

    Nothing left to do when the async engine's cache lookup enriched already.
    """

    name = "history_enrichment"

    def apply(self, job: Job, state: EngineState) -> None:
        _enrich(job, state)

    def awaits(self, state: EngineState) -> bool:
        return state.stores.sessions is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        await _enrich_async(job, state)


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

    def after_hit(self, job: Job, state: EngineState) -> bool:
        # The async engine: every request of a session is a turn of it, hit or not.
        return state.private_cache and job.options.session_id is not None

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
    """Step 11: feed the adaptive budget statistics.

    A run whose context says "nothing relevant" is not recorded: its
    placeholder is short because nothing matched, not because answers fit in
    less, and a run of off-topic questions would otherwise shrink the budget
    of the next answerable one (the documented engine never flags a run, so
    its statistics are unchanged).
    """

    name = "adaptive_record"

    def apply(self, job: Job, state: EngineState) -> None:
        job.elapsed_ms = (time.perf_counter() - job.t_start) * 1000
        if job.nothing_relevant:
            return
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
        if job.nothing_relevant:
            return
        sample = LearningSample(
            response_ms=job.elapsed_ms,
            context_length=len(job.context),
            chunk_count=len(job.ranked),
            guard_passed=job.guard_passed,
        )
        await _shared.record_learning(state, sample)

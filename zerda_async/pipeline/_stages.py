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

The abstract :class:`Stage` lives in :mod:`._stage` and the shared-state
stages (with their store branches) in :mod:`._state_stages`; this module holds
the others, the order and the result building.
"""

from __future__ import annotations

import math
from typing import Any

import anyio.to_thread

import zerda_async.pipeline._shared as _shared
from zerda_async.core.composer import compose_with_citations
from zerda_async.core.filter_language import matches, parse_filters
from zerda_async.core.index import STEP_WORK
from zerda_async.core.models import ContextResult, ScoredChunk
from zerda_async.embedders import is_coroutine_function
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._stage import Stage
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._state_stages import (
    AdaptiveRecord,
    Budget,
    CacheLookup,
    CacheStore,
    HistoryEnrichment,
    HistoryRecord,
)
from zerda_async.runtime import Steps, finish, run_in_thread

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
    "Rerank",
    "Retrieval",
    "SourceQuality",
    "Stage",
    "build_result",
]


class Analysis(Stage):
    """Step 2: analyse the (possibly enriched) query."""

    name = "analysis"
    speculative = True

    def apply(self, job: Job, state: EngineState) -> None:
        job.analysis = state.analyzer.analyze(job.effective_query)


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
    query_only = True

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
            job.query_vector = (await embedder.embed_queries([job.effective_query]))[0]


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
        finish(self._retrieve(job, state, 0))

    def steps(self, job: Job, state: EngineState) -> Steps[None]:
        """Retrieval in pieces when the retriever can (``retrieve_steps``: the engine's own)."""
        return self._retrieve(job, state, STEP_WORK)

    def _retrieve(self, job: Job, state: EngineState, step_work: int) -> Steps[None]:
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
            query = job.effective_query
            top_k = job.options.max_chunks or state.config.retriever.top_k
            filters = job.options.metadata_filters
            stepped = getattr(state.retriever, "retrieve_steps", None) if step_work else None
            if stepped is not None:
                job.retrieved = yield from stepped(
                    query, top_k, filters, step_work=step_work, **extra
                )
            else:
                job.retrieved = state.retriever.retrieve(
                    query=query, top_k=top_k, filters=filters, **extra
                )
            if where and not pushed:
                job.retrieved = [sc for sc in job.retrieved if matches(sc.metadata, where)]

    def awaits(self, state: EngineState) -> bool:
        return state.stores.index is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        # Guarded as one operation: an index store known down fails the request at
        # once, and one that stops answering costs it one store timeout.
        store = state.stores.index
        job.retrieved = await _shared.guarded(
            state, store, lambda: _shared.store_retrieve(job, state)
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


class Rerank(Stage):
    """Step 6b: the top ``ranking.rerank_depth`` ranked chunks reordered by the reranker.

    Only with the async engine's ``reranker=`` (the documented engine has
    none, and this stage does nothing there): an object whose
    ``scores(question, texts)`` returns one score per text, higher is
    better.  It reads the effective query with each chunk's text; a plain
    method runs in a worker thread under the engine's thread limit (a
    cross-encoder is CPU-heavy model work), a coroutine method is awaited (a
    reranking service).  Each scored chunk keeps its score in
    ``rerank_score``, read by ``composer.rerank_floor``.  Equal scores keep
    the ranker's order.  A request the context cache will answer is not
    reranked ahead of its lookup.
    """

    name = "rerank"
    speculative = True
    after_cache_miss = True

    def apply(self, job: Job, state: EngineState) -> None:
        # Without a reranker there is nothing to do; with one the stage awaits, and
        # every runner applies it with apply_async.
        if self.awaits(state):
            raise RuntimeError("rerank awaits its reranker: apply it with apply_async")

    def awaits(self, state: EngineState) -> bool:
        return state.reranker is not None

    async def apply_async(self, job: Job, state: EngineState) -> None:
        top = _reranked_part(job, state)
        if not top:
            return
        texts = [sc.text for sc in top]
        scores_of = state.reranker.scores
        if is_coroutine_function(scores_of):
            scores = await scores_of(job.effective_query, texts)
        elif state.thread_limiter is not None:
            scores = await run_in_thread(
                scores_of, job.effective_query, texts, limiter=state.thread_limiter
            )
        else:
            scores = await anyio.to_thread.run_sync(
                scores_of, job.effective_query, texts, abandon_on_cancel=True
            )
        _reorder(job, top, scores)


def _reranked_part(job: Job, state: EngineState) -> list[ScoredChunk]:
    """The ranked chunks the reranker scores: none without one, or at a depth of 0 or less."""
    depth = state.config.ranking.rerank_depth
    if state.reranker is None or depth <= 0:
        return []
    return job.ranked[:depth]


def _reorder(job: Job, top: list[ScoredChunk], scores: Any) -> None:
    """Keep each score on its chunk and put ``top`` in score order (ties: rank order)."""
    try:
        values = [float(v) for v in scores]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the reranker's scores are not numbers: {exc}") from exc
    if len(values) != len(top):
        raise ValueError(f"the reranker returned {len(values)} scores for {len(top)} chunks")
    bad = next((v for v in values if not math.isfinite(v)), None)
    if bad is not None:
        raise ValueError(f"the reranker returned a score that is not finite: {bad}")
    for sc, value in zip(top, values, strict=True):
        sc.rerank_score = value
    order = sorted(range(len(top)), key=lambda i: -values[i])
    job.ranked = [top[i] for i in order] + job.ranked[len(top) :]


class Compose(Stage):
    """Step 7: pack the ranked chunks into the budget with the template.

    The run's ``template`` option reaches the engine's own composer; an
    injected composer always composes with its own template.
    """

    name = "compose"

    def apply(self, job: Job, state: EngineState) -> None:
        composition = compose_with_citations(
            state.composer,
            job.ranked,
            job.analysis,
            job.budget,
            template=job.options.template,
            vector_floor=state.vector_floor,
            # The user's own question: the history-enriched one opens with
            # the earlier turns, whose script is not the question's.
            query=str(job.query or ""),
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
    Rerank(),
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

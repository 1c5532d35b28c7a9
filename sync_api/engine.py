"""``ContextEngine`` and ``ContextManager``: the documented synchronous engine.

A thin facade: every call builds a job and hands it to the stage list's sync
runner, or to the shared operations of :mod:`zerda_async.pipeline`.  No
pipeline logic lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zerda_async.core.config import ContextEngineConfig, LengthCounter
from zerda_async.core.models import ContextResult, ConversationHistory, SourceQuality
from zerda_async.core.truncation import truncate
from zerda_async.pipeline import (
    Components,
    EngineState,
    build_context,
    build_multi_query_context,
    compress_context,
    context_stats,
    join_multi_query,
    make_job,
    plan_multi_query,
    run_job,
)

__all__ = ["ContextEngine", "ContextManager"]


class ContextEngine:
    """Query → budget-bounded, cited context, synchronously.

    Every component is optional; ``None`` selects the documented default.
    Injected components are duck-typed.
    """

    def __init__(
        self,
        config: ContextEngineConfig | None = None,
        query_analyzer: Any = None,
        retriever: Any = None,
        chunk_filter: Any = None,
        ranker: Any = None,
        composer: Any = None,
        guard: Any = None,
        budget_allocator: Any = None,
        length_counter: LengthCounter | None = None,
    ) -> None:
        components = Components(
            query_analyzer=query_analyzer,
            retriever=retriever,
            chunk_filter=chunk_filter,
            ranker=ranker,
            composer=composer,
            guard=guard,
            budget_allocator=budget_allocator,
            length_counter=length_counter,
        )
        self._state = EngineState(config, components, owner_name=type(self).__name__)
        self.config = self._state.config

    def index(
        self,
        chunks: Sequence[Any] | None,
        embed_fn: Callable[[str], Any] | None = None,
        vector_store_adapter: Any = None,
        source_quality_map: Mapping[str, SourceQuality] | None = None,
    ) -> ContextEngine:
        """Index ``chunks`` for retrieval and return the engine (for chaining).

        Only the first successful call installs a retriever (documented); later
        calls replace only the source-quality map.
        """
        self._state.index(chunks, embed_fn, vector_store_adapter, source_quality_map)
        return self

    def run(
        self,
        query: str,
        metadata_filters: dict[str, Any] | None = None,
        max_chunks: int | None = None,
        override_budget: int | None = None,
        use_history: bool = True,
        record_turn: bool = True,
        *,
        filters: dict[str, Any] | None = None,
        template: str | None = None,
    ) -> ContextResult:
        """Run the whole pipeline for ``query`` and return the result.

        The keyword-only ``filters`` (restrict retrieval to matching metadata)
        and ``template`` (this request's template, or ``"auto"``) are opt-in
        additions; without them the run is the documented one.
        """
        job = make_job(
            query,
            metadata_filters=metadata_filters,
            max_chunks=max_chunks,
            override_budget=override_budget,
            use_history=use_history,
            record_turn=record_turn,
            filters=filters,
            template=template,
        )
        return run_job(job, self._state)

    def run_multi(
        self,
        queries: list[str],
        global_budget: int | None = None,
        use_weighted: bool = True,
        **kwargs: Any,
    ) -> str:
        """One run per query within a shared budget; labelled sections joined."""
        if not queries:
            return ""
        plan = plan_multi_query(self._state, queries, global_budget, use_weighted)
        contexts = [
            self.run(query, override_budget=budget, record_turn=False, **kwargs).context
            for query, budget in zip(plan.queries, plan.budgets, strict=True)
        ]
        return join_multi_query(self._state, plan, contexts)

    def build(
        self,
        query: str,
        chunks: list[tuple[Any, Any]],
        max_chunks: int | None = None,
        max_length: int | None = None,
    ) -> str:
        """Legacy: compose ``(chunk, score)`` tuples without cache, guard or history."""
        return build_context(self._state, query, chunks, max_chunks, max_length)

    def build_multi_query_context(
        self,
        queries: list[str],
        all_chunks: list[list[tuple[Any, Any]]],
        global_budget: int | None = None,
    ) -> str:
        """Legacy: one ``build`` per query; ``global_budget`` is ignored (documented)."""
        return build_multi_query_context(self._state, queries, all_chunks)

    def compress_context(self, context: str, target_length: int) -> str:
        """Legacy: truncate at a word boundary to ``target_length`` units."""
        return compress_context(self._state, context, target_length)

    def get_context_stats(self, context: str) -> dict[str, Any]:
        """Legacy: composition statistics of a context string."""
        return context_stats(self._state, context)

    def get_performance_report(self) -> dict[str, Any]:
        """Adaptive-learning statistics, plus cache statistics when caching is on."""
        report = self._state.adaptive.get_performance_report()
        if self._state.cache is not None:
            report["cache"] = self._state.cache.stats
        return report

    def set_conversation(self, history: ConversationHistory) -> None:
        """Replace the conversation history (any object; even with multi-turn off)."""
        self._state.set_history(history)

    def get_history(self) -> ConversationHistory | None:
        """The conversation history (``None`` if multi-turn was off and none was set)."""
        return self._state.history  # type: ignore[no-any-return]

    def clear_cache(self) -> None:
        """Empty the context cache (hit and miss counters are kept)."""
        if self._state.cache is not None:
            self._state.cache.clear()

    def _hard_truncate(self, text: str, max_len: int) -> str:
        # The engine's clamp: no word-boundary back-off (unlike compress_context).
        return truncate(text, max_len, self._state.counter, None)


class ContextManager(ContextEngine):
    """Backward-compatible constructor; the legacy strategies are accepted and unused."""

    def __init__(
        self,
        config: ContextEngineConfig | None = None,
        *,
        length_counter: LengthCounter | None = None,
        dedup_strategy: Any = None,
        ranking_strategy: Any = None,
        compression_strategy: Any = None,
        budget_strategy: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            config=config,
            length_counter=length_counter,
            budget_allocator=budget_strategy,
            **kwargs,
        )

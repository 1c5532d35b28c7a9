"""The engine's shared-state methods: histories, answers, cache, reports and statistics.

A base class of :class:`~zerda_async.engine.AsyncContextEngine`.
"""

from __future__ import annotations

from typing import Any

from zerda_async.core.models import ConversationHistory
from zerda_async.engine._index_api import EngineParts
from zerda_async.engine._statistics import EngineStatistics
from zerda_async.stores import StoredTurn

__all__ = ["StateMethods"]


class StateMethods(EngineParts):
    """Conversations, the cache and what the engine reports about itself."""

    def get_performance_report(self) -> dict[str, Any]:
        """Adaptive statistics plus cache statistics (as the documented engine reports)."""
        report = self._state.adaptive.get_performance_report()
        if self._state.cache is not None:
            report["cache"] = self._state.cache.stats
        return report

    def get_history(self, session_id: str | None = None) -> ConversationHistory | None:
        """The conversation of ``session_id`` (``None``: the documented single history)."""
        if session_id is None:
            return self._state.history  # type: ignore[no-any-return]
        return self._state.sessions.get(session_id)

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The turns of ``session_id`` (query and recorded answer), oldest first.

        Read from the session store when the engine has one, else from this
        process's conversation; an unknown session has none.
        """
        store = self._state.stores.sessions
        if store is not None:
            return await store.turns(session_id)
        history = self._state.sessions.get(session_id)
        if history is None:
            return []
        return [StoredTurn(t.query, t.answer) for t in history.turns]

    async def record_answer(self, session_id: str, answer: str) -> bool:
        """Record the LLM's ``answer`` on the last turn of ``session_id``; False without a turn.

        Answered turns enrich the session's later queries (``config.multi_turn``;
        only those that refer back with ``config.history_enrichment = "refers_back"``).
        """
        store = self._state.stores.sessions
        if store is not None:
            return await store.set_answer(session_id, answer)
        history = self._state.sessions.get(session_id)
        if history is None or not history.turns:
            return False
        history.turns[-1].answer = answer
        return True

    def set_conversation(self, history: Any, session_id: str | None = None) -> None:
        """Install ``history`` as the default conversation or as ``session_id``'s."""
        self._state.set_history(history, session_id)

    async def clear_cache(self) -> None:
        """Empty the context cache after every request submitted before this call."""
        self._check_open()
        cache = self._state.cache
        if cache is not None:
            await self._runner.barrier(cache.clear)

    def statistics(self) -> EngineStatistics:
        """A snapshot of the engine's load and state (for operators and tests)."""
        runner, state = self._runner, self._state
        return EngineStatistics(
            in_flight=runner.in_flight,
            max_in_flight=runner.settings.max_in_flight,
            free_slots=int(runner.slots.value),
            single_flights=runner.single_flights,
            workers=runner.settings.workers,
            sessions=len(state.sessions),
            cached_contexts=0 if state.cache is None else int(state.cache.stats["size"]),
            corpus_size=self.corpus_size,
            corpus_version=self.corpus_version,
            vector_dtype=self._indexes.dtype,
            cache_bypassed=state.bypassed["cache"],
            learning_bypassed=state.bypassed["learning"],
        )

    @property
    def embedder_calls(self) -> int:
        """How many times the query/corpus embedder was called by this engine."""
        embedder = self._state.query_embedder
        return 0 if embedder is None else embedder.calls

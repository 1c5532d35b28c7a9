"""In-process stores: today's single-process behaviour behind the store protocols.

:class:`MemoryIndexStore` is a :class:`~zerda_async.core.index.CorpusIndex`
behind the :class:`IndexStore` protocol; it searches with the in-process
engine's own code (:class:`~zerda_async.core.retrieval.IndexSearches`), so
its hits are that engine's, evidence included.  The
others are plain dictionaries guarded by the event loop: every method runs
without awaiting in between, so each is atomic with respect to other tasks.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.index import CorpusIndex, unit_rows
from ..core.index.chunks import chunk_doc_id
from ..core.retrieval import Hit, IndexSearches, QueryWeights, tokenize
from ._filters import Filters, parse_filters
from ._protocols import LearningSample, StoredTurn

__all__ = [
    "LEARNING_WINDOW",
    "MemoryCacheStore",
    "MemoryIndexStore",
    "MemoryLearningStore",
    "MemorySessionStore",
]

LEARNING_WINDOW = 100
"""Samples a learning store keeps: ``AdaptiveLearningSystem.WINDOW``."""


def query_terms(query: str) -> list[str]:
    """The distinct tokens of ``query`` in first-occurrence order (what BM25 sums over)."""
    return list(dict.fromkeys(tokenize(query)))


class MemoryIndexStore:
    """A corpus index held in this process (the zero-setup default)."""

    name = "index store"

    def __init__(self, index: CorpusIndex | None = None) -> None:
        self.index = index if index is not None else CorpusIndex.build([])
        self._searched: IndexSearches | None = None

    def _rows(self, chunks: Sequence[Any], vectors: ArrayLike | None) -> NDArray[Any] | None:
        if vectors is None:
            return None
        rows = unit_rows(np.asarray(vectors, dtype=np.float64).reshape(len(chunks), -1))
        return rows

    async def add(self, chunks: Sequence[Any], vectors: ArrayLike | None = None) -> int:
        """Append ``chunks``; the first call with vectors decides whether the index has them."""
        items = list(chunks)
        rows = self._rows(items, vectors)
        if self.index.n_positions == 0 and self.index.vectors is None and rows is not None:
            self.index = CorpusIndex.build(items, rows, version=self.index.version + 1)
        else:
            self.index = self.index.appended(items, rows)
        return self.index.version

    async def replace(self, chunks: Sequence[Any], vectors: ArrayLike | None = None) -> int:
        """Remove the chunks of the doc ids in ``chunks``, then append them."""
        items = list(chunks)
        rows = self._rows(items, vectors)
        if self.index.n_live == 0 and self.index.vectors is None and rows is not None:
            self.index = CorpusIndex.build(items, rows, version=self.index.version + 1)
        else:
            self.index, _ = self.index.replaced(items, rows)
        return self.index.version

    async def remove(self, doc_ids: Sequence[str]) -> int:
        """Remove every chunk of ``doc_ids``."""
        self.index, _ = self.index.without(doc_ids)
        return self.index.version

    async def version(self) -> int:
        """The corpus version."""
        return self.index.version

    async def count(self) -> int:
        """Live chunks."""
        return self.index.n_live

    def _searches(self) -> IndexSearches:
        """The searches over the current snapshot (made again after a write)."""
        searches = self._searched
        if searches is None or searches.index is not self.index:
            searches = self._searched = IndexSearches(self.index)
        return searches

    async def vector_search(
        self, query_vector: ArrayLike, k: int, filters: Filters | None = None
    ) -> list[Hit]:
        """Top ``k`` by cosine (rounded to 12 decimals), ties by position."""
        conditions = parse_filters(filters)
        if k <= 0:
            return []
        return self._searches().vector(query_vector, k, conditions)

    async def keyword_search(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        """Top ``k`` by BM25 (positive scores only), ties by position, with their coverage."""
        conditions = parse_filters(filters)
        if k <= 0:
            return []
        return self._searches().keyword(query, k, conditions)

    async def metadata_search(
        self, pairs: Mapping[str, Any], k: int, filters: Filters | None = None
    ) -> list[Hit]:
        """Chunks whose metadata equals at least one pair, by the fraction of pairs matched."""
        conditions = parse_filters(filters)
        if k <= 0:
            return []
        return self._searches().metadata(pairs, k, conditions)

    async def query_weights(self, query: str) -> QueryWeights:
        """``query``'s distinct analysed terms with their idf over the live chunks."""
        return self._searches().query_weights(query)

    def doc_ids(self) -> list[Any]:
        """Each live chunk's doc id in corpus order (for tests and tools)."""
        return [chunk_doc_id(c) for c in self.index.live_chunks()]

    async def aclose(self) -> None:
        """Nothing to release."""


class MemorySessionStore:
    """Histories per session in this process, at most ``max_sessions`` (oldest dropped)."""

    name = "session store"

    def __init__(self, max_sessions: int = 10_000, max_turns: int = 100) -> None:
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._sessions: OrderedDict[str, deque[StoredTurn]] = OrderedDict()

    async def append_turn(self, session_id: str, query: str) -> int:
        """Append a turn (keeping the last ``max_turns``); the turn count."""
        turns = self._sessions.get(session_id)
        if turns is None:
            turns = self._sessions[session_id] = deque(maxlen=self.max_turns)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        turns.append(StoredTurn(query))
        return len(turns)

    async def set_answer(self, session_id: str, answer: str) -> bool:
        """Set the last turn's answer; False without a turn."""
        turns = self._sessions.get(session_id)
        if not turns:
            return False
        turns[-1] = StoredTurn(turns[-1].query, answer)
        return True

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The session's turns, oldest first."""
        return list(self._sessions.get(session_id, ()))

    async def aclose(self) -> None:
        """Nothing to release."""


class MemoryCacheStore:
    """Contexts by (key, version) with a TTL and LRU bound, and expiring compute locks."""

    name = "cache store"

    def __init__(
        self,
        max_entries: int = 256,
        ttl_seconds: float = 300.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[tuple[str, int], tuple[str, float]] = OrderedDict()
        self._locks: dict[tuple[str, int], float] = {}

    async def get(self, key: str, version: int) -> str | None:
        """The value stored for ``key`` at ``version`` within its TTL."""
        found = self._entries.get((key, version))
        if found is None:
            return None
        value, expires = found
        if self._clock() >= expires:
            del self._entries[(key, version)]
            return None
        self._entries.move_to_end((key, version))
        return value

    async def put(self, key: str, version: int, value: str) -> None:
        """Store ``value``; the least recently used entries go beyond ``max_entries``."""
        self._entries[(key, version)] = (value, self._clock() + self.ttl_seconds)
        self._entries.move_to_end((key, version))
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    async def acquire(self, key: str, version: int, ttl_seconds: float) -> bool:
        """Take the lock unless a holder has it and it has not expired."""
        now = self._clock()
        held = self._locks.get((key, version))
        if held is not None and held > now:
            return False
        self._locks[(key, version)] = now + ttl_seconds
        return True

    async def release(self, key: str, version: int) -> None:
        """Drop the lock."""
        self._locks.pop((key, version), None)

    async def aclose(self) -> None:
        """Nothing to release."""


class MemoryLearningStore:
    """The last :data:`LEARNING_WINDOW` samples of this process."""

    name = "learning store"

    def __init__(self) -> None:
        self._window: deque[LearningSample] = deque(maxlen=LEARNING_WINDOW)
        self._total = 0

    async def record(self, sample: LearningSample) -> None:
        """Add a sample."""
        self._window.append(sample)
        self._total += 1

    async def window(self) -> tuple[list[LearningSample], int]:
        """The window, oldest first, and the total recorded."""
        return list(self._window), self._total

    async def aclose(self) -> None:
        """Nothing to release."""

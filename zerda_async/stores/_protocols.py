"""The four store protocols and the records they exchange.

Every method is a coroutine: a store may sit across the network.  The
in-memory stores (:mod:`._memory`) implement the protocols with today's
single-process behaviour; PostgreSQL and Redis implement them for replicas.

Index stores order chunks by *corpus position*: appending puts new chunks
after every existing one, ``replace`` removes the chunks of the given doc ids
then appends, so the live chunks keep the order an in-memory
:class:`~zerda_async.core.index.CorpusIndex` gives them.  Positions are only
comparable within one store (a PostgreSQL store never reuses one).

Searches return :class:`~zerda_async.core.retrieval.Hit` lists with their
evidence (score, rank by place, a keyword hit's query coverage); the engine
fuses them with the in-memory engine's code (:mod:`zerda_async.core.retrieval`).
Beyond the protocol, the project's index stores answer two more searches an
engine uses when present: ``metadata_search(pairs, k, filters)`` (boosting
metadata, ``retriever.use_metadata``) and ``query_weights(query)`` (the
query's terms with their idf, which measures the coverage of chunks no
keyword search found, for the fusions that measure every chunk's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from numpy.typing import ArrayLike

from ..core.retrieval import Hit
from ._filters import Filters

__all__ = [
    "CacheStore",
    "Hit",
    "IndexStore",
    "LearningSample",
    "LearningStore",
    "SearchMode",
    "SessionStore",
    "StoredChunk",
    "StoredTurn",
]


SearchMode = Literal["exact", "hnsw", "local"]
"""How a PostgreSQL index store searches: exact cosine in SQL, HNSW, or a local copy."""


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as a store keeps it; duck-types as a chunk (``text``, ``doc_id``, ``metadata``)."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One conversation turn: the query and the answer recorded for it (``""`` until set)."""

    query: str
    answer: str = ""


@dataclass(frozen=True, slots=True)
class LearningSample:
    """What one run contributes to the adaptive statistics (see ``core.adaptive``)."""

    response_ms: float
    context_length: int
    chunk_count: int
    guard_passed: bool


@runtime_checkable
class IndexStore(Protocol):
    """Chunks with metadata and vectors, their keyword statistics and a corpus version.

    Every successful ``add`` / ``replace`` / ``remove`` that changes the corpus
    increments ``version`` in the same atomic step as the change: a reader
    sees the old chunks with the old version or the new ones with the new.
    """

    name: str

    async def add(self, chunks: Sequence[Any], vectors: ArrayLike | None = None) -> int:
        """Append ``chunks`` (and their raw embeddings); returns the new version."""
        ...

    async def replace(self, chunks: Sequence[Any], vectors: ArrayLike | None = None) -> int:
        """Remove the chunks of the doc ids in ``chunks``, then append them; the new version."""
        ...

    async def remove(self, doc_ids: Sequence[str]) -> int:
        """Remove every chunk of ``doc_ids``; returns the (possibly unchanged) version."""
        ...

    async def version(self) -> int:
        """The current corpus version (0 for an empty, never-updated store)."""
        ...

    async def count(self) -> int:
        """How many chunks are live."""
        ...

    async def vector_search(
        self, query_vector: ArrayLike, k: int, filters: Filters | None = None
    ) -> list[Hit]:
        """Top ``k`` live chunks by exact cosine, best first, ties by corpus position."""
        ...

    async def keyword_search(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        """Top ``k`` live chunks by BM25 of ``query``'s tokens (score > 0), ties by position.

        Each hit carries its query coverage (``Hit.coverage``).
        """
        ...

    async def aclose(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Conversation histories per ``session_id``; both writes are atomic."""

    name: str

    async def append_turn(self, session_id: str, query: str) -> int:
        """Append a turn with an empty answer; returns the session's turn count."""
        ...

    async def set_answer(self, session_id: str, answer: str) -> bool:
        """Set the answer of the last turn; False when the session has no turn."""
        ...

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The session's turns, oldest first (empty for an unknown session)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class CacheStore(Protocol):
    """Composed contexts by key and corpus version, with a TTL, a size bound and single flight.

    An entry stored for version ``v`` is never returned for another version.
    ``acquire`` takes a short lock with an expiry so that of several replicas
    missing the same key at once, one computes and the others wait and read.
    """

    name: str

    async def get(self, key: str, version: int) -> str | None:
        """The cached value or None (absent, expired or of another version)."""
        ...

    async def put(self, key: str, version: int, value: str) -> None:
        """Store ``value`` for ``key`` at ``version`` (evicting beyond the bound)."""
        ...

    async def acquire(self, key: str, version: int, ttl_seconds: float) -> bool:
        """Take the compute lock of ``key`` at ``version``; False if another holder has it."""
        ...

    async def release(self, key: str, version: int) -> None:
        """Give the lock back (a lock that expired meanwhile is left alone)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class LearningStore(Protocol):
    """The adaptive statistics of every replica, aggregated (eventually consistent)."""

    name: str

    async def record(self, sample: LearningSample) -> None:
        """Add one run's sample to the shared window."""
        ...

    async def window(self) -> tuple[list[LearningSample], int]:
        """The last ``WINDOW`` samples (oldest first) and the total number recorded."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...

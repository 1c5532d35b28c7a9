"""The stores an engine uses, as one record (every field optional: memory by default)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._protocols import CacheStore, IndexStore, LearningStore, SessionStore
from ._version import VERSION_POLL_SECONDS, VersionClock

__all__ = ["Stores"]


@dataclass(frozen=True, slots=True)
class Stores:
    """Where an :class:`~zerda_async.AsyncContextEngine` keeps what replicas share.

    Each field left ``None`` keeps today's in-process behaviour exactly:

    * ``index``: chunks are searched in this store (each request awaits its
      vector and keyword searches) instead of an in-memory index;
      ``embedder`` (``f(text) -> vector``, plain or coroutine; a
      ``embed_batch`` method is used for batches) embeds queries and added
      chunks, and must be the one that built the store's vectors (``None``:
      keyword search only);
    * ``sessions``: histories of requests with a ``session_id`` are read from
      and appended to this store at the request's turn (the default history of
      ``session_id=None`` stays in the process);
    * ``cache``: composed contexts are shared through this store, keyed by
      the corpus version, with single flight across replicas;
    * ``learning``: the adaptive budget statistics are aggregated here;
    * ``version_poll``: how old (seconds) the index store's corpus version a
      request uses may be; it is read at most that often, not once per
      request, so updates made elsewhere are seen within a second (``0``:
      read on every request).  Engines sharing this record share the reads.
    """

    index: IndexStore | None = None
    sessions: SessionStore | None = None
    cache: CacheStore | None = None
    learning: LearningStore | None = None
    embedder: Any = None
    version_poll: float = VERSION_POLL_SECONDS
    clock: VersionClock = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "clock", VersionClock(self.version_poll))

    async def corpus_version(self, *, fresh: bool = False) -> int:
        """The index store's corpus version, at most ``version_poll`` old (``fresh``: read now)."""
        assert self.index is not None, "no index store"
        if fresh:
            return await self.clock.read(self.index)
        return await self.clock.current(self.index)

    def configured(self) -> list[Any]:
        """The stores given (each once: one object may serve several roles)."""
        found: list[Any] = []
        for store in (self.index, self.sessions, self.cache, self.learning):
            if store is not None and all(store is not seen for seen in found):
                found.append(store)
        return found

    async def aclose(self) -> None:
        """Close every store given."""
        for store in self.configured():
            await store.aclose()

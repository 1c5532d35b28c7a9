"""In-memory cache of composed contexts, keyed by the normalised query.

Although documented as LRU, the cache is first-in-first-out with stale
bookkeeping, and that behaviour is reproduced on purpose:

* reads and overwrites never change an entry's position or refresh its age;
* an expired entry is dropped from the store on read but stays in the
  insertion order, so a later eviction can pop a key that is already gone,
  remove nothing, and let the store grow past ``max_size``;
* a key that expired and was stored again is listed twice in the order, so
  its stale first position can evict the fresh value early;
* ``max_size=0`` makes the first ``put`` raise ``IndexError``.

Besides the documented ``get``/``put`` of context strings, ``put_composition`` /
``get_composition`` store and return a whole
:class:`~zerda_async.core.models.Composition` (the context with its citations),
so a cache hit can cite what the miss that stored it cited.  Both pairs share one
store, one eviction order and the same hit and miss counters.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from .models import Composition

__all__ = ["BoundedContextCache", "ContextCache"]


class ContextCache:
    """FIFO-with-staleness cache mapping keys to ``(context, stored_at)``.

    ``clock`` supplies the current time in seconds (``time.time`` by default);
    tests pass a fake clock to control expiry.  Entries older than
    ``ttl_seconds`` (strictly) are misses.  Instances are mutable and not
    locked; share one across threads only under an external lock.
    """

    def __init__(
        self,
        max_size: int = 256,
        ttl_seconds: int = 300,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._max = max_size
        self._ttl = ttl_seconds
        self._clock = clock
        # key -> (context, stored_at, the composition it came from when one was stored)
        self._store: dict[str, tuple[str, float, Composition | None]] = {}
        self._order: deque[str] = deque()
        self._hits = 0
        self._misses = 0

    def get(self, key: str) -> str | None:
        """The cached context, or ``None`` (a miss) if absent or expired.

        An expired entry is removed from the store only, not from the order.
        """
        entry = self._lookup(key)
        return None if entry is None else entry[0]

    def get_composition(self, key: str) -> Composition | None:
        """Like :meth:`get`, but the stored composition (citations included).

        An entry stored with :meth:`put` comes back as a composition without
        citations.
        """
        entry = self._lookup(key)
        if entry is None:
            return None
        context, _, composition = entry
        return composition if composition is not None else Composition(context)

    def contains(self, key: str) -> bool:
        """True when :meth:`get` would hit now; counts nothing and removes nothing."""
        entry = self._store.get(key)
        return entry is not None and self._clock() - entry[1] <= self._ttl

    def put(self, key: str, context: str) -> None:
        """Store ``context`` under ``key``.

        An existing key gets the new value and timestamp but keeps its place.
        A new key, when the store is full, first pops the oldest key of the
        order and drops it from the store if it is still there.
        """
        self._insert(key, context, None)

    def put_composition(self, key: str, composition: Composition) -> None:
        """Store ``composition.context`` under ``key`` with its citations (as :meth:`put`)."""
        self._insert(key, composition.context, composition)

    def _lookup(self, key: str) -> tuple[str, float, Composition | None] | None:
        """The live entry of ``key``, counting a hit or a miss (the documented ``get``)."""
        if key not in self._store:
            self._misses += 1
            return None
        entry = self._store[key]
        if self._clock() - entry[1] > self._ttl:
            del self._store[key]
            self._misses += 1
            return None
        self._hits += 1
        return entry

    def _insert(self, key: str, context: str, composition: Composition | None) -> None:
        if key in self._store:
            self._store[key] = (context, self._clock(), composition)
            return
        if len(self._store) >= self._max:
            oldest = self._order.popleft()
            self._store.pop(oldest, None)
        self._store[key] = (context, self._clock(), composition)
        self._order.append(key)

    def make_key(self, query: str, filters: Mapping[str, Any] | None = None) -> str:
        """MD5 hex digest of the stripped, lower-cased query plus the sorted filters.

        Non-empty ``filters`` append ``str(sorted(filters.items()))``; ``None``
        and ``{}`` give the same key.  Keys of mutually incomparable types
        raise ``TypeError``.
        """
        raw = query.strip().lower()
        if filters:
            raw += str(sorted(filters.items()))
        return hashlib.md5(raw.encode("utf-8"), usedforsecurity=False).hexdigest()

    @property
    def stats(self) -> dict[str, Any]:
        """A fresh dict: size (expired-but-unread entries included), limits and hit rate."""
        total = self._hits + self._misses
        return {
            "size": len(self._store),
            "max_size": self._max,
            "hits": self._hits,
            "misses": self._misses,
            "hit_rate": f"{self._hits / total:.1%}" if total else "0%",
            "ttl_sec": self._ttl,
        }

    def clear(self) -> None:
        """Drop every entry; the hit and miss counters are kept."""
        self._store.clear()
        self._order.clear()


class BoundedContextCache(ContextCache):
    """The documented cache, except that it never holds more than ``max_size`` entries.

    Used by the async engine, which runs for days inside services.  The
    documented cache (kept unchanged for the sync facade) grows past
    ``max_size`` by one entry for every expired entry that is read and not
    stored again (its key stays in the eviction order, and evicting it later
    removes nothing), and its eviction order grows while the store is below
    ``max_size``.  Here a new key in a full cache evicts keys in order until
    a stored entry actually leaves, and the order is compacted (stale keys
    dropped) once it holds more than twice ``max_size`` keys.  Until an entry
    expires both caches behave identically (same hits, evictions and stats);
    ``max_size=0`` still raises the documented ``IndexError`` on ``put``.
    """

    def _insert(self, key: str, context: str, composition: Composition | None) -> None:
        """Store under ``key``, evicting until the store has room."""
        if key in self._store:
            self._store[key] = (context, self._clock(), composition)
            return
        while len(self._store) >= self._max:
            oldest = self._order.popleft()
            self._store.pop(oldest, None)
        self._store[key] = (context, self._clock(), composition)
        self._order.append(key)
        if len(self._order) > 2 * self._max:
            self._compact_order()

    def _compact_order(self) -> None:
        """Keep only the first listed position of each stored key (the eviction order)."""
        seen: set[str] = set()
        kept: deque[str] = deque()
        for key in self._order:
            if key in self._store and key not in seen:
                seen.add(key)
                kept.append(key)
        self._order = kept

"""The index store's corpus version as a replica sees it: read at most every half second.

Reading the version on every request costs one round trip to the index
store per request.  A :class:`VersionClock` keeps the last value read and
reads again once it is older than ``poll`` seconds (one reader at a time;
concurrent requests wait for that read instead of each making their own), so
an update committed by any replica or by ``zerda index --store`` is seen
within ``poll`` seconds plus one read.  ``forget()`` after this process's
own write makes the next request read the new version at once.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import anyio

from zerda_async.errors import StoreUnavailableError

__all__ = ["VERSION_POLL_SECONDS", "VersionClock"]

VERSION_POLL_SECONDS = 0.5
"""How old the corpus version a request uses may be (updates are seen within a second)."""


class _Versioned(Protocol):
    async def version(self) -> int: ...


class VersionClock:
    """The last corpus version read from an index store, and when it was read."""

    def __init__(self, poll: float = VERSION_POLL_SECONDS) -> None:
        if not poll >= 0:
            raise ValueError(f"version poll must be >= 0 seconds, got {poll!r}")
        self.poll = poll
        self.reads = 0  # round trips made (statistics, and the tests' proof of polling)
        self._value: int | None = None
        self._read_at = -math.inf
        self._lock: anyio.Lock | None = None
        # When the last read failed, and why (see current()).
        self._failure: tuple[float, StoreUnavailableError] | None = None

    def _fresh(self) -> int | None:
        if self._value is not None and time.monotonic() - self._read_at < self.poll:
            return self._value
        return None

    async def current(self, store: _Versioned) -> int:
        """The version, read from ``store`` only when the last read is older than ``poll``.

        Requests that waited for a read that failed fail with it, rather than each
        waiting for a read of its own: a store that does not answer costs them one
        timeout, not one per request queued.
        """
        found = self._fresh()
        if found is not None:
            return found
        if self._lock is None:  # made on first use, inside the event loop
            self._lock = anyio.Lock()
        asked = time.monotonic()
        async with self._lock:
            found = self._fresh()
            if found is not None:  # another request read it while this one waited
                return found
            failed = self._failure
            if failed is not None and failed[0] >= asked:
                raise failed[1]
            try:
                return await self.read(store)
            except StoreUnavailableError as exc:
                self._failure = (time.monotonic(), exc)
                raise

    async def read(self, store: _Versioned) -> int:
        """Read the version from ``store`` now (and keep it)."""
        # The age counts from before the read: a value is never older than it claims.
        started = time.monotonic()
        value = await store.version()
        self.reads += 1
        # Versions only grow: a slower concurrent read of an older one is not kept.
        if self._value is None or value >= self._value:
            self._value, self._read_at = value, max(started, self._read_at)
        return value

    @property
    def last(self) -> int | None:
        """The last version read, however old (``None``: never read, or forgotten)."""
        return self._value

    def forget(self) -> None:
        """Drop the value kept (after a write through this process)."""
        self._value, self._read_at = None, -math.inf

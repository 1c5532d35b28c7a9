"""The whole index in the replica: a copy of the store's chunks kept at the corpus version.

With ``search="local"`` a :class:`~._postgres_index.PostgresIndexStore` loads
every live chunk (doc id, text, metadata, float64 unit vector) into an
in-memory :class:`~zerda_async.core.index.CorpusIndex` when it opens, and
answers the vector, keyword and metadata searches from it with the in-memory
index's own code (:class:`~zerda_async.core.retrieval.IndexSearches`): the
scores, ties, filters and evidence are those of the in-memory engine by
construction, and a search costs PostgreSQL nothing.

PostgreSQL stays the source of truth.  The copy checks the corpus version at
most every ``poll`` seconds (one primary-key read; the searches in between
use the copy as it is) and, when it moved, catches up: the chunks added since
(positions only grow, so they are those at or beyond the copy's end) and the
positions removed since, which writes log in ``{p}removed`` with the version
that removed them (schema step 7; the log keeps the last
:data:`~._pg_writes.REMOVED_KEPT_VERSIONS` versions, and a copy further behind
loads everything again).  The store's ``version()`` is the copy's (after
the same check), so a cache key names the corpus the copy searches; a write
through the store makes the next search check.  The copy tokenises with the
analyser recorded in the store (the first write records it), whatever the
store object was given, so its BM25 is the store's.

Why: at 100,000 chunks a request's searches cost PostgreSQL three statements
and each replica ~4 ms of CPU for them (bench_scaleout), and every replica's
searches queue on the one server; the copy costs each replica the memory of an
in-memory engine (chunks, postings and ``8 × dim`` bytes a vector) and a few
seconds to open, so replicas add throughput as over a saved directory.  It
suits corpora that fit every replica's memory; beyond that, exact or HNSW
search in PostgreSQL.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from numpy.typing import NDArray

from ..core.index import CorpusIndex
from ..core.retrieval import IndexSearches
from ..errors import StoreUnavailableError
from ._pg_common import PgPool
from ._pg_writes import REMOVED_KEPT_VERSIONS
from ._protocols import StoredChunk
from ._version import VERSION_POLL_SECONDS

__all__ = ["Copy", "LocalCopy"]

_SECONDS_PER_ROW = 0.0002
"""Time a catch-up may take per row it reads, beyond the operation timeout: about ten times
what was measured (reading 100,000 rows of text, metadata and 64-dim vectors took 2.1 s)."""


@dataclass(frozen=True, slots=True)
class Copy:
    """One immutable generation of the copy (a search keeps the one it started with)."""

    version: int
    end: int  # positions below this were loaded
    positions: NDArray[np.int64]  # store position of each index position, ascending
    index: CorpusIndex
    searches: IndexSearches  # over index, naming store positions


class LocalCopy:
    """The store's live chunks in this process, refreshed to the corpus version."""

    def __init__(self, prefix: str, analyzer: str, poll: float = VERSION_POLL_SECONDS) -> None:
        if not poll >= 0:
            raise ValueError(f"the local copy's version poll must be >= 0 seconds, got {poll!r}")
        self.poll = poll
        self.checks = 0  # version reads made (statistics, and the tests' proof of polling)
        self._prefix = prefix
        self._analyzer = analyzer
        self._copy: Copy | None = None
        self._checked = -math.inf  # when the last completed check started
        self._writes = 0  # writes through this process (see invalidate)
        self._failed: tuple[float, StoreUnavailableError] | None = None  # last check, if it failed
        self._lock = anyio.Lock()

    @property
    def chunks(self) -> int:
        """Live chunks in the copy (0 before the first load)."""
        return 0 if self._copy is None else self._copy.index.n_live

    def invalidate(self) -> None:
        """Make the next search check the version (after a write through this process).

        A check already in flight may have read the version before the write
        committed, so it does not count as fresh either.
        """
        self._writes += 1
        self._checked = -math.inf

    async def current(self, pg: PgPool) -> Copy:
        """The copy, checked against the store at most ``poll`` seconds ago.

        One check at a time: the others wait for it rather than make their own,
        and a caller that asked before a check failed fails with it (so a
        stopped server costs each request one timeout at most, not one per
        request queued before it).  Catching up reads on connections of its
        own, with time for the rows it reads (a bulk load elsewhere may have
        added many), not a search's timeout, and is shielded from the caller's
        cancellation: a request that gives up does not throw away a catch-up
        the next one would start over.
        """
        asked = time.monotonic()
        copy = self._copy
        if copy is not None and asked - self._checked < self.poll:
            return copy
        async with self._lock:
            copy = self._copy
            if copy is not None and self._checked >= asked - self.poll:
                return copy  # checked while this call waited
            if self._failed is not None and self._failed[0] >= asked:
                error = self._failed[1]  # failed while this call waited: so would this check
                raise StoreUnavailableError(error.store, error.url, error.problem)
            started, writes = time.monotonic(), self._writes
            with anyio.CancelScope(shield=True):
                try:
                    copy = await self._caught_up(pg, copy)
                except StoreUnavailableError as exc:
                    self._failed = (time.monotonic(), exc)
                    raise
                self._failed = None
                self.checks += 1
                self._copy = copy
                if self._writes == writes:
                    self._checked = max(started, self._checked)
        assert copy is not None  # a shielded scope passes every error on
        return copy

    async def _caught_up(self, pg: PgPool, old: Copy | None) -> Copy:
        p = self._prefix
        async with pg.connection() as conn:
            cur = await conn.execute(f"SELECT version, next_pos FROM {p}corpus")
            row = await cur.fetchone()
        assert row is not None
        if old is not None and int(row[0]) == old.version:
            return old
        if old is not None and int(row[0]) - old.version > REMOVED_KEPT_VERSIONS:
            old = None  # its removals may be gone from the log: load everything again
        start = 0 if old is None else old.end
        rows_at_most = max(0, int(row[1]) - start)
        timeout = pg.operation_timeout + _SECONDS_PER_ROW * rows_at_most
        async with pg.connection(timeout) as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cur = await conn.execute(f"SELECT version, next_pos, analyzer FROM {p}corpus")
            row = await cur.fetchone()
            assert row is not None
            version, end = int(row[0]), int(row[1])
            analyzer = self._analyzer if row[2] is None else str(row[2])
            if old is not None and old.version == version:
                return old
            if old is not None and (
                version - old.version > REMOVED_KEPT_VERSIONS
                or version < old.version
                or end < old.end
            ):
                # Fell further behind meanwhile, or the store was recreated (its
                # version or positions went back): load everything again.
                old, start = None, 0
            cur = await conn.execute(
                f"SELECT pos, doc_id, text, metadata, unit FROM {p}chunks WHERE pos >= %s"
                f" ORDER BY pos",
                (start,),
                binary=True,
            )
            added = await cur.fetchall()
            gone: list[int] = []
            if old is not None:
                cur = await conn.execute(
                    f"SELECT pos FROM {p}removed WHERE version > %s AND pos < %s",
                    (old.version, start),
                )
                gone = [int(r[0]) for r in await cur.fetchall()]
        # Tokenising the added texts and stacking their vectors: off the event loop.
        return await anyio.to_thread.run_sync(_merged, old, version, end, added, gone, analyzer)


def _merged(
    old: Copy | None, version: int, end: int, added: list[Any], gone: list[int], analyzer: str
) -> Copy:
    """``old`` without the positions ``gone``, then with the rows ``added`` appended."""
    if old is None:
        index, positions = CorpusIndex.build([], analyzer=analyzer), np.empty(0, dtype=np.int64)
    else:
        index, positions = old.index, old.positions
    if gone:
        wanted = np.array(gone, dtype=np.int64)
        at = np.searchsorted(positions, wanted)
        held = at < positions.shape[0]
        held[held] = positions[at[held]] == wanted[held]
        rows = at[held]
        live = np.ones(index.n_positions, dtype=bool) if index.live is None else index.live.copy()
        live[rows] = False
        before = index.n_positions
        index = index.without_positions(rows)
        if index.n_positions != before:  # the snapshot compacted: so do its store positions
            positions = positions[live]
    if added:
        chunks = [StoredChunk(str(r[1]), r[2], r[3]) for r in added]
        units = None
        if added[0][4] is not None:
            units = np.stack([np.frombuffer(r[4], dtype=np.float64) for r in added])
        new_positions = np.array([int(r[0]) for r in added], dtype=np.int64)
        if index.n_positions == 0:
            # Empty (removing every chunk compacts to nothing): start over, so that chunks
            # of another kind (vectors or not, any dimension) fit, with the analyser the
            # store recorded meanwhile.
            index = CorpusIndex.build(chunks, units, analyzer=analyzer)
            positions = new_positions
        else:
            index = index.appended(chunks, units)
            positions = np.concatenate((positions, new_positions))
    return Copy(version, end, positions, index, IndexSearches(index, positions))

"""Exact cosine in the replica: a copy of the store's vectors kept at the corpus version.

With ``search="local"`` a :class:`~._postgres_index.PostgresIndexStore` loads
every chunk's float64 unit vector into this process when it opens.  A search
scans the copy, then reads the rows of the best with the corpus version; when
that is newer than the copy's, the copy catches up — the chunks added since
(positions only grow, so they are those at or beyond the copy's end) and the
positions removed since, which writes log in ``{p}removed`` with the version
that removed them (schema step 7; the log keeps the last
:data:`~._pg_writes.REMOVED_KEPT_VERSIONS` versions, and a copy further behind
loads everything again) — and the search runs again.  So a search
costs PostgreSQL one primary-key read of ``k`` rows.  The scan is the in-memory
index's own :class:`~zerda_async.core.index.VectorIndex`, so the cosines are
those of the in-memory engine.

Why: an exact scan in PostgreSQL costs the server ~90 ns per chunk and
search, and every replica's searches queue on that one server; a local copy
costs each replica ``8 × dim`` bytes per chunk (51 MB for 100,000 64-dim
chunks) and its own CPU, so replicas add vector throughput.  It suits corpora
whose vectors fit every replica's memory; beyond that, HNSW in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.index import VectorIndex
from ..runtime import run_in_thread
from ._pg_common import PgPool
from ._pg_writes import REMOVED_KEPT_VERSIONS

__all__ = ["Copy", "LocalVectors"]

_SECONDS_PER_ROW = 0.0001
"""Time a catch-up may take per row it reads, beyond the operation timeout: ten times what
was measured (opening a local copy of 100,000 64-dim rows, 51 MB, took 0.33 s)."""

_COMPACT_SHARE = 0.25
"""Removed rows beyond this share of the copy are dropped from it (one copy of the live rows)."""


@dataclass(frozen=True, slots=True)
class Copy:
    """One immutable generation of the copy (a search keeps the one it started with)."""

    version: int
    end: int  # positions below this were loaded
    positions: NDArray[np.int64]  # store position of each row, ascending
    index: VectorIndex | None  # None while the store holds no vectors
    removed: int  # rows masked out of ``index``


class LocalVectors:
    """The store's unit vectors in this process, refreshed to the corpus version on demand."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._copy: Copy | None = None
        self._lock = anyio.Lock()

    @property
    def rows(self) -> int:
        """Live rows in the copy (0 before the first load)."""
        copy = self._copy
        if copy is None or copy.index is None:
            return 0
        return copy.index.n_positions - copy.removed

    async def loaded(self, pg: PgPool) -> Copy:
        """The copy as it is, loaded first if this process has none yet."""
        copy = self._copy
        return copy if copy is not None else await self.refreshed(pg, None)

    async def refreshed(self, pg: PgPool, seen: Copy | None) -> Copy:
        """The copy at the store's current version (``seen``: the one found out of date).

        On connections of its own, the fetch allowed time for the rows it reads
        (a bulk load elsewhere may have added many), not a search's timeout.
        """
        async with self._lock:  # one refresh at a time; the others then find it done
            copy = self._copy
            if copy is None or copy is seen:
                copy = await self._caught_up(pg, copy)
                self._copy = copy
        return copy

    async def _caught_up(self, pg: PgPool, old: Copy | None) -> Copy:
        p = self._prefix
        async with pg.connection() as conn:
            cur = await conn.execute(f"SELECT version, next_pos FROM {p}corpus")
            row = await cur.fetchone()
        assert row is not None
        if old is not None and int(row[0]) - old.version > REMOVED_KEPT_VERSIONS:
            old = None  # its removals may be gone from the log: load everything again
        start = 0 if old is None else old.end
        rows_at_most = max(0, int(row[1]) - start)
        timeout = pg.operation_timeout + _SECONDS_PER_ROW * rows_at_most
        async with pg.connection(timeout) as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cur = await conn.execute(f"SELECT version, next_pos FROM {p}corpus")
            row = await cur.fetchone()
            assert row is not None
            version, end = int(row[0]), int(row[1])
            if old is not None and old.version == version:
                return old
            if old is not None and version - old.version > REMOVED_KEPT_VERSIONS:
                old, start = None, 0  # fell further behind meanwhile
            cur = await conn.execute(
                f"SELECT pos, unit FROM {p}chunks WHERE pos >= %s AND unit IS NOT NULL"
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
        # Stacking rows and compacting copy arrays: off the event loop.
        return await anyio.to_thread.run_sync(_merged, old, version, end, added, gone)

    async def scan(
        self, copy: Copy, query: ArrayLike, limiter: anyio.CapacityLimiter
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Store positions (ascending) and their rounded cosines with ``query`` in ``copy``.

        The scan runs in a worker thread (``limiter``: how many at once).
        """
        if copy.index is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        dim = np.asarray(query).size
        if dim != copy.index.dim:
            raise ValueError(
                f"query vector dimension {dim} does not match the index store ({copy.index.dim})"
            )
        rows, sims = await run_in_thread(copy.index.similarities, query, limiter=limiter)
        return (copy.positions if rows is None else copy.positions[rows]), sims


def _merged(old: Copy | None, version: int, end: int, added: list[Any], gone: list[int]) -> Copy:
    """``old`` with the positions ``gone`` masked out and the rows ``added`` appended."""
    positions = np.empty(0, dtype=np.int64) if old is None else old.positions
    index = None if old is None else old.index
    removed = 0 if old is None else old.removed
    if gone and index is not None:
        # Removals first: a write that removed every row may add rows of a new dimension.
        wanted = np.array(gone, dtype=np.int64)
        at = np.searchsorted(positions, wanted)
        held = at < positions.shape[0]
        held[held] = positions[at[held]] == wanted[held]
        live = np.ones(index.n_positions, dtype=bool) if index.live is None else index.live.copy()
        removed += int(live[at[held]].sum())
        live[at[held]] = False
        index = index.with_live(live)
        if removed == index.n_positions:
            index, positions, removed = None, np.empty(0, dtype=np.int64), 0
        elif removed > _COMPACT_SHARE * index.n_positions:
            index, positions, removed = index.compacted(live), positions[live], 0
    if added:
        new_rows = np.stack([np.frombuffer(r[1], dtype=np.float64) for r in added])
        new_positions = np.array([int(r[0]) for r in added], dtype=np.int64)
        if index is None:
            index, positions = VectorIndex.from_unit_rows(new_rows), new_positions
        else:
            index = index.appended(new_rows)
            positions = np.concatenate((positions, new_positions))
    return Copy(version, end, positions, index, removed)

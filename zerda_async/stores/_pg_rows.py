"""The chunk rows of ranked hits: the best ``k`` that exist and pass a filter.

BM25 over posting blocks (:mod:`._pg_keyword`) ranks in the replica and ends
here: it holds every hit's score and needs the rows of the best few.  Without
a filter one primary-key lookup of the best ``k`` does; with one, the best
candidates are checked against it in SQL in rounds (each sixteen times
larger), so a filter costs a few lookups rather than a scan, and every
candidate is reached eventually.  The row reads also
return the corpus version, so a search that scored an older version than the
rows show can score again instead of mixing two versions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

__all__ = ["ATTEMPTS", "best_rows"]

ATTEMPTS = 3
"""Scorings of one search at most: a write committing between the scoring and the row reads
makes the search score again on the new version; the last attempt takes the rows as read."""

_SLACK = 16
"""Candidates taken beyond ``k`` in the first round of a filtered search."""

_GROWTH = 16
"""Each further round checks this many times more candidates."""


def _ranked(values: NDArray[np.float64], m: int) -> NDArray[np.intp]:
    """Indices of the best ``m`` of ``values`` (at least), ordered by value desc, then position.

    Ties at the cut are all kept, so the order never depends on the partition.
    """
    if m < values.shape[0]:
        kth = np.partition(values, values.shape[0] - m)[values.shape[0] - m]
        chosen = np.flatnonzero(values >= kth)
    else:
        chosen = np.arange(values.shape[0])
    # The hits ascend, so a stable sort on -value leaves ties in position order.
    return chosen[np.argsort(-values[chosen], kind="stable")]


async def best_rows(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    hits: NDArray[np.signedinteger[Any]],
    values: NDArray[np.float64],
    k: int,
    where: str,
    params: dict[str, Any],
    version: int | None,
) -> list[Any] | None:
    """``(pos, doc_id, text, metadata, score)`` of the best ``k`` hits that pass ``where``.

    ``hits`` are store positions, ascending; the best have the largest
    ``values``, ties by position.  ``version`` is the corpus version the hits
    were scored at: None is returned when a row read shows a later one, or
    misses a hit's chunk without a filter (the caller scores again);
    ``version=None`` takes the rows as they are.  ``where`` must name the
    chunk columns with the alias ``c``.
    """
    filtered = where != "TRUE"
    # The corpus row always comes back, so every round tells the version, even
    # one in which no candidate passes the filter.
    sql = (
        f"SELECT v.version, c.pos, c.doc_id, c.text, c.metadata FROM {prefix}corpus v"
        f" LEFT JOIN {prefix}chunks c ON c.pos = ANY(%(cands)s::bigint[])"
        + (f" AND {where}" if filtered else "")
    )
    chosen: list[Any] = []
    done = 0
    want = k if not filtered else k + _SLACK
    while len(chosen) < k and done < hits.shape[0]:
        order = _ranked(values, min(done + want, hits.shape[0]))
        batch = order[done:]
        cur = await conn.execute(sql, {**params, "cands": hits[batch].tolist()})
        found = await cur.fetchall()
        rows = {int(r[1]): r[1:] for r in found if r[1] is not None}
        # A later version, or (unfiltered) a hit whose chunk is gone: scored too early.
        moved = int(found[0][0]) != version
        if version is not None and (moved or (not filtered and len(rows) < batch.shape[0])):
            return None
        chosen.extend(
            (*rows[int(hits[i])], float(values[i])) for i in batch if int(hits[i]) in rows
        )
        done = order.shape[0]
        want *= _GROWTH
    if version is not None and done == 0:
        # No candidate at all, so no round told the version: ask for it.
        cur = await conn.execute(f"SELECT version FROM {prefix}corpus")
        row = await cur.fetchone()
        if row is not None and int(row[0]) != version:
            return None
    return chosen[:k]

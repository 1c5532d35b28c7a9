"""The chunk rows of ranked hits: the best ``k`` that exist and pass a filter.

Both searches that rank in the replica (BM25 over posting blocks, cosine over
a local copy of the vectors) end here: they hold every hit's score and need
the rows of the best few.  Without a filter one primary-key lookup of the
best ``k`` does; with one, the best candidates are checked against it in SQL
in rounds (each sixteen times larger), so a filter costs a few lookups rather
than a scan, and every candidate is reached eventually.  A hit whose chunk
is gone (removed after the hits were scored) is skipped like a filtered one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

__all__ = ["best_rows"]

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
) -> list[Any]:
    """``(pos, doc_id, text, metadata, score)`` of the best ``k`` hits that pass ``where``.

    ``hits`` are store positions, ascending; the best have the largest
    ``values``, ties by position.
    """
    filtered = where != "TRUE"
    sql = (
        f"SELECT c.pos, c.doc_id, c.text, c.metadata FROM {prefix}chunks c"
        f" WHERE c.pos = ANY(%(cands)s::bigint[])" + (f" AND {where}" if filtered else "")
    )
    chosen: list[Any] = []
    done = 0
    want = k if not filtered else k + _SLACK
    while len(chosen) < k and done < hits.shape[0]:
        order = _ranked(values, min(done + want, hits.shape[0]))
        batch = order[done:]
        cur = await conn.execute(sql, {**params, "cands": hits[batch].tolist()})
        rows = {int(r[0]): r for r in await cur.fetchall()}
        chosen.extend(
            (*rows[int(hits[i])], float(values[i])) for i in batch if int(hits[i]) in rows
        )
        done = order.shape[0]
        want *= _GROWTH
    return chosen[:k]

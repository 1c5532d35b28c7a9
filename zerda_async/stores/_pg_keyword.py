"""BM25 in the PostgreSQL index store: the query terms' blocks, scored in the replica.

A search reads, in one statement (one snapshot), the corpus totals, its
terms' document frequencies and their posting blocks (:mod:`._pg_blocks`: a
few rows per term), then computes every weight with the in-memory index's own
:func:`~zerda_async.core.index.bm25_weights` and adds them term by term in
query order into one score per position — the in-memory index's arithmetic,
so the scores are bit-identical by construction.  The top ``k`` by score,
ties by corpus position, are then read from the chunk rows.

With a metadata filter, candidates are checked against it in SQL in rounds
(:func:`~._pg_rows.best_rows`).

Measured at 100,000 chunks (bench_scaleout's corpus, 120 queries): 2.8 ms a
search (median) against 10.4 ms when PostgreSQL summed one row per posting,
2.1 ms with the weights cached per version (:class:`WeightCache`); with a
filter that one chunk in 24 passes, 5.9 ms.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import psycopg
from numpy.typing import NDArray

from ..core.index import WEIGHT_CACHE_POSTINGS, bm25_idf, bm25_weights, query_coverage
from ..runtime import run_in_thread
from ._pg_blocks import unpack
from ._pg_rows import ATTEMPTS, best_rows

__all__ = ["WeightCache", "keyword_rows"]


TermWeights = tuple[NDArray[np.int64], NDArray[np.float64]]
"""One term's positions (ascending) and their BM25 weights."""


class WeightCache:
    """The BM25 weights of the terms searched at one corpus version, in this process.

    Weights depend only on the version (its N, average length and document
    frequencies), so a search reads the blocks of the terms it has not seen
    at this version only, as the in-memory index caches its weights per
    snapshot.  A newer version starts over; so does reaching ``max_postings``
    (a term longer than that is not kept).  ``entries`` is only ever added
    to or replaced by a new dict, never emptied in place, so a search that
    took ``(version, entries)`` before awaiting still holds every term it saw.
    """

    def __init__(self, max_postings: int = WEIGHT_CACHE_POSTINGS) -> None:
        self.version = -1
        self.entries: dict[str, TermWeights] = {}
        self._postings = 0
        self._max = max_postings

    def put(self, version: int, found: dict[str, TermWeights]) -> None:
        """Keep the weights ``found`` at ``version`` (those of an older version are dropped)."""
        if version < self.version:
            return  # a search that started before a commit finished after a newer one
        if version > self.version:
            self.version, self.entries, self._postings = version, {}, 0
        for term, value in found.items():
            size = int(value[0].shape[0])
            if size > self._max:
                continue
            if self._postings + size > self._max:
                self.entries, self._postings = {}, 0
            self.entries[term] = value
            self._postings += size


async def keyword_rows(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    terms: list[str],
    k: int,
    where: str,
    params: dict[str, Any],
    limiter: anyio.CapacityLimiter,
    cache: WeightCache,
) -> list[Any]:
    """``(pos, doc_id, text, metadata, score, coverage)`` of the top ``k``.

    The statistics and the blocks of the terms not in ``cache`` come from one
    statement (one snapshot), the rows of the best after; when a write
    committed in between, the search runs again on the new version, so the
    result is that of one version unless writes commit during each of
    :data:`~._pg_rows.ATTEMPTS` scorings (the last takes the rows as read).
    The scoring runs in a worker thread (``limiter``: how many at once).
    ``coverage`` is each hit's query coverage, by the in-memory index's own
    :func:`~zerda_async.core.index.query_coverage` over the same
    ``(idf, positions)`` pairs, in query order.
    """
    rows: list[Any] | None = None
    for attempt in range(ATTEMPTS):
        scored = await _scored(conn, prefix, terms, limiter, cache)
        if scored is None:
            return []
        version, hits, values, held = scored
        # The last attempt takes the rows as they are, whatever commits meanwhile.
        check = version if attempt < ATTEMPTS - 1 else None
        rows = await best_rows(conn, prefix, hits, values, k, where, params, check)
        if rows is not None:
            break
    assert rows is not None
    positions = np.array([int(r[0]) for r in rows], dtype=np.int64)
    shares = query_coverage(held, positions).tolist()
    return [(*row, share) for row, share in zip(rows, shares, strict=True)]


async def _scored(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    terms: list[str],
    limiter: anyio.CapacityLimiter,
    cache: WeightCache,
) -> (
    tuple[int, NDArray[np.intp], NDArray[np.float64], list[tuple[float, NDArray[np.int64] | None]]]
    | None
):
    """(version, positions with a positive score, their scores, each term's idf and
    positions), or None when none can score."""
    p = prefix
    # Taken once: another search may replace the cache while this one awaits.
    at, entries = cache.version, cache.entries
    known = [t for t in terms if t in entries]
    # A cached term's blocks are skipped only while the corpus is at the cache's version.
    cur = await conn.execute(
        f"SELECT c.version, c.n_live, c.total_length, c.next_pos, t.term, t.df, b.pos, b.tf, b.len"
        f" FROM {p}corpus c LEFT JOIN {p}terms t ON t.term = ANY(%s) AND t.df > 0"
        f" LEFT JOIN {p}blocks b ON b.term_id = t.id"
        f" AND NOT (c.version = %s AND t.term = ANY(%s)) ORDER BY t.id, b.lo",
        (terms, at, known),
        binary=True,
    )
    rows = await cur.fetchall()
    version, n_docs, total, n_positions = (int(v) for v in rows[0][:4])
    cached = entries if version == at else {}
    blocks: dict[str, list[Any]] = {}
    df: dict[str, int] = {}
    for *_, term, term_df, pos, tf, length in rows:
        if term is not None:
            df[str(term)] = int(term_df)
            if pos is not None:
                blocks.setdefault(str(term), []).append((pos, tf, length))
    held = [t for t in terms if t in df and (t in blocks or t in cached)]
    if n_docs == 0 or not held:
        return None
    plan = [(t, cached.get(t), blocks.get(t, []), df[t]) for t in held]
    hits, values, fresh = await run_in_thread(
        _scores, plan, n_docs, total / n_docs, n_positions, limiter=limiter
    )
    cache.put(version, fresh)
    weights = {**cached, **fresh}
    held_by = [
        (bm25_idf(n_docs, df.get(t, 0)), weights[t][0] if t in weights else None) for t in terms
    ]
    return version, hits, values, held_by


def _scores(
    plan: list[tuple[str, TermWeights | None, list[Any], int]],
    n_docs: int,
    avgdl: float,
    n_positions: int,
) -> tuple[NDArray[np.intp], NDArray[np.float64], dict[str, TermWeights]]:
    """Positive-score positions (ascending), their scores (terms in query order), new weights."""
    scores = np.zeros(n_positions, dtype=np.float64)
    fresh: dict[str, TermWeights] = {}
    for term, known, rows, df in plan:
        if known is None:
            docs, tfs, lengths = unpack(rows)
            known = fresh[term] = docs, bm25_weights(tfs, lengths, bm25_idf(n_docs, df), avgdl)
        # Positions are unique within a term, so the buffered add touches each once.
        scores[known[0]] += known[1]
    hits = np.flatnonzero(scores > 0)
    return hits, scores[hits], fresh

"""The PostgreSQL index store's inverted index: postings packed in blocks, one row per run.

Layout (schema step 6 of :data:`~._pg_sql.INDEX_SCHEMA`): ``{p}terms`` maps
each term to an id and its live document frequency; ``{p}blocks`` holds each
term's postings in ascending runs of at most :data:`BLOCK` postings, one row
per run, keyed by ``(term_id, lo)`` with the run's first (``lo``) and last
(``hi``) position and three packed columns: positions (big-endian int64),
term frequencies and chunk token counts (big-endian int32) — the layout of
PostgreSQL's own ``int8send`` / ``int4send``, which the migration from the
row-per-posting table uses.

Why blocks: a search reads a few rows per query term instead of one row per
posting (a common term of a 100,000-chunk corpus has tens of thousands), and
scores them in the replica with numpy (:mod:`._pg_keyword`), so PostgreSQL's
work per search is small and replicas add throughput.  The packed columns are
stored uncompressed (``STORAGE EXTERNAL``): reading one is a copy, and sorted
int64 positions gain little from PostgreSQL's compressor.

Writes keep the runs ascending and bounded: positions only grow, so an add
appends to each term's last run while it has room, then starts new ones; a
delete rewrites only the runs that hold a deleted position (it finds the
deleted chunks' terms by tokenising their text again with the store's
analyser).  Both also keep the document frequencies.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
import psycopg
from numpy.typing import NDArray

__all__ = ["BLOCK", "Postings", "add_postings", "delete_postings", "unpack"]

BLOCK = 2048
"""Postings per block at most (32 KB a row).

Measured at 100,000 chunks: 4,096 searched in 2.7 ms but rewrote 64 KB per touched
term on a small write (a 100-chunk add 634 ms); 1,024 searched in 3.4 ms; 2,048
searches in 2.8 ms, and a 100-chunk add takes 111 ms, a 10-chunk replace 211 ms.
"""

_POS = np.dtype(">i8")
_INT = np.dtype(">i4")

Postings = tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int32]]
"""One term's postings: positions (ascending), term frequencies, chunk token counts."""


def unpack(rows: Sequence[Sequence[Any]]) -> Postings:
    """The postings of one term from its block rows ``(pos, tf, len)`` in ``lo`` order."""
    if len(rows) == 1:
        pos, tf, length = (bytes(c) for c in rows[0])
    else:
        pos, tf, length = (b"".join(bytes(r[i]) for r in rows) for i in range(3))
    return (
        np.frombuffer(pos, _POS).astype(np.int64),
        np.frombuffer(tf, _INT).astype(np.int32),
        np.frombuffer(length, _INT).astype(np.int32),
    )


def _packed(postings: Postings) -> tuple[bytes, bytes, bytes]:
    pos, tf, length = postings
    return pos.astype(_POS).tobytes(), tf.astype(_INT).tobytes(), length.astype(_INT).tobytes()


async def add_postings(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    counts: Sequence[Counter[str]],
    start: int,
) -> None:
    """Add the postings of chunks at positions ``start ...`` and their document frequencies.

    The positions must lie beyond every stored one (the store appends).
    """
    p = prefix
    # A Python loop over every posting: in a worker thread, off the event loop.
    terms, df, flat = await anyio.to_thread.run_sync(_grouped, counts, start)
    if not terms:
        return
    ids = await _term_ids(conn, p, terms, df)
    ends = np.cumsum(df).tolist()
    cur = await conn.execute(
        f"SELECT DISTINCT ON (term_id) term_id, lo, n FROM {p}blocks"
        f" WHERE term_id = ANY(%s) ORDER BY term_id, lo DESC",
        (ids,),
    )
    last = {int(r[0]): (int(r[1]), int(r[2])) for r in await cur.fetchall()}
    appends: list[tuple[int, int, Postings]] = []
    blocks: list[tuple[int, Postings]] = []
    for term_id, begin, end in zip(ids, [0, *ends[:-1]], ends, strict=True):
        if term_id in last:
            lo, n = last[term_id]
            room = min(BLOCK - n, end - begin)
            if room > 0:
                appends.append((term_id, lo, _cut(flat, begin, begin + room)))
                begin += room
        for at in range(begin, end, BLOCK):
            blocks.append((term_id, _cut(flat, at, min(at + BLOCK, end))))
    await _append(conn, p, appends)
    await _copy_blocks(conn, p, blocks)


def _grouped(counts: Sequence[Counter[str]], start: int) -> tuple[list[str], list[int], Postings]:
    """The terms, their document frequencies, and every posting grouped by term in that order.

    Within a term the positions ascend (a stable sort of chunk order).  Flat
    arrays, not a tuple per posting: a 100,000-chunk load has millions.
    """
    index: dict[str, int] = {}
    term_of, tf_of = array("i"), array("i")
    distinct = np.empty(len(counts), dtype=np.int64)
    lengths = np.empty(len(counts), dtype=np.int32)
    for i, chunk_counts in enumerate(counts):
        distinct[i], lengths[i] = len(chunk_counts), sum(chunk_counts.values())
        for term, tf in chunk_counts.items():
            term_of.append(index.setdefault(term, len(index)))
            tf_of.append(tf)
    by_term = np.frombuffer(term_of, dtype=np.int32)
    df = np.bincount(by_term, minlength=len(index)).tolist()
    order = np.argsort(by_term, kind="stable")
    chunk = np.repeat(np.arange(len(counts)), distinct)[order]
    flat = (start + chunk, np.frombuffer(tf_of, dtype=np.int32)[order], lengths[chunk])
    return list(index), df, flat


async def _term_ids(
    conn: psycopg.AsyncConnection[Any], prefix: str, terms: list[str], df: list[int]
) -> list[int]:
    """The ids of ``terms`` (in order), their document frequencies raised by ``df``."""
    p = prefix
    # Known terms are updated and new ones inserted by one statement (one snapshot,
    # disjoint sets; writers hold the corpus row lock), so no id is drawn in vain.
    cur = await conn.execute(
        f"WITH u AS (SELECT * FROM unnest(%s::text[], %s::bigint[]) AS u(term, n)),"
        f" old AS (UPDATE {p}terms t SET df = t.df + u.n FROM u WHERE t.term = u.term"
        f" RETURNING t.term, t.id),"
        f" new AS (INSERT INTO {p}terms (term, df) SELECT u.term, u.n FROM u"
        f" WHERE NOT EXISTS (SELECT 1 FROM {p}terms t WHERE t.term = u.term) RETURNING term, id)"
        f" SELECT term, id FROM old UNION ALL SELECT term, id FROM new",
        (terms, df),
    )
    found = {str(term): int(term_id) for term, term_id in await cur.fetchall()}
    return [found[t] for t in terms]


def _cut(postings: Postings, begin: int, end: int) -> Postings:
    return postings[0][begin:end], postings[1][begin:end], postings[2][begin:end]


def _kept(postings: Postings, keep: NDArray[np.bool_]) -> Postings:
    return postings[0][keep], postings[1][keep], postings[2][keep]


async def _append(
    conn: psycopg.AsyncConnection[Any], prefix: str, appends: list[tuple[int, int, Postings]]
) -> None:
    """Concatenate postings to the end of existing blocks (one statement)."""
    if not appends:
        return
    packed = [_packed(postings) for _, _, postings in appends]
    await conn.execute(
        f"UPDATE {prefix}blocks b SET pos = b.pos || u.pos, tf = b.tf || u.tf,"
        f" len = b.len || u.len, n = b.n + u.n, hi = u.hi"
        f" FROM unnest(%s::int[], %s::bigint[], %s::bytea[], %s::bytea[], %s::bytea[],"
        f" %s::int[], %s::bigint[]) AS u(term_id, lo, pos, tf, len, n, hi)"
        f" WHERE b.term_id = u.term_id AND b.lo = u.lo",
        (
            [a[0] for a in appends],
            [a[1] for a in appends],
            [k[0] for k in packed],
            [k[1] for k in packed],
            [k[2] for k in packed],
            [int(a[2][0].shape[0]) for a in appends],
            [int(a[2][0][-1]) for a in appends],
        ),
    )


async def _copy_blocks(
    conn: psycopg.AsyncConnection[Any], prefix: str, blocks: list[tuple[int, Postings]]
) -> None:
    if not blocks:
        return
    sql = f"COPY {prefix}blocks (term_id, lo, hi, n, pos, tf, len) FROM STDIN (FORMAT BINARY)"
    async with conn.cursor().copy(sql) as copy:
        copy.set_types(["int4", "int8", "int8", "int4", "bytea", "bytea", "bytea"])
        for term_id, postings in blocks:
            pos = postings[0]
            await copy.write_row(
                (term_id, int(pos[0]), int(pos[-1]), int(pos.shape[0]), *_packed(postings))
            )


async def delete_postings(
    conn: psycopg.AsyncConnection[Any], prefix: str, positions: list[int], terms: set[str]
) -> None:
    """Drop the postings of the chunks at ``positions``, which hold (only) ``terms``."""
    if not positions or not terms:
        return
    p = prefix
    gone = np.array(sorted(positions), dtype=np.int64)
    cur = await conn.execute(
        f"SELECT b.term_id, b.lo, b.pos, b.tf, b.len FROM {p}blocks b"
        f" JOIN {p}terms t ON t.id = b.term_id"
        f" WHERE t.term = ANY(%s) AND b.lo <= %s AND b.hi >= %s",
        (sorted(terms), int(gone[-1]), int(gone[0])),
        binary=True,
    )
    removed: Counter[int] = Counter()
    drop: list[tuple[int, int]] = []
    rewrite: list[tuple[int, int, Postings]] = []
    for term_id, lo, *packed in await cur.fetchall():
        postings = unpack([packed])
        keep = ~np.isin(postings[0], gone, assume_unique=True)
        if keep.all():
            continue
        removed[int(term_id)] += int((~keep).sum())
        if keep.any():
            rewrite.append((int(term_id), int(lo), _kept(postings, keep)))
        else:
            drop.append((int(term_id), int(lo)))
    if drop:
        await conn.execute(
            f"DELETE FROM {p}blocks b USING unnest(%s::int[], %s::bigint[]) AS d(term_id, lo)"
            f" WHERE b.term_id = d.term_id AND b.lo = d.lo",
            ([d[0] for d in drop], [d[1] for d in drop]),
        )
    if rewrite:
        await _rewrite(conn, p, rewrite)
    if removed:
        await conn.execute(
            f"UPDATE {p}terms t SET df = t.df - u.n FROM unnest(%s::int[], %s::bigint[])"
            f" AS u(id, n) WHERE t.id = u.id",
            (list(removed), list(removed.values())),
        )


async def _rewrite(
    conn: psycopg.AsyncConnection[Any], prefix: str, rewrite: list[tuple[int, int, Postings]]
) -> None:
    """Replace blocks (keyed by their old ``lo``) with fewer postings."""
    packed = [_packed(postings) for _, _, postings in rewrite]
    await conn.execute(
        f"UPDATE {prefix}blocks b SET lo = u.new_lo, hi = u.hi, n = u.n,"
        f" pos = u.pos, tf = u.tf, len = u.len"
        f" FROM unnest(%s::int[], %s::bigint[], %s::bigint[], %s::bigint[], %s::int[],"
        f" %s::bytea[], %s::bytea[], %s::bytea[]) AS u(term_id, lo, new_lo, hi, n, pos, tf, len)"
        f" WHERE b.term_id = u.term_id AND b.lo = u.lo",
        (
            [r[0] for r in rewrite],
            [r[1] for r in rewrite],
            [int(r[2][0][0]) for r in rewrite],
            [int(r[2][0][-1]) for r in rewrite],
            [int(r[2][0].shape[0]) for r in rewrite],
            [k[0] for k in packed],
            [k[1] for k in packed],
            [k[2] for k in packed],
        ),
    )

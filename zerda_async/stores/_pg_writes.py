"""Writes of the PostgreSQL index store: rows prepared in Python, then COPY in one transaction.

Each function takes the transaction's connection; the store's ``add``,
``replace`` and ``remove`` call them between locking the corpus row and
bumping its version, so a killed write leaves the old or the new corpus.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
import psycopg
from numpy.typing import ArrayLike, NDArray
from psycopg.types.json import Jsonb

from ..core.index import unit_rows
from ..core.index.analysis import analyzer_for
from ..core.index.chunks import chunk_doc_id, chunk_metadata, chunk_text, keyword_text
from ._pg_blocks import add_postings, delete_postings

__all__ = [
    "REMOVED_KEPT_VERSIONS",
    "Prepared",
    "bump",
    "check_dim",
    "copy_rows",
    "delete_docs",
    "lock_corpus",
    "log_removed",
    "prepare",
]


@dataclass(frozen=True, slots=True)
class Prepared:
    """Chunks turned into rows outside the transaction (tokenising is the slow part)."""

    doc_ids: list[str]
    texts: list[str]
    metadata: list[Any]
    counts: list[Counter[str]]
    rows: NDArray[np.float64] | None

    @property
    def tokens(self) -> int:
        """Tokens the chunks add to the corpus total (the BM25 length statistics)."""
        return sum(sum(c.values()) for c in self.counts)


def prepare(chunks: Sequence[Any], vectors: ArrayLike | None, analyzer: str) -> Prepared:
    """Validate and tokenise ``chunks``; unit rows of ``vectors`` (a bad chunk names itself)."""
    tokenize = analyzer_for(analyzer).tokenize
    doc_ids, texts, metas, counts = [], [], [], []
    for chunk in chunks:
        doc_id, text = chunk_doc_id(chunk), chunk_text(chunk)
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool):
            raise TypeError(f"chunk doc id {doc_id!r}: a PostgreSQL store needs str or int ids")
        if not isinstance(text, str):
            raise TypeError(f"chunk {doc_id!r}: text is {type(text).__name__}, not str")
        if "\x00" in text:
            raise ValueError(f"chunk {doc_id!r}: text contains NUL, which PostgreSQL rejects")
        doc_ids.append(str(doc_id))
        texts.append(text)
        metas.append(dict(chunk_metadata(chunk)))
        searched = keyword_text(chunk)
        counts.append(Counter(tokenize(searched if isinstance(searched, str) else text)))
    rows = None
    if vectors is not None:
        raw = np.asarray(vectors, dtype=np.float64).reshape(len(doc_ids), -1)
        rows = unit_rows(raw).astype(np.float64, copy=False)
    return Prepared(doc_ids, texts, metas, counts, rows)


async def lock_corpus(
    conn: psycopg.AsyncConnection[Any], prefix: str
) -> tuple[int, int, int, int | None]:
    """(live chunks, total length, next position, dimension), the corpus row locked."""
    cur = await conn.execute(
        f"SELECT n_live, total_length, next_pos, dim FROM {prefix}corpus FOR UPDATE"
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), row[3]


async def delete_docs(
    conn: psycopg.AsyncConnection[Any], prefix: str, ids: list[str], analyzer: str
) -> tuple[list[int], int]:
    """Delete every chunk of ``ids`` with its vector and postings: (positions, their tokens).

    ``analyzer`` is the store's: the deleted texts are tokenised again to find
    the posting blocks that hold them.
    """
    p = prefix
    cur = await conn.execute(
        f"DELETE FROM {p}chunks WHERE doc_id = ANY(%s) RETURNING pos, length, text", (ids,)
    )
    rows = await cur.fetchall()
    positions = [int(r[0]) for r in rows]
    if rows:
        await conn.execute(f"DELETE FROM {p}vectors WHERE pos = ANY(%s)", (positions,))
        terms = await anyio.to_thread.run_sync(_terms_of, [str(r[2]) for r in rows], analyzer)
        await delete_postings(conn, p, positions, terms)
    return positions, sum(int(r[1]) for r in rows)


REMOVED_KEPT_VERSIONS = 1000
"""Versions whose removed positions stay logged: a local copy of the index further behind than
that loads everything again instead of catching up (the log stays bounded)."""


async def log_removed(
    conn: psycopg.AsyncConnection[Any], prefix: str, positions: list[int], version: int
) -> None:
    """Record that ``version`` removed ``positions`` (local copies catch up from it)."""
    if positions:
        await conn.execute(
            f"INSERT INTO {prefix}removed SELECT %s, unnest(%s::bigint[])", (version, positions)
        )
        await conn.execute(
            f"DELETE FROM {prefix}removed WHERE version <= %s", (version - REMOVED_KEPT_VERSIONS,)
        )


def _terms_of(texts: list[str], analyzer: str) -> set[str]:
    tokenize = analyzer_for(analyzer).tokenize
    found: set[str] = set()
    for text in texts:
        found.update(tokenize(text))
    return found


async def copy_rows(
    conn: psycopg.AsyncConnection[Any], prefix: str, prep: Prepared, start: int
) -> None:
    """COPY the chunks (positions ``start ...``), their vectors and their postings."""
    p = prefix
    columns = "pos, doc_id, text, metadata, length, unit"
    async with conn.cursor().copy(f"COPY {p}chunks ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "text", "text", "jsonb", "int4", "bytea"])
        for i, doc_id in enumerate(prep.doc_ids):
            await copy.write_row(
                (
                    start + i,
                    doc_id,
                    prep.texts[i],
                    Jsonb(prep.metadata[i]),
                    sum(prep.counts[i].values()),
                    None if prep.rows is None else prep.rows[i].tobytes(),
                )
            )
    if prep.rows is not None:
        sql = f"COPY {p}vectors (pos, embedding) FROM STDIN (FORMAT BINARY)"
        async with conn.cursor().copy(sql) as copy:
            copy.set_types(["int8", "vector"])
            for i, row in enumerate(prep.rows.astype(np.float32)):
                await copy.write_row((start + i, row))
    await add_postings(conn, p, prep.counts, start)


async def bump(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    step: int,
    n_live: int,
    total: int,
    next_pos: int | None,
    dim: int | None,
) -> int:
    """Write the corpus totals and add ``step`` to the version; returns the version."""
    cur = await conn.execute(
        f"UPDATE {prefix}corpus SET version = version + %s, n_live = %s,"
        " total_length = %s, next_pos = coalesce(%s, next_pos),"
        " dim = CASE WHEN %s::bigint = 0 THEN NULL ELSE coalesce(%s, dim) END"
        " RETURNING version",
        (step, n_live, total, next_pos, n_live, dim),
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


def check_dim(dim: int | None, remaining: int, rows: NDArray[np.float64] | None) -> int | None:
    """The dimension after a write; vectors are all-or-nothing, as in the memory index."""
    if remaining == 0:
        return None if rows is None else int(rows.shape[1])
    has_vectors = dim is not None
    if (rows is None) == has_vectors:
        raise ValueError("vectors must be given exactly when the index store holds vectors")
    if rows is not None and rows.shape[1] != dim:
        raise ValueError(
            f"embedding dimension {rows.shape[1]} does not match the index store ({dim})"
        )
    return dim

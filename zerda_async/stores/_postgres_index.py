"""The PostgreSQL + pgvector index store: same top-k and scores as the in-memory index.

Layout (schema :data:`~._pg_sql.INDEX_SCHEMA`, migrated by the store): one row
per chunk (corpus position, doc id, text, jsonb metadata, token count, the
float64 unit embedding as bytes and the same as a pgvector ``vector``), the
inverted index of :mod:`._pg_keyword` (terms with their document frequencies,
one posting per (term, chunk) with its term frequency and the chunk length),
and one corpus row holding the version and the BM25 totals.  Tokens come from the project's own
tokeniser in Python, so the analyser is exactly the in-memory one.

* **Exact cosine** (default): pgvector scans the float32 copies in SQL and
  keeps every chunk within a proven float32 error margin of the k-th best;
  those few are rescored in Python in float64 and rounded to 12 decimals
  like the in-memory index, then ordered by score and corpus position.
* **HNSW** (opt-in, ``search="hnsw"``): an HNSW index over the vectors
  answers with ``hnsw.ef_search``; its hits are rescored the same way.
* **BM25**: document frequencies and totals are read in the same snapshot
  as the postings (a repeatable-read transaction); idf is computed in Python
  with the in-memory expression, the per-posting weights and their sum in
  SQL from the query terms' postings only, in two phases that end with the
  in-memory float operations in the same order (:mod:`._pg_keyword`).
* **Updates** run in one transaction that also bumps the version, so a
  killed update leaves the old or the new corpus.  Bulk loads use COPY.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import numpy as np
import psycopg
from numpy.typing import ArrayLike, NDArray
from pgvector.psycopg import register_vector_async
from psycopg.types.json import Jsonb

from ..core.index import unit_rows
from ..core.index.analysis import DOCUMENTED, analyzer_for
from ..core.index.chunks import chunk_doc_id, chunk_metadata, chunk_text
from ..errors import ConfigError, StoreUnavailableError
from ._pg_common import PgPool, migrate, valid_prefix
from ._pg_keyword import add_postings, delete_postings
from ._pg_search import PostgresSearches
from ._pg_sql import INDEX_SCHEMA

__all__ = ["PostgresIndexStore"]

SearchMode = Literal["exact", "hnsw"]

_INVERTED_INDEX_STEP = 4
"""The schema step that rewrote the postings as :mod:`._pg_keyword`'s inverted index."""

_VACUUM_SHARE = 0.2
"""A write adding at least this share of the live chunks vacuums the postings after it."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Chunks turned into rows outside the transaction (tokenising is the slow part)."""

    doc_ids: list[str]
    texts: list[str]
    metadata: list[Any]
    counts: list[Counter[str]]
    rows: NDArray[np.float64] | None


def _prepare(chunks: Sequence[Any], vectors: ArrayLike | None, analyzer: str) -> _Prepared:
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
        counts.append(Counter(tokenize(text)))
    rows = None
    if vectors is not None:
        raw = np.asarray(vectors, dtype=np.float64).reshape(len(doc_ids), -1)
        rows = unit_rows(raw).astype(np.float64, copy=False)
    return _Prepared(doc_ids, texts, metas, counts, rows)


class PostgresIndexStore(PostgresSearches):
    """An :class:`~zerda_async.stores.IndexStore` in PostgreSQL with pgvector.

    Create it with :meth:`open` (connects, creates or migrates the schema).
    ``search`` picks exact cosine (default) or ``"hnsw"``; ``ef_search`` is
    the HNSW candidate list size (recall against exact: ``bench/bench_scaleout.py``).
    ``analyzer`` is the keyword text analyser (``retriever.text_analyzer`` of
    the engine's configuration); the first write records it, and a store
    written with another one raises :class:`~zerda_async.errors.ConfigError`.
    """

    name = "index store"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "zerda_",
        search: SearchMode = "exact",
        ef_search: int = 100,
        pool_size: int = 4,
        operation_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        analyzer: str = DOCUMENTED,
    ) -> None:
        analyzer_for(analyzer)  # an unknown name raises ConfigError here
        self.analyzer = analyzer
        if search not in ("exact", "hnsw"):
            raise ValueError(f"search must be 'exact' or 'hnsw', got {search!r}")
        self.prefix = valid_prefix(prefix)
        self.search = search
        if not 1 <= int(ef_search) <= 1000:
            raise ValueError(f"ef_search must be between 1 and 1000 (pgvector), got {ef_search}")
        self.ef_search = int(ef_search)
        self._pg = PgPool(
            url,
            self.name,
            max_size=pool_size,
            operation_timeout=operation_timeout,
            connect_timeout=connect_timeout,
            configure=register_vector_async,
        )

    @classmethod
    async def open(cls, url: str, **options: Any) -> PostgresIndexStore:
        """Connect to ``url`` (any libpq URL or key=value string) and migrate the schema."""
        store = cls(url, **options)
        # The schema (and the vector extension) first: the pool's connections
        # register pgvector's types, which needs the extension to exist.
        found: list[int] = []

        async def upgrade(conn: psycopg.AsyncConnection[Any]) -> None:
            found.append(await migrate(conn, store.prefix, INDEX_SCHEMA, "index"))

        await store._pg.run_once(upgrade)
        await store._pg.open()
        if 0 < found[0] < _INVERTED_INDEX_STEP:
            await store._vacuum()  # the postings were rewritten by the migration
        return store

    @property
    def url(self) -> str:
        """The connection URL given."""
        return self._pg.url

    async def aclose(self) -> None:
        """Close the pool."""
        await self._pg.close()

    # -- reads -------------------------------------------------------------------------

    async def _corpus(self) -> tuple[int, int, int, int | None]:
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT version, n_live, total_length, dim FROM {self.prefix}corpus"
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), row[3]

    async def version(self) -> int:
        """The corpus version."""
        return (await self._corpus())[0]

    async def count(self) -> int:
        """Live chunks."""
        return (await self._corpus())[1]

    async def doc_ids(self) -> list[str]:
        """Each live chunk's doc id in corpus order."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(f"SELECT doc_id FROM {self.prefix}chunks ORDER BY pos")
            return [str(r[0]) for r in await cur.fetchall()]

    # -- writes ------------------------------------------------------------------------

    async def add(self, chunks: Sequence[Any], vectors: ArrayLike | None = None) -> int:
        """Append ``chunks`` in one transaction; returns the new version."""
        return await self._write(list(chunks), vectors, replace=False)

    async def replace(
        self,
        chunks: Sequence[Any],
        vectors: ArrayLike | None = None,
        *,
        also_remove: Sequence[str] = (),
    ) -> int:
        """Remove the chunks of the doc ids in ``chunks`` and append them, in one transaction.

        ``also_remove`` doc ids are removed in the same transaction (a file
        re-indexed into fewer chunks loses the others with the same version).
        """
        return await self._write(list(chunks), vectors, replace=True, extra=also_remove)

    async def remove(self, doc_ids: Sequence[str]) -> int:
        """Remove every chunk of ``doc_ids`` in one transaction."""
        ids = [str(d) for d in doc_ids]
        async with self._pg.connection() as conn, conn.transaction():
            n_live, total, _, _ = await self._lock_corpus(conn)
            gone, gone_length = await self._delete(conn, ids)
            if not gone:
                return await self._bump(conn, 0, n_live, total, None, None)
            return await self._bump(conn, 1, n_live - gone, total - gone_length, None, None)

    async def create_hnsw_index(
        self, m: int = 16, ef_construction: int = 64, *, maintenance_work_mem: str | None = None
    ) -> None:
        """Build the HNSW index over the vectors (their dimension must be known).

        ``maintenance_work_mem`` (e.g. ``"1GB"``) is set for this build only: a
        graph larger than the server's setting is built far more slowly.
        """
        _, _, _, dim = await self._corpus()
        if not dim:
            raise ValueError("the index store holds no vectors yet; add chunks first")
        p = self.prefix
        # One transaction, so the memory setting ends with the build.
        async with self._pg.connection() as conn, conn.transaction():
            if maintenance_work_mem is not None:
                await conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,)
                )
            await conn.execute(f"DROP INDEX IF EXISTS {p}chunks_hnsw")
            await conn.execute(
                f"CREATE INDEX {p}chunks_hnsw ON {p}chunks USING hnsw"
                f" ((embedding::vector({int(dim)})) vector_cosine_ops)"
                f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )

    async def _write(
        self,
        items: list[Any],
        vectors: ArrayLike | None,
        *,
        replace: bool,
        extra: Sequence[str] = (),
    ) -> int:
        if not items:
            return await self.version()
        prepared = await anyio.to_thread.run_sync(_prepare, items, vectors, self.analyzer)
        async with self._pg.connection() as conn, conn.transaction():
            n_live, total, next_pos, dim = await self._lock_corpus(conn)
            await self._claim_analyzer(conn)
            gone, gone_length = 0, 0
            if replace:
                ids = [*prepared.doc_ids, *(str(d) for d in extra)]
                gone, gone_length = await self._delete(conn, list(dict.fromkeys(ids)))
            new_dim = _check_dim(dim, n_live - gone, prepared.rows)
            await self._copy(conn, prepared, next_pos)
            added = sum(sum(c.values()) for c in prepared.counts)
            version = await self._bump(
                conn,
                1,
                n_live - gone + len(items),
                total - gone_length + added,
                next_pos + len(items),
                new_dim,
            )
        if len(items) >= _VACUUM_SHARE * (n_live - gone + len(items)):
            await self._vacuum()
        return version

    async def _vacuum(self) -> None:
        """Mark the new postings all-visible and refresh the planner's statistics.

        Keyword search reads the postings by index-only scans, which fall back
        to the table for pages not yet marked all-visible; after a bulk load
        that would be every page until autovacuum comes by.  The write has
        committed already, so a failure here is left to autovacuum.
        """
        p = self.prefix
        with contextlib.suppress(StoreUnavailableError, psycopg.Error):
            async with self._pg.connection() as conn:
                await conn.execute(f"VACUUM (ANALYZE) {p}postings, {p}terms")
                await conn.execute(f"ANALYZE {p}chunks")

    async def _lock_corpus(
        self, conn: psycopg.AsyncConnection[Any]
    ) -> tuple[int, int, int, int | None]:
        cur = await conn.execute(
            f"SELECT n_live, total_length, next_pos, dim FROM {self.prefix}corpus FOR UPDATE"
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), row[3]

    async def _claim_analyzer(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Record this store's analyser on the first write; refuse another one."""
        cur = await conn.execute(
            f"UPDATE {self.prefix}corpus SET analyzer = coalesce(analyzer, %s) RETURNING analyzer",
            (self.analyzer,),
        )
        row = await cur.fetchone()
        assert row is not None
        _check_analyzer(str(row[0]), self.analyzer)

    async def setting(self, key: str) -> Any:
        """The JSON value recorded under ``key`` (None when absent)."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT value FROM {self.prefix}settings WHERE key = %s", (key,)
            )
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def set_setting(self, key: str, value: Any) -> None:
        """Record the JSON ``value`` under ``key`` (replacing an older one)."""
        async with self._pg.connection() as conn:
            await conn.execute(
                f"INSERT INTO {self.prefix}settings VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, Jsonb(value)),
            )

    async def check_analyzer(self) -> None:
        """Raise :class:`ConfigError` when the store was written with another analyser."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(f"SELECT analyzer FROM {self.prefix}corpus")
            row = await cur.fetchone()
        if row is not None and row[0] is not None:
            _check_analyzer(str(row[0]), self.analyzer)

    async def _delete(self, conn: psycopg.AsyncConnection[Any], ids: list[str]) -> tuple[int, int]:
        p = self.prefix
        cur = await conn.execute(
            f"DELETE FROM {p}chunks WHERE doc_id = ANY(%s) RETURNING pos, length", (ids,)
        )
        rows = await cur.fetchall()
        if rows:
            await delete_postings(conn, p, [int(r[0]) for r in rows])
        return len(rows), sum(int(r[1]) for r in rows)

    async def _copy(self, conn: psycopg.AsyncConnection[Any], prep: _Prepared, start: int) -> None:
        p = self.prefix
        cur = conn.cursor()
        columns = "pos, doc_id, text, metadata, length, unit, embedding"
        async with cur.copy(f"COPY {p}chunks ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "text", "jsonb", "int4", "bytea", "vector"])
            for i, doc_id in enumerate(prep.doc_ids):
                row = None if prep.rows is None else prep.rows[i]
                await copy.write_row(
                    (
                        start + i,
                        doc_id,
                        prep.texts[i],
                        Jsonb(prep.metadata[i]),
                        sum(prep.counts[i].values()),
                        None if row is None else row.tobytes(),
                        None if row is None else row.astype(np.float32),
                    )
                )
        await add_postings(conn, p, prep.counts, start)

    async def _bump(
        self,
        conn: psycopg.AsyncConnection[Any],
        step: int,
        n_live: int,
        total: int,
        next_pos: int | None,
        dim: int | None,
    ) -> int:
        cur = await conn.execute(
            f"UPDATE {self.prefix}corpus SET version = version + %s, n_live = %s,"
            " total_length = %s, next_pos = coalesce(%s, next_pos),"
            " dim = CASE WHEN %s::bigint = 0 THEN NULL ELSE coalesce(%s, dim) END"
            " RETURNING version",
            (step, n_live, total, next_pos, n_live, dim),
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    # -- searches ----------------------------------------------------------------------


def _check_analyzer(stored: str, mine: str) -> None:
    if stored != mine:
        raise ConfigError(
            f"the index store was tokenised with text analyser {stored!r}, not {mine!r}:"
            " open it with the retriever.text_analyzer it was written with"
        )


def _check_dim(dim: int | None, remaining: int, rows: NDArray[np.float64] | None) -> int | None:
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

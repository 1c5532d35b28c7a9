"""The PostgreSQL + pgvector index store: same top-k and scores as the in-memory index.

Layout (schema :data:`~._pg_sql.INDEX_SCHEMA`, migrated by the store): one row
per chunk (corpus position, doc id, text, jsonb metadata, token count, the
float64 unit embedding as bytes), the same embedding as a float32 pgvector
``vector`` in a narrow table of its own (what an exact scan reads), the
inverted index of :mod:`._pg_blocks` (terms with their document frequencies,
each term's postings packed in blocks of up to 2,048 a row), and one corpus
row holding the version and the BM25 totals.  Tokens come from the project's own
tokeniser in Python, so the analyser is exactly the in-memory one.

* **Exact cosine** (default): pgvector scans the float32 copies in SQL and
  keeps every chunk within a proven float32 error margin of the k-th best;
  those few are rescored in Python in float64 and rounded to 12 decimals
  like the in-memory index, then ordered by score and corpus position.
* **Local** (opt-in, ``search="local"``): every search in this process, over
  a copy of the whole index kept at the corpus version (:mod:`._pg_local_copy`):
  the in-memory engine's code and results, PostgreSQL read only to catch up.
* **HNSW** (opt-in, ``search="hnsw"``): an HNSW index over the vectors
  answers with ``hnsw.ef_search``; its hits are rescored the same way.
* **BM25**: document frequencies and totals are read in the same snapshot
  as the query terms' posting blocks (a repeatable-read transaction), and
  the replica scores them with the in-memory index's own numpy code
  (:mod:`._pg_keyword`), so PostgreSQL only reads a few rows per term.
* **Updates** (:mod:`._pg_writes`) run in one transaction that also bumps
  the version, so a killed update leaves the old or the new corpus.  Bulk
  loads use COPY.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import psycopg
from numpy.typing import ArrayLike
from pgvector.psycopg import register_vector_async

from ..core.index import WEIGHT_CACHE_POSTINGS
from ..core.index.analysis import DOCUMENTED, analyzer_for
from ._pg_common import PgPool, migrate, valid_prefix
from ._pg_local_copy import LocalCopy
from ._pg_maintenance import PostgresMaintenance, hnsw_options
from ._pg_search import PostgresSearches
from ._pg_sql import INDEX_SCHEMA
from ._pg_writes import (
    bump,
    check_dim,
    copy_rows,
    delete_docs,
    lock_corpus,
    log_removed,
    prepare,
)
from ._protocols import SearchMode
from ._version import VERSION_POLL_SECONDS

__all__ = ["PostgresIndexStore"]

_VECTORS_STEP = 5
"""The schema step that moved the vectors into a table of their own."""

_BLOCKS_STEP = 6
"""The schema step that packed the postings in blocks (:mod:`._pg_blocks`)."""

_VACUUM_SHARE = 0.2
"""A write adding at least this share of the live chunks vacuums the tables after it."""


class PostgresIndexStore(PostgresSearches, PostgresMaintenance):
    """An :class:`~zerda_async.stores.IndexStore` in PostgreSQL with pgvector.

    Create it with :meth:`open` (connects, creates or migrates the schema).
    ``search`` picks exact cosine in SQL (default), ``"hnsw"``, or ``"local"``:
    every search (vector, BM25, metadata) in this process over a copy of the
    whole index, which checks the corpus version at most every ``local_poll``
    seconds and catches up (:mod:`._pg_local_copy`); ``ef_search`` is the HNSW
    candidate list size (recall against exact: ``bench/bench_scaleout.py``).
    ``analyzer`` is the keyword text analyser (``retriever.text_analyzer`` of
    the engine's configuration); the first write records it, and a store
    written with another one raises :class:`~zerda_async.errors.ConfigError`.
    ``search_workers`` are PostgreSQL's parallel query workers per search (0:
    each search on one core, which serves concurrent requests best).
    ``weight_cache_postings`` bounds the BM25 weights this process keeps per
    corpus version (16 bytes a posting; 0 keeps none).
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
        search_workers: int = 0,
        weight_cache_postings: int = WEIGHT_CACHE_POSTINGS,
        local_poll: float = VERSION_POLL_SECONDS,
    ) -> None:
        analyzer_for(analyzer)  # an unknown name raises ConfigError here
        self.analyzer = analyzer
        if search not in ("exact", "hnsw", "local"):
            raise ValueError(f"search must be 'exact', 'hnsw' or 'local', got {search!r}")
        self.prefix = valid_prefix(prefix)
        self.search = search
        self._local = LocalCopy(self.prefix, analyzer, local_poll) if search == "local" else None
        self._placements = {}
        if not 1 <= int(ef_search) <= 1000:
            raise ValueError(f"ef_search must be between 1 and 1000 (pgvector), got {ef_search}")
        self.ef_search = int(ef_search)
        if search_workers < 0:
            raise ValueError(f"search_workers must be 0 or more, got {search_workers}")
        self.search_workers = int(search_workers)
        if weight_cache_postings < 0:
            raise ValueError(
                f"weight_cache_postings must be 0 or more, got {weight_cache_postings}"
            )
        self.weight_cache_postings = int(weight_cache_postings)
        self._pg = PgPool(
            url,
            self.name,
            max_size=pool_size,
            operation_timeout=operation_timeout,
            connect_timeout=connect_timeout,
            configure=self._configure,
        )

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Each new connection: pgvector's types, and the HNSW candidate list for the session."""
        await register_vector_async(conn)
        # Parallel query workers cost a start-up each and contend with the other
        # searches: measured at 100,000 chunks on 2 cores, a request's two searches
        # at once took 14.3 ms without them and 16.0 ms with two, and 8 requests in
        # flight ran at 99 against 71 requests/s.
        await conn.execute(f"SET max_parallel_workers_per_gather = {self.search_workers}")
        if self.search == "hnsw":
            await conn.execute(f"SET hnsw.ef_search = {self.ef_search}")

    @classmethod
    async def open(cls, url: str, **options: Any) -> PostgresIndexStore:
        """Connect to ``url`` (any libpq URL or key=value string) and migrate the schema."""
        store = cls(url, **options)
        # The schema (and the vector extension) first: the pool's connections
        # register pgvector's types, which needs the extension to exist.
        found: list[int] = []
        hnsw: list[dict[str, int]] = []

        async def upgrade(conn: psycopg.AsyncConnection[Any]) -> None:
            hnsw.extend(await hnsw_options(conn, f"{store.prefix}chunks_hnsw"))
            found.append(await migrate(conn, store.prefix, INDEX_SCHEMA, "index"))

        await store._pg.run_once(upgrade)
        await store._pg.open()
        if 0 < found[0] < _BLOCKS_STEP:
            await store._vacuum()  # the migration rewrote tables
        if 0 < found[0] < _VECTORS_STEP and hnsw:
            # That migration dropped the HNSW index with the old vector column.
            await store.create_hnsw_index(hnsw[0]["m"], hnsw[0]["ef_construction"])
        if store._local is not None:  # load the copy now, not on the first request
            await store._local.current(store._pg)
        return store

    @property
    def url(self) -> str:
        """The connection URL given."""
        return self._pg.url

    async def aclose(self) -> None:
        """Close the pool."""
        await self._pg.close()

    # -- reads -------------------------------------------------------------------------

    async def version(self) -> int:
        """The corpus version (``search="local"``: the copy's, as of its last check)."""
        if self._local is not None:
            return (await self._local.current(self._pg)).version
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
        try:
            return await self._write(list(chunks), vectors, replace=False)
        finally:
            self._wrote()

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
        try:
            return await self._write(list(chunks), vectors, replace=True, extra=also_remove)
        finally:
            self._wrote()

    async def remove(self, doc_ids: Sequence[str]) -> int:
        """Remove every chunk of ``doc_ids`` in one transaction."""
        try:
            return await self._remove([str(d) for d in doc_ids])
        finally:
            self._wrote()

    def _wrote(self) -> None:
        """After a write (even one that failed: its commit may have landed), for read-your-writes:
        this process's copy (``search="local"``) checks the version at its next search."""
        if self._local is not None:
            self._local.invalidate()

    async def _remove(self, ids: list[str]) -> int:
        p = self.prefix
        async with self._pg.connection(self._bulk_timeout(len(ids))) as conn, conn.transaction():
            n_live, total, _, _ = await lock_corpus(conn, p)
            await self._claim_analyzer(conn, claim=False)  # deletes tokenise the texts again
            gone, gone_length = await delete_docs(conn, p, ids, self.analyzer)
            if not gone:
                return await bump(conn, p, 0, n_live, total, None, None)
            version = await bump(conn, p, 1, n_live - len(gone), total - gone_length, None, None)
            await log_removed(conn, p, gone, version)
            return version

    @property
    def local_chunks(self) -> int | None:
        """Live chunks held in this process by ``search="local"`` (else None)."""
        return None if self._local is None else self._local.chunks

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
        prepared = await anyio.to_thread.run_sync(prepare, items, vectors, self.analyzer)
        p = self.prefix
        timeout = self._bulk_timeout(len(items))
        async with self._pg.connection(timeout) as conn, conn.transaction():
            n_live, total, next_pos, dim = await lock_corpus(conn, p)
            await self._claim_analyzer(conn)
            gone: list[int] = []
            gone_length = 0
            if replace:
                ids = list(dict.fromkeys([*prepared.doc_ids, *(str(d) for d in extra)]))
                gone, gone_length = await delete_docs(conn, p, ids, self.analyzer)
            live = n_live - len(gone) + len(items)
            new_dim = check_dim(dim, n_live - len(gone), prepared.rows)
            await copy_rows(conn, p, prepared, next_pos)
            version = await bump(
                conn,
                p,
                1,
                live,
                total - gone_length + prepared.tokens,
                next_pos + len(items),
                new_dim,
            )
            await log_removed(conn, p, gone, version)
        if len(items) >= _VACUUM_SHARE * live:
            await self._vacuum(live)
        return version

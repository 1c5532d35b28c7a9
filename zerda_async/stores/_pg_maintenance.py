"""The PostgreSQL index store's upkeep: the corpus row, HNSW builds, vacuums, analyser, settings.

A base class of :class:`~._postgres_index.PostgresIndexStore` (which owns the
pool, the schema and the writes; :mod:`._pg_search` holds its searches): what
keeps the tables fit to search and refuses a store written with another text
analyser.
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..errors import ConfigError, StoreUnavailableError
from ._pg_common import PgPool

__all__ = ["PostgresMaintenance", "hnsw_options"]

_BULK_SECONDS_PER_CHUNK = 0.005
"""Time a write or an HNSW build may take per chunk beyond the operation timeout: a
100,000-chunk COPY took 35 s and its HNSW build 50 s on 2 cores (bench_scaleout)."""


class PostgresMaintenance:
    """The corpus row, the HNSW index, vacuums, the analyser check and the settings table."""

    prefix: str
    analyzer: str
    _pg: PgPool

    async def _corpus(self) -> tuple[int, int, int, int | None]:
        """The corpus row: version, live chunks, total token length, vector dimension."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT version, n_live, total_length, dim FROM {self.prefix}corpus"
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), row[3]

    async def has_hnsw_index(self) -> bool:
        """True once :meth:`create_hnsw_index` has built the index (``search="hnsw"`` uses it)."""
        async with self._pg.connection() as conn:
            return bool(await hnsw_options(conn, f"{self.prefix}vectors_hnsw"))

    async def create_hnsw_index(
        self, m: int = 16, ef_construction: int = 64, *, maintenance_work_mem: str | None = None
    ) -> None:
        """Build the HNSW index over the vectors (their dimension must be known).

        ``maintenance_work_mem`` (e.g. ``"1GB"``) is set for this build only: a
        graph larger than the server's setting is built far more slowly.
        """
        _, n_live, _, dim = await self._corpus()
        if not dim:
            raise ValueError("the index store holds no vectors yet; add chunks first")
        p = self.prefix
        # One transaction, so the memory setting ends with the build.
        async with self._pg.connection(self._bulk_timeout(n_live)) as conn, conn.transaction():
            if maintenance_work_mem is not None:
                await conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,)
                )
            await conn.execute(f"DROP INDEX IF EXISTS {p}vectors_hnsw")
            await conn.execute(
                f"CREATE INDEX {p}vectors_hnsw ON {p}vectors USING hnsw"
                f" ((embedding::vector({int(dim)})) vector_cosine_ops)"
                f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )
        await self._vacuum(n_live)  # fresh statistics, so the planner costs the new index

    def _bulk_timeout(self, chunks: int) -> float:
        """The time a write of (or an HNSW build over) ``chunks`` chunks may take."""
        return self._pg.operation_timeout + _BULK_SECONDS_PER_CHUNK * chunks

    async def _vacuum(self, chunks: int | None = None) -> None:
        """Refresh the planner's statistics and the visibility map after a large write.

        ``chunks`` (the live count, read when not given) sizes the time allowed.
        Without fresh statistics the planner may cost a bulk-loaded table as
        empty.  The write has committed already, so a failure here is left to
        autovacuum.
        """
        p = self.prefix
        with contextlib.suppress(StoreUnavailableError, psycopg.Error):
            if chunks is None:
                chunks = (await self._corpus())[1]
            async with self._pg.connection(self._bulk_timeout(chunks)) as conn:
                await conn.execute(f"VACUUM (ANALYZE) {p}blocks, {p}terms, {p}vectors")
                await conn.execute(f"ANALYZE {p}chunks")

    async def _claim_analyzer(self, conn: psycopg.AsyncConnection[Any], claim: bool = True) -> None:
        """Refuse a store written with another analyser; record ours first if ``claim``."""
        if claim:
            cur = await conn.execute(
                f"UPDATE {self.prefix}corpus SET analyzer = coalesce(analyzer, %s)"
                " RETURNING analyzer",
                (self.analyzer,),
            )
        else:
            cur = await conn.execute(f"SELECT analyzer FROM {self.prefix}corpus")
        row = await cur.fetchone()
        if row is not None and row[0] is not None:
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


def _check_analyzer(stored: str, mine: str) -> None:
    if stored != mine:
        raise ConfigError(
            f"the index store was tokenised with text analyser {stored!r}, not {mine!r}:"
            " open it with the retriever.text_analyzer it was written with"
        )


async def hnsw_options(conn: psycopg.AsyncConnection[Any], index: str) -> list[dict[str, int]]:
    """The ``m`` and ``ef_construction`` of HNSW index ``index`` (empty when there is none)."""
    cur = await conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (index,))
    row = await cur.fetchone()
    if row is None:
        return []
    options = dict(str(o).split("=", 1) for o in row[0] or [])
    return [
        {"m": int(options.get("m", 16)), "ef_construction": int(options.get("ef_construction", 64))}
    ]

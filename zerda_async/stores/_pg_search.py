"""The PostgreSQL index store's searches: exact or HNSW cosine, BM25, metadata, or local.

A base class of :class:`~._postgres_index.PostgresIndexStore` (which owns the
pool, the schema and the writes); the search rules are in that module's
docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, TypeVarTuple, Unpack

import anyio
import numpy as np
import psycopg
from numpy.typing import ArrayLike, NDArray
from psycopg.types.json import Jsonb

from ..core.index import COSINE_DECIMALS, bm25_idf
from ..core.index.analysis import analyzer_for
from ..core.retrieval import Hit, IndexSearches, QueryWeights
from ..runtime import OFFLOAD_MIN_CORPUS, OffloadPolicy, run_placed
from ._filters import Filters, parse_filters
from ._pg_common import PgPool
from ._pg_keyword import WeightCache, keyword_rows
from ._pg_local_copy import LocalCopy
from ._pg_sql import compile_filters
from ._protocols import StoredChunk

__all__ = ["PostgresSearches"]

_Ts = TypeVarTuple("_Ts")
_R = TypeVar("_R")

_CPU_THREADS = 4
"""Searches of one store scoring in worker threads at once (numpy releases the GIL)."""


class PostgresSearches:
    """Top-k searches over the store's tables (same scores and ties as in memory)."""

    name: str
    prefix: str
    search: str
    ef_search: int
    analyzer: str
    weight_cache_postings: int
    _pg: PgPool
    _local: LocalCopy | None
    _cpu_limiter: anyio.CapacityLimiter | None = None
    _weights: WeightCache | None = None
    _placements: dict[str, OffloadPolicy]

    def _cpu(self) -> anyio.CapacityLimiter:
        """The worker threads that score this store's hits (made on first use)."""
        if self._cpu_limiter is None:
            self._cpu_limiter = anyio.CapacityLimiter(_CPU_THREADS)
        return self._cpu_limiter

    async def _in_copy(
        self,
        kind: str,
        search: Callable[[IndexSearches, Unpack[_Ts]], _R],
        *args: *_Ts,
    ) -> _R:
        """``search(searches, *args)`` over the local copy as it is now, inline or in a
        worker thread by its cost.

        The in-memory engine's rule (:class:`~zerda_async.runtime.OffloadPolicy`):
        a search that costs less than two GIL switch intervals runs on the loop.
        Measured with two replicas on 2 cores at 100,000 chunks, searches in
        threads let one replica spread over both cores (133 requests/s), leaving
        a second one little (227, 1.70x); inline, 158 and 294 (1.87x), as over a
        saved directory.  Each kind of search keeps its own measurements.
        """
        assert self._local is not None
        copy = await self._local.current(self._pg)
        policy = self._placements.get(kind)
        if policy is None:
            policy = self._placements[kind] = OffloadPolicy(None, OFFLOAD_MIN_CORPUS)
        size = copy.index.n_positions
        return await run_placed(policy, size, search, copy.searches, *args, limiter=self._cpu())

    async def vector_search(
        self, query_vector: ArrayLike, k: int, filters: Filters | None = None
    ) -> list[Hit]:
        """Top ``k`` by cosine: exact in SQL, by ``"hnsw"``, or over the ``"local"`` copy."""
        query = np.asarray(query_vector, dtype=np.float64).flatten()
        conditions = parse_filters(filters)  # a malformed filter fails first, whatever k is
        if k <= 0:
            return []
        if self._local is not None:
            return await self._in_copy("vector", IndexSearches.vector, query, k, conditions)
        norm = float(np.linalg.norm(query))
        p = self.prefix
        where, params = compile_filters(conditions, "metadata")
        async with self._pg.connection() as conn:
            if norm == 0:
                # Every cosine is 0: the first k chunks in corpus order, like the memory index.
                cur = await conn.execute(
                    f"SELECT pos, doc_id, text, metadata FROM {p}chunks"
                    f" WHERE unit IS NOT NULL AND {where} ORDER BY pos LIMIT %(k)s",
                    {**params, "k": k},
                )
                return [_hit(r, 0.0) for r in await cur.fetchall()]
            unit = query / norm
            params.update(q=unit.astype(np.float32), k=k)
            if self.search == "hnsw":
                rows = await self._hnsw_rows(conn, where, params, unit.shape[0])
            else:
                rows = await _exact_rows(conn, p, where, params, k, unit.shape[0])
        return _rescored(rows, unit, k)

    async def _hnsw_rows(
        self, conn: psycopg.AsyncConnection[Any], where: str, params: dict[str, Any], dim: int
    ) -> list[Any]:
        # hnsw.ef_search is set for the session when the pool opens the connection.
        p = self.prefix
        chunks = "" if where == "TRUE" else f" JOIN {p}chunks f USING (pos) WHERE {where}"
        sql = (
            f"SELECT c.pos, c.doc_id, c.text, c.metadata, c.unit FROM"
            f" (SELECT v.pos FROM {p}vectors v{chunks}"
            f" ORDER BY v.embedding::vector({dim}) <=> %(q)s::vector({dim})"
            f" LIMIT %(k)s) s JOIN {p}chunks c USING (pos)"
        )
        if where == "TRUE":
            cur = await conn.execute(sql, params)
            return await cur.fetchall()
        async with conn.transaction():
            # A filter drops candidates after the graph search: keep scanning until k pass.
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def metadata_search(
        self, pairs: Mapping[str, Any], k: int, filters: Filters | None = None
    ) -> list[Hit]:
        """Chunks whose metadata equals at least one pair, best first, ties by position.

        The score is the fraction of pairs matched, as the in-memory metadata
        retriever computes it; equality is JSON equality (``1 == 1.0``, but
        ``true`` is not ``1`` as it is in Python), except over a local copy,
        which matches as the in-memory retriever does (Python's equality).
        ``filters`` restrict the candidates before the cut.
        """
        conditions = parse_filters(filters)
        items = list(pairs.items())
        if not items or k <= 0:
            return []
        if self._local is not None:
            # The in-memory metadata retriever's equality here (Python's: True == 1).
            return await self._in_copy("metadata", IndexSearches.metadata, pairs, k, conditions)
        where, params = compile_filters(conditions, "metadata")
        params["k"] = k
        tests = []
        for i, (key, value) in enumerate(items):
            params[f"mk{i}"], params[f"mv{i}"] = str(key), Jsonb(value)
            tests.append(f"(CASE WHEN metadata -> %(mk{i})s = %(mv{i})s::jsonb THEN 1 ELSE 0 END)")
        p = self.prefix
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT pos, doc_id, text, metadata, m FROM (SELECT pos, doc_id, text, metadata,"
                f" {' + '.join(tests)} AS m FROM {p}chunks WHERE {where}) s WHERE m > 0"
                f" ORDER BY m DESC, pos LIMIT %(k)s",
                params,
            )
            rows = await cur.fetchall()
        return [_hit(r[:4], int(r[4]) / len(items)) for r in rows]

    async def query_weights(self, query: str) -> QueryWeights:
        """``query``'s distinct analysed terms with their BM25 idf over the live chunks.

        What measures the query coverage of chunks no keyword search found.
        """
        if self._local is not None:
            return await self._in_copy("query weights", IndexSearches.query_weights, query)
        terms = list(dict.fromkeys(analyzer_for(self.analyzer).tokenize(query)))
        if not terms:
            return []
        p = self.prefix
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT c.n_live, t.term, t.df FROM {p}corpus c"
                f" LEFT JOIN {p}terms t ON t.term = ANY(%s) AND t.df > 0",
                (terms,),
            )
            rows = await cur.fetchall()
        n_live = int(rows[0][0])
        df = {str(r[1]): int(r[2]) for r in rows if r[1] is not None}
        return [(term, bm25_idf(n_live, df.get(term, 0))) for term in terms]

    async def keyword_search(self, query: str, k: int, filters: Filters | None = None) -> list[Hit]:
        """Top ``k`` by BM25 with the in-memory formula, ties by corpus position."""
        conditions = parse_filters(filters)  # a malformed filter fails first, whatever k is
        if k <= 0:
            return []
        if self._local is not None:
            return await self._in_copy("keyword", IndexSearches.keyword, query, k, conditions)
        terms = list(dict.fromkeys(analyzer_for(self.analyzer).tokenize(query)))
        where, params = compile_filters(conditions, "c.metadata")
        if not terms:
            return []
        async with self._pg.connection() as conn:
            if self._weights is None:
                self._weights = WeightCache(self.weight_cache_postings)
            rows = await keyword_rows(
                conn, self.prefix, terms, k, where, params, self._cpu(), self._weights
            )
        return [_hit(r[:4], float(r[4]), float(r[5])) for r in rows]


# The exact scan returns this many chunks beyond k, so the margin rarely needs more.
_SLACK = 16


async def _exact_rows(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    where: str,
    params: dict[str, Any],
    k: int,
    dim: int,
) -> list[Any]:
    """Every chunk whose float32 cosine is within the error margin of the k-th best.

    One scan of the narrow vectors table keeps the best ``k + _SLACK`` by the
    float32 cosine distance (a bounded sort on pgvector's operator alone);
    the chunks within :func:`_margin` of the k-th are the candidates that the
    float64 rescoring orders.  When the slack is all within the margin
    (near-ties), or the cut reaches cosines near 0 — where a zero vector,
    whose distance is NaN and sorts last, scores 0 in the memory index — the
    scan runs again with the exact ordering of every chunk.
    """
    margin = _margin(dim)
    distance = "v.embedding <=> %(q)s"
    rows = await _scan(conn, prefix, where, params, k + _SLACK, distance)
    scored = [(*r[:5], 1.0 - float(r[5])) for r in rows]  # NaN stays NaN
    if not scored:
        return []
    floor = scored[min(k, len(scored)) - 1][5] - margin
    last = scored[-1][5]
    zero_vectors = any(math.isnan(r[5]) for r in scored)
    if not zero_vectors and (len(scored) < k + _SLACK or margin < last < floor):
        return [r[:5] for r in scored if r[5] >= floor]
    # The ordering that matches the memory index everywhere: NaN (a zero vector) as 0.
    approx = f"1 - coalesce(nullif({distance}, 'NaN'), 1)"
    rows = await _scan(conn, prefix, where, params, None, f"{approx}", descending=True)
    if not rows:
        return []
    floor = float(rows[min(k, len(rows)) - 1][5]) - margin
    return [r[:5] for r in rows if float(r[5]) >= floor]


async def _scan(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    where: str,
    params: dict[str, Any],
    limit: int | None,
    key: str,
    *,
    descending: bool = False,
) -> list[Any]:
    """Chunk rows with their sort ``key`` (computed once per vector), best first."""
    p = prefix
    chunks = "" if where == "TRUE" else f" JOIN {p}chunks f USING (pos) WHERE {where}"
    cut = "" if limit is None else f" LIMIT {int(limit)}"
    order = "o DESC" if descending else "o"
    cur = await conn.execute(
        f"SELECT c.pos, c.doc_id, c.text, c.metadata, c.unit, s.o FROM"
        f" (SELECT v.pos, {key} AS o FROM {p}vectors v{chunks} ORDER BY {order}{cut})"
        f" s JOIN {p}chunks c USING (pos) ORDER BY s.{order}",
        params,
    )
    return list(await cur.fetchall())


def _margin(dim: int) -> float:
    # float32 rounding of both unit vectors plus float32 accumulation over
    # ``dim`` terms bounds |cos32 - cos64| well below this (Cauchy-Schwarz).
    return 4.0 * (dim + 2) * 2.0**-24 + 1e-12


def _hit(row: Sequence[Any], score: float, coverage: float = -1.0) -> Hit:
    pos, doc_id, text, metadata = row[0], row[1], row[2], row[3]
    chunk = StoredChunk(str(doc_id), text, metadata)
    return Hit(position=int(pos), chunk=chunk, score=score, coverage=coverage)


def _rescored(rows: Sequence[Any], unit: NDArray[np.float64], k: int) -> list[Hit]:
    """Candidates scored in float64 and rounded as the memory index does, best k first."""
    if not rows:
        return []
    matrix = np.stack([np.frombuffer(r[4], dtype=np.float64) for r in rows])
    sims = np.round(matrix @ unit, COSINE_DECIMALS)
    positions = [int(r[0]) for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (-sims[i], positions[i]))[:k]
    return [_hit(rows[i], float(sims[i])) for i in order]

"""Embedders as the async engine sees them: sync or coroutine, one text or a batch.

An :class:`Embedder` wraps what the caller passed to ``index()``:

* ``embed_fn`` — ``f(text) -> vector``, a plain function or a coroutine function;
* ``batch_embed_fn`` — ``f(texts) -> matrix`` (one row per text), plain or coroutine.

Coroutine embedders are always awaited on the event loop (they are network
calls), never in a thread.  Plain functions run in a worker thread, but for
the query calls of an embedder given a ``placement``
(:class:`~zerda_async.runtime.CallPolicy`, the async engine's): those run on
the loop once they have measured cheaper than the thread hop they save.

Every vector is checked: something that is not a numeric array, ``None``, NaN
or infinity, the wrong number of rows and (for queries, see
:func:`check_query_vector`) the wrong dimension raise
:class:`~zerda_async.errors.EmbeddingError` instead of flowing on into the
scores.  The sync facade keeps the documented behaviour (numpy propagates).
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
from numpy.typing import NDArray

from zerda_async.core.script_centring import ScriptDirection, direction_of
from zerda_async.core.vector_floor import Floor, floor_of
from zerda_async.embedders._protocol import query_forms
from zerda_async.errors import EmbeddingError
from zerda_async.runtime import CallPolicy, run_in_thread, timed_call

__all__ = [
    "QUERY_CACHE_SIZE",
    "Embedder",
    "check_embeddings",
    "check_query_vector",
    "is_coroutine_function",
]

QUERY_CACHE_SIZE = 1024
"""Distinct query texts whose vectors an :class:`Embedder` keeps (least recently used out)."""


def is_coroutine_function(fn: Any) -> bool:
    """True for ``async def`` functions and objects whose ``__call__`` is one."""
    if fn is None:
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


def _numeric(value: Any, what: str) -> NDArray[np.float64]:
    """``value`` as a float64 array, or :class:`EmbeddingError` saying what was wrong."""
    if value is None:
        raise EmbeddingError(f"{what} returned None instead of a vector")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(
            f"{what} returned {type(value).__name__}, not a numeric array: {exc}"
        ) from exc


def check_embeddings(rows: NDArray[np.floating[Any]], first: int = 0) -> None:
    """Raise :class:`EmbeddingError` naming the first text whose vector has NaN or infinity.

    ``first`` is the index of ``rows[0]`` among the texts being embedded.
    """
    finite = np.isfinite(rows)
    if finite.all():
        return
    bad = first + int(np.flatnonzero(~finite.reshape(rows.shape[0], -1).all(axis=1))[0])
    raise EmbeddingError(f"embedder returned NaN or infinity in the vector of text {bad}")


def check_query_vector(vector: Any, dim: int) -> NDArray[np.float64]:
    """The query vector as a flat float64 array of ``dim`` finite numbers, else EmbeddingError.

    The async engine's vector retriever applies it to every query vector
    before the cosine scan (``dim`` is the index's dimension).
    """
    flat = _numeric(vector, "the query embedder").flatten()
    if flat.shape[0] != dim:
        raise EmbeddingError(
            f"the query embedding has {flat.shape[0]} dimensions but the index holds "
            f"{dim}-dimensional vectors (embed queries with the embedder of the index)"
        )
    if not np.isfinite(flat).all():
        raise EmbeddingError("the query embedding contains NaN or infinity")
    return flat


def _as_matrix(value: Any, expected_rows: int) -> NDArray[np.float64]:
    matrix = _numeric(value, "the batch embedder")
    if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
        raise EmbeddingError(
            f"batch embedder returned an array of shape {matrix.shape} "
            f"for {expected_rows} texts (expected {expected_rows} rows)"
        )
    check_embeddings(matrix)
    return matrix


class Embedder:
    """Embeds texts with the caller's functions, batching when a batch form exists."""

    def __init__(
        self,
        embed_fn: Callable[[Any], Any] | None = None,
        batch_embed_fn: Callable[[list[Any]], Any] | None = None,
        *,
        limiter: anyio.CapacityLimiter | None = None,
        index_batch_size: int = 256,
        concurrency: int = 16,
        query_cache_size: int = QUERY_CACHE_SIZE,
        find_query_forms: bool = True,
        placement: CallPolicy | None = None,
    ) -> None:
        if embed_fn is None and batch_embed_fn is None:
            raise ValueError("an Embedder needs embed_fn or batch_embed_fn")
        if query_cache_size < 0:
            raise ValueError(f"query_cache_size must be >= 0, got {query_cache_size}")
        self.embed_fn = embed_fn
        self.batch_embed_fn = batch_embed_fn
        self.single_is_async = is_coroutine_function(embed_fn)
        self.batch_is_async = is_coroutine_function(batch_embed_fn)
        self._limiter = limiter
        # Where the plain query calls run (None: always in a worker thread).
        self.placement = placement
        self._index_batch_size = index_batch_size
        self._concurrency = concurrency
        self.calls = 0
        # An asymmetric embedder (E5: "query: " / "passage: ") embeds queries
        # with forms of its own; embed_fn / batch_embed_fn embed passages.
        forms = query_forms(embed_fn, batch_embed_fn) if find_query_forms else None
        # The embedder's calibration of the relevance floor, if it has one.
        self.vector_floor: Floor | None = floor_of(embed_fn, batch_embed_fn)
        # Its script direction (core.script_centring), taken out of query vectors
        # when retriever.script_centring is on.
        self.script_direction: ScriptDirection | None = direction_of(embed_fn, batch_embed_fn)
        self._queries: Embedder | None = None
        if forms is not None:
            self._queries = Embedder(
                forms[0],
                forms[1] if batch_embed_fn is not None else None,
                limiter=limiter,
                query_cache_size=0,
                find_query_forms=False,
            )
        self._cache_size = query_cache_size
        self._cache: OrderedDict[str, NDArray[np.float64]] = OrderedDict()
        self.query_cache_hits = 0

    @property
    def asymmetric(self) -> bool:
        """True when queries are embedded with forms of their own (see ``query_forms``)."""
        return self._queries is not None

    @property
    def query_fn(self) -> Callable[[Any], Any] | None:
        """The per-text function that embeds one query (``embed_fn`` for symmetric embedders)."""
        return self.embed_fn if self._queries is None else self._queries.embed_fn

    async def embed_queries(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        """One row per query, as :meth:`embed_many`, through the query-vector cache.

        A query seen among the last ``query_cache_size`` distinct ones is not
        embedded again (the cache is this embedder's: a new index or load
        builds a new one); the same text twice in one call is embedded once.
        """
        items = list(texts)
        rows: list[NDArray[np.float64] | None] = [self._cached(text) for text in items]
        missing: dict[Any, list[int]] = {}
        for i, row in enumerate(rows):
            if row is None:
                key = items[i] if isinstance(items[i], str) else i
                missing.setdefault(key, []).append(i)
        if missing:
            firsts = [places[0] for places in missing.values()]
            side = self if self._queries is None else self._queries
            before = side.calls
            fresh = await side.embed_many([items[i] for i in firsts], self.placement)
            if side is not self:
                self.calls += side.calls - before
            for places, row in zip(missing.values(), fresh, strict=True):
                self._remember(items[places[0]], row)
                for i in places:
                    rows[i] = row
        return _stack([row for row in rows if row is not None])

    def _cached(self, text: Any) -> NDArray[np.float64] | None:
        if not isinstance(text, str):
            return None
        row = self._cache.get(text)
        if row is not None:
            self._cache.move_to_end(text)
            self.query_cache_hits += 1
        return row

    def _remember(self, text: Any, row: NDArray[np.float64]) -> None:
        if self._cache_size == 0 or not isinstance(text, str):
            return
        self._cache[text] = row
        self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @property
    def is_async(self) -> bool:
        """True when query embeddings must be awaited (a coroutine embedder is in use)."""
        if self.batch_embed_fn is not None:
            return self.batch_is_async
        return self.single_is_async

    @property
    def batches(self) -> bool:
        """True when a batch form exists, so concurrent queries can share one call."""
        return self.batch_embed_fn is not None

    async def embed_many(
        self, texts: Sequence[Any], placement: CallPolicy | None = None
    ) -> NDArray[np.float64]:
        """One row per text: one call with the batch form, else one call per text.

        ``placement`` places plain calls (None: in a worker thread).
        """
        items = list(texts)
        if self.batch_embed_fn is not None:
            self.calls += 1
            if self.batch_is_async:
                raw = await self.batch_embed_fn(items)
            else:
                # A caller giving up (or the engine closing) does not wait for
                # a hung call; its thread ends on its own (see run_in_thread).
                raw = await self._placed(self.batch_embed_fn, items, placement)
            return _as_matrix(raw, len(items))
        rows = [await self.embed_one(text, placement) for text in items]
        return _stack(rows)

    async def embed_one(
        self, text: Any, placement: CallPolicy | None = None
    ) -> NDArray[np.float64]:
        """A flat float64 vector for one text (``placement`` as for :meth:`embed_many`)."""
        if self.embed_fn is None:
            row: NDArray[np.float64] = (await self.embed_many([text], placement))[0]
            return row
        self.calls += 1
        if self.single_is_async:
            raw = await self.embed_fn(text)
        else:
            raw = await self._placed(self.embed_fn, text, placement)
        vector = _numeric(raw, "the embedder").flatten()
        if not np.isfinite(vector).all():
            raise EmbeddingError("embedder returned NaN or infinity in a vector")
        return vector

    async def _placed(
        self, fn: Callable[[Any], Any], arg: Any, placement: CallPolicy | None
    ) -> Any:
        """``fn(arg)`` on the loop or in a worker thread, as ``placement`` says; timed for it.

        The cost observed is :func:`~zerda_async.runtime.timed_call`'s: the
        wall time of a call that waited (on I/O, say), else its CPU time.
        """
        if placement is None:
            return await self._in_thread(fn, arg)
        try:
            if placement.should_offload():
                result, error, spent = await self._in_thread(timed_call, fn, arg)
            else:
                result, error, spent = timed_call(fn, arg)
        except BaseException:
            # Given up (cancelled, timed out) while in its thread: maybe hung.
            placement.observe(float("inf"))
            raise
        placement.observe(spent)
        if error is not None:
            raise error
        return result

    async def _in_thread(self, fn: Callable[..., Any], arg: Any, *more: Any) -> Any:
        if self._limiter is None:
            return await anyio.to_thread.run_sync(fn, arg, *more, abandon_on_cancel=True)
        return await run_in_thread(fn, arg, *more, limiter=self._limiter)

    async def embed_corpus(
        self,
        texts: Sequence[Any],
        progress: Callable[[int, int], None] | None = None,
    ) -> NDArray[np.float64]:
        """Embed a whole corpus: batches with the batch form, bounded concurrency otherwise."""
        items = list(texts)
        total = len(items)
        if self.batch_embed_fn is not None:
            parts = []
            for start in range(0, total, self._index_batch_size):
                parts.append(await self.embed_many(items[start : start + self._index_batch_size]))
                if progress is not None:
                    progress(min(start + self._index_batch_size, total), total)
            return np.concatenate(parts) if parts else np.zeros((0, 0))
        rows: list[NDArray[np.float64] | None] = [None] * total
        pending = iter(range(total))
        done = 0
        failures: dict[int, Exception] = {}

        async def worker() -> None:
            # A fixed pool of workers rather than one task per text keeps a
            # million-chunk corpus from creating a million tasks.
            nonlocal done
            for i in pending:
                if failures:
                    return  # stop handing out texts once one failed
                try:
                    rows[i] = await self.embed_one(items[i])
                except Exception as exc:
                    failures[i] = exc
                    return
                done += 1
                if progress is not None:
                    progress(done, total)

        async with anyio.create_task_group() as tg:
            for _ in range(min(self._concurrency, total)):
                tg.start_soon(worker)
        if failures:
            # Raised as itself, not as an exception group of the workers: the
            # failure of the lowest text index, which is the one a sequential
            # (sync) embedding loop would have raised (every lower index was
            # started, and the ones in flight were allowed to finish).
            raise failures[min(failures)]
        return _stack([row for row in rows if row is not None])


def _stack(rows: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    if not rows:
        return np.zeros((0, 0))
    dims = {row.shape[0] for row in rows}
    if len(dims) != 1:
        raise EmbeddingError(f"embedder returned vectors of different lengths: {sorted(dims)}")
    return np.stack(rows)

"""Cosine search over pre-normalised embedding rows, in float64 or (opt-in) float32.

Rows are normalised once, in float64, when they enter the index, then stored
in the index's dtype, so a query is one matrix-vector product per segment.
Cosines are rounded to 12 decimals (spec section B.1) so chunks with identical
embeddings tie exactly whatever order the floating-point sums ran in.

float64 (the default) reproduces the documented scores exactly.  float32
halves the memory and the scan time; its cosines differ from the float64 ones
by about 1e-8 (rounding cannot hide that), which can reorder near-ties.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from zerda_async.runtime import SMALL_SCAN, Steps, finish, scan_threads

from .segments import trailing_merge_count

__all__ = [
    "COSINE_DECIMALS",
    "STEP_WORK",
    "VECTOR_DTYPES",
    "VectorDType",
    "VectorIndex",
    "unit_rows",
]

COSINE_DECIMALS = 12
"""Decimals kept from every in-memory cosine similarity."""

STEP_WORK = SMALL_SCAN
"""Multiply-adds in one piece of a stepped scan (:meth:`VectorIndex.similarity_steps`).

About 1 ms of float64 scan on the 2-core machine of ``bench/bench_loop_stall.py``
(the product is bound by memory reads), so a paced request lets a waiting
timer run about every millisecond at 100,000 chunks x 64 dims instead of after
its whole 6-7 ms scan.  Being at most ``SMALL_SCAN``, a block scans on one
BLAS thread: no helper thread spins on a core another request needs.
"""

BLOCK_ALIGN = 64
"""Rows of a scan block are a multiple of this (OpenBLAS's float32 kernel sums a
row differently at an unaligned block start; 64 covers every SIMD width)."""

VectorDType = Literal["float64", "float32"]
VECTOR_DTYPES: tuple[VectorDType, ...] = ("float64", "float32")

Matrix = NDArray[np.floating[Any]]


def unit_rows(matrix: ArrayLike, dtype: VectorDType = "float64") -> Matrix:
    """``matrix`` (float64) with every non-zero row scaled to length 1, stored as ``dtype``.

    Zero rows stay zero, so they score cosine 0 like the guarded division of
    the per-row formula.
    """
    rows = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    unit: Matrix = rows / safe[:, None]
    return unit if dtype == "float64" else unit.astype(dtype)


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """One immutable vector index generation: row segments plus a live mask."""

    segments: tuple[Matrix, ...]
    dim: int
    dtype: VectorDType
    live: NDArray[np.bool_] | None = None

    @classmethod
    def from_unit_rows(cls, rows: Matrix, dtype: VectorDType = "float64") -> VectorIndex:
        """An index over already normalised rows (e.g. memory-mapped; not copied if ``dtype``)."""
        if rows.dtype != np.dtype(dtype):
            rows = rows.astype(dtype)
        dim = int(rows.shape[1]) if rows.ndim == 2 else 0
        return cls(segments=(rows,), dim=dim, dtype=dtype)

    @classmethod
    def from_matrix(cls, matrix: ArrayLike, dtype: VectorDType = "float64") -> VectorIndex:
        """An index over raw embeddings (one row per position)."""
        return cls.from_unit_rows(unit_rows(matrix, dtype), dtype)

    @property
    def n_positions(self) -> int:
        """Rows in the index, removed ones included."""
        return sum(int(segment.shape[0]) for segment in self.segments)

    def rows(self) -> Matrix:
        """All rows as one matrix (a view when there is a single segment)."""
        if len(self.segments) == 1:
            return self.segments[0]
        return np.concatenate(self.segments)

    def appended(self, rows: Matrix) -> VectorIndex:
        """A new snapshot with normalised ``rows`` appended (all live)."""
        if rows.shape[0] == 0:
            return self
        if self.n_positions == 0:
            # Nothing left (every chunk removed and compacted): any dimension starts over.
            fresh = rows.astype(self.dtype, copy=False)
            return replace(self, segments=(fresh,), dim=int(rows.shape[1]), live=None)
        if rows.shape[1] != self.dim:
            raise ValueError(
                f"embedding dimension {rows.shape[1]} does not match the index ({self.dim})"
            )
        segments = (*self.segments, rows.astype(self.dtype, copy=False))
        count = trailing_merge_count([int(s.shape[0]) for s in segments])
        if count:
            segments = (*segments[:-count], np.concatenate(segments[-count:]))
        live = self.live
        if live is not None:
            live = np.concatenate((live, np.ones(rows.shape[0], dtype=bool)))
        return replace(self, segments=segments, dim=int(rows.shape[1]), live=live)

    def with_live(self, live: NDArray[np.bool_]) -> VectorIndex:
        """The same rows with a new live mask."""
        return replace(self, live=live)

    def compacted(self, keep: NDArray[np.bool_]) -> VectorIndex:
        """Only the rows where ``keep`` is true, as one segment."""
        return replace(self, segments=(self.rows()[keep],), live=None)

    def similarities(
        self, query_vector: ArrayLike
    ) -> tuple[NDArray[np.intp] | None, NDArray[np.float64]]:
        """Rounded cosines of the live rows, in position order.

        Returns ``(positions, cosines)``; ``positions`` is None when every row
        is live (the cosines are then indexed by position directly).
        """
        return finish(self.similarity_steps(query_vector, 0))

    def similarity_steps(
        self, query_vector: ArrayLike, step_work: int = STEP_WORK
    ) -> Steps[tuple[NDArray[np.intp] | None, NDArray[np.float64]]]:
        """:meth:`similarities` in pieces of at most ``step_work`` multiply-adds (0: one piece).

        Blocks start at multiples of :data:`BLOCK_ALIGN` rows, where BLAS
        kernels start their groups of rows anyway, so every cosine is summed in
        the one-shot scan's order: the result is the same, bit for bit.
        """
        query = np.asarray(query_vector, dtype=np.float64).flatten()
        q_norm = float(np.linalg.norm(query))
        sims: NDArray[np.float64]
        if q_norm == 0:
            sims = np.zeros(self.n_positions, dtype=np.float64)
        else:
            unit_query = (query / q_norm).astype(self.dtype, copy=False)
            dim = max(1, unit_query.shape[0])
            # One-shot: the whole scan's size picks the BLAS threads, as one product would.
            whole = self.n_positions * dim if step_work <= 0 else 0
            parts: list[Matrix] = []
            for segment in self.segments:
                n = int(segment.shape[0])
                block = _block_rows(step_work, dim) if step_work > 0 else max(1, n)
                for start in range(0, n, block):
                    if parts:
                        yield  # a piece per block
                    rows = segment[start : start + block]
                    # As many BLAS threads as there are idle cores: a helper thread
                    # without a core of its own makes the product wait (runtime docs).
                    with scan_threads(whole or int(rows.shape[0]) * dim):
                        parts.append(rows @ unit_query)
            raw = parts[0] if len(parts) == 1 else np.concatenate(parts)
            exact: NDArray[np.float64] = raw.astype(np.float64, copy=False)
            sims = np.round(exact, COSINE_DECIMALS)
        if self.live is None:
            return None, sims
        positions = np.flatnonzero(self.live)
        return positions, sims[positions]


def _block_rows(step_work: int, dim: int) -> int:
    """Rows of one block of a stepped scan: about ``step_work`` multiply-adds, aligned."""
    return max(BLOCK_ALIGN, step_work // dim // BLOCK_ALIGN * BLOCK_ALIGN)

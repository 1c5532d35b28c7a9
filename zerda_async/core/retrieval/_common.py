"""Helpers shared by the retrievers: duck-typed chunk access, top-k selection, filter masks.

Selection reproduces ``sorted(range(n), key=score, reverse=True)[:limit]``
(a stable sort followed by a Python slice) without sorting every score when
only a few are wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..filter_language import Condition
from ..index.chunks import chunk_metadata, chunk_text
from ..index.metadata_index import MetadataIndex
from ..models import ScoredChunk, content_hash

__all__ = [
    "HashMemo",
    "MetadataMasks",
    "chunk_metadata",
    "chunk_text",
    "live_items",
    "slice_length",
    "stable_top",
]

# Below this size a full stable sort is as cheap as partitioning.
_FULL_SORT_MAX = 2048


class HashMemo:
    """Wraps indexed chunks in new :class:`ScoredChunk` s, hashing each chunk's text once.

    Every retrieval wraps its hits in fresh ``ScoredChunk`` objects, and the
    content hash those compute was a quarter of a query's time.  Indexed
    chunks are treated as immutable (change them with the engine's
    ``update``), so each position's hash is computed on its first hit and
    reused.  A text that cannot be hashed raises the same ``AttributeError``
    as constructing the ``ScoredChunk`` would.  Concurrent first hits from
    two threads may both compute a hash; they store the same value.
    """

    __slots__ = ("_chunks", "_hashes")

    def __init__(self, chunks: Sequence[Any]) -> None:
        self._chunks = chunks
        self._hashes: dict[int, str] = {}

    def scored(self, position: int, **scores: Any) -> ScoredChunk:
        """A new ``ScoredChunk`` for the chunk at ``position`` with ``scores`` set."""
        return ScoredChunk(
            chunk=self._chunks[position], _content_hash=self.digest(position), **scores
        )

    def digests(self, positions: list[int]) -> list[str]:
        """The content hashes of the chunks at ``positions``, in order (one call per list)."""
        get = self._hashes.get
        # A digest is never empty, so ``or`` only computes the missing ones.
        return [get(p) or self.digest(p) for p in positions]

    def digest(self, position: int) -> str:
        """The content hash of the chunk at ``position`` (computed on first use)."""
        digest = self._hashes.get(position)
        if digest is None:
            digest = self._hashes[position] = content_hash(chunk_text(self._chunks[position]))
        return digest


class MetadataMasks:
    """Restricting-filter masks over a retriever's positions (``where=`` of ``retrieve``).

    Holds the :class:`MetadataIndex` of the same positions when the caller has
    one (the async engine's corpus index shares its own); otherwise one is built
    from the chunks' metadata on the first filtered query and kept, so a
    retriever that is never filtered pays nothing.  ``live`` marks removed
    positions of a prebuilt index.  Two threads may both build it; they build
    the same index.
    """

    __slots__ = ("_chunks", "_index", "_live")

    def __init__(
        self,
        chunks: Sequence[Any],
        index: MetadataIndex | None = None,
        live: NDArray[np.bool_] | None = None,
    ) -> None:
        self._chunks = chunks
        self._index = index
        self._live = live

    def mask(self, conditions: tuple[Condition, ...]) -> NDArray[np.bool_]:
        """Per position: the chunk is live and its metadata satisfy every condition."""
        index = self._index
        if index is None:
            index = MetadataIndex.build(chunk_metadata(c) for c in self._chunks)
            if self._live is not None:
                index = index.with_live(self._live)
            self._index = index
        return index.mask(conditions)


def live_items(items: Sequence[Any], live: NDArray[np.bool_] | None) -> list[Any]:
    """``items`` at the positions ``live`` marks (all of them when ``live`` is None)."""
    if live is None:
        return list(items)
    return [items[i] for i in np.flatnonzero(live).tolist()]


def slice_length(n: int, limit: Any) -> int:
    """How many items ``seq[:limit]`` keeps from a sequence of length ``n``.

    Python slice semantics apply on purpose: ``None`` keeps everything, a
    negative limit drops items from the end, and a non-integer limit raises the
    same :class:`TypeError` a list slice would.
    """
    return len(range(n)[:limit])


def stable_top(scores: NDArray[np.float64], limit: Any) -> NDArray[np.intp]:
    """Indices of ``scores`` by descending score, ties by lower index, cut like ``[:limit]``."""
    n = int(scores.shape[0])
    m = slice_length(n, limit)
    if m == 0:
        return np.empty(0, dtype=np.intp)
    neg = -scores
    if n <= _FULL_SORT_MAX or m * 4 >= n:
        return np.argsort(neg, kind="stable")[:m]
    threshold = scores[np.argpartition(neg, m - 1)[m - 1]]
    if threshold != threshold:
        # NaN at the cut: comparisons cannot separate the candidates.
        return np.argsort(neg, kind="stable")[:m]
    above = np.flatnonzero(scores > threshold)
    above = above[np.argsort(neg[above], kind="stable")]
    # A stable full sort would place the lowest-indexed ties first.
    ties = np.flatnonzero(scores == threshold)[: m - above.shape[0]]
    return np.concatenate((above, ties))

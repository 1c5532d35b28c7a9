"""The updatable index of one corpus: chunks by position plus keyword, metadata and vector search.

A :class:`CorpusIndex` is an immutable snapshot; every update returns a new
one that shares the unchanged arrays, so readers in worker threads never see
a half-applied change.  Corpus order is defined as:

* :meth:`~CorpusIndex.appended` puts new chunks after all existing ones;
* :meth:`~CorpusIndex.without` drops every live chunk with one of the doc ids
  (the others keep their order);
* :meth:`~CorpusIndex.replaced` is ``without`` the new chunks' doc ids, then
  ``appended``.

Removed chunks keep their position (a tombstone in the live mask) until more
than :data:`COMPACT_FRACTION` of the positions are dead; the snapshot is then
compacted.  Results only depend on the live chunks in corpus order, so a
snapshot after any sequence of updates scores exactly like a fresh index built
from its live chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .analysis import DOCUMENTED
from .chunks import chunk_doc_id, chunk_metadata, keyword_text
from .keyword_index import KeywordIndex
from .metadata_index import MetadataIndex
from .vector_index import Matrix, VectorIndex

__all__ = ["COMPACT_FRACTION", "CorpusIndex"]

COMPACT_FRACTION = 0.25
"""Compact once more than this fraction of the positions hold removed chunks."""


@dataclass(frozen=True, slots=True)
class CorpusIndex:
    """One immutable generation of an updatable corpus index (see the module docstring)."""

    chunks: tuple[Any, ...]
    doc_codes: NDArray[np.int64]
    doc_table: dict[Any, int]
    live: NDArray[np.bool_] | None
    keyword: KeywordIndex
    metadata: MetadataIndex
    vectors: VectorIndex | None
    version: int = 0

    # -- construction -------------------------------------------------------------

    @classmethod
    def build(
        cls,
        chunks: Sequence[Any],
        rows: Matrix | None = None,
        *,
        progress: Callable[[int], None] | None = None,
        version: int = 0,
        analyzer: str = DOCUMENTED,
    ) -> CorpusIndex:
        """A fresh index over ``chunks``; ``rows`` are their normalised embeddings, if any.

        ``progress(done)`` reports the chunks tokenised so far; ``analyzer``
        names the keyword index's text analyser (:mod:`.analysis`).
        """
        items = tuple(chunks)
        _check_rows(rows, len(items))
        keyword = KeywordIndex.build(
            [keyword_text(c) for c in items], progress=progress, analyzer=analyzer
        )
        vectors = None if rows is None else VectorIndex.from_unit_rows(rows, _dtype(rows))
        return cls.restore(items, keyword, vectors, version)

    @classmethod
    def restore(
        cls,
        chunks: Sequence[Any],
        keyword: KeywordIndex,
        vectors: VectorIndex | None,
        version: int,
    ) -> CorpusIndex:
        """An index over stored parts (every chunk live); metadata columns are rebuilt."""
        items = tuple(chunks)
        if keyword.n_positions != len(items):
            raise ValueError(f"{keyword.n_positions} keyword positions for {len(items)} chunks")
        if vectors is not None and vectors.n_positions != len(items):
            raise ValueError(f"{vectors.n_positions} vectors for {len(items)} chunks")
        doc_table: dict[Any, int] = {}
        return cls(
            chunks=items,
            doc_codes=_codes(items, doc_table),
            doc_table=doc_table,
            live=None,
            keyword=keyword,
            metadata=MetadataIndex.build(chunk_metadata(c) for c in items),
            vectors=vectors,
            version=version,
        )

    @property
    def n_positions(self) -> int:
        """Positions in the index, removed chunks included."""
        return len(self.chunks)

    @property
    def n_live(self) -> int:
        """Chunks in the index."""
        return self.keyword.n_live

    def live_chunks(self) -> list[Any]:
        """The chunks in corpus order."""
        if self.live is None:
            return list(self.chunks)
        return [self.chunks[i] for i in np.flatnonzero(self.live).tolist()]

    def live_doc_ids(self) -> list[Any]:
        """Each live chunk's doc id, in corpus order."""
        return [chunk_doc_id(chunk) for chunk in self.live_chunks()]

    # -- updates ------------------------------------------------------------------------

    def appended(self, chunks: Sequence[Any], rows: Matrix | None = None) -> CorpusIndex:
        """A new snapshot with ``chunks`` after the existing ones.

        ``rows`` (normalised embeddings) are required exactly when the index
        has vectors.  Tokenising failures leave this snapshot untouched.
        """
        items = tuple(chunks)
        if not items:
            return self
        if (rows is None) != (self.vectors is None):
            raise ValueError("rows must be given exactly when the index holds vectors")
        _check_rows(rows, len(items))
        keyword = self.keyword.appended([keyword_text(c) for c in items])
        metadata = self.metadata.appended([chunk_metadata(c) for c in items])
        vectors = self.vectors
        if vectors is not None and rows is not None:
            vectors = vectors.appended(rows)
        live = self.live
        if live is not None:
            live = np.concatenate((live, np.ones(len(items), dtype=bool)))
        return replace(
            self,
            chunks=self.chunks + items,
            doc_codes=np.concatenate((self.doc_codes, _codes(items, self.doc_table))),
            live=live,
            keyword=keyword,
            metadata=metadata,
            vectors=vectors,
            version=self.version + 1,
        )

    def positions_of(self, doc_ids: Iterable[Any]) -> NDArray[np.intp]:
        """Live positions whose chunk has one of ``doc_ids``."""
        codes = [self.doc_table[d] for d in dict.fromkeys(doc_ids) if d in self.doc_table]
        if not codes:
            return np.empty(0, dtype=np.intp)
        hit = np.isin(self.doc_codes, np.array(codes, dtype=np.int64))
        if self.live is not None:
            hit &= self.live
        return np.flatnonzero(hit)

    def without(self, doc_ids: Iterable[Any]) -> tuple[CorpusIndex, int]:
        """A new snapshot without the chunks of ``doc_ids``, and how many chunks were removed."""
        positions = self.positions_of(doc_ids)
        return self.without_positions(positions), int(positions.shape[0])

    def without_positions(self, positions: NDArray[np.intp]) -> CorpusIndex:
        """A new snapshot with the chunks at ``positions`` (live ones) removed.

        The snapshot compacts itself (and renumbers its positions) once more
        than :data:`COMPACT_FRACTION` of them hold removed chunks: compare
        ``n_positions`` to tell.
        """
        if positions.shape[0] == 0:
            return self
        live = np.ones(self.n_positions, dtype=bool) if self.live is None else self.live.copy()
        live[positions] = False
        updated = replace(
            self,
            live=live,
            keyword=self.keyword.with_live(live),
            metadata=self.metadata.with_live(live),
            vectors=None if self.vectors is None else self.vectors.with_live(live),
            version=self.version + 1,
        )
        dead = updated.n_positions - updated.n_live
        if dead > COMPACT_FRACTION * updated.n_positions:
            updated = updated.compacted()
        return updated

    def replaced(
        self, chunks: Sequence[Any], rows: Matrix | None = None
    ) -> tuple[CorpusIndex, int]:
        """``without`` the doc ids of ``chunks``, then ``appended``; also the count removed."""
        items = tuple(chunks)
        removed_from, removed = self.without(chunk_doc_id(c) for c in items)
        updated = removed_from.appended(items, rows)
        if updated is not self:
            updated = replace(updated, version=self.version + 1)
        return updated, removed

    def compacted(self) -> CorpusIndex:
        """The same live chunks, in order, without tombstones."""
        if self.live is None:
            return self
        keep = self.live
        renumber = np.cumsum(keep, dtype=np.int64) - 1
        renumber[~keep] = -1
        n_new = int(np.count_nonzero(keep))
        positions = np.flatnonzero(keep).tolist()
        return replace(
            self,
            chunks=tuple(self.chunks[i] for i in positions),
            doc_codes=self.doc_codes[keep],
            live=None,
            keyword=self.keyword.compacted(renumber, n_new),
            metadata=self.metadata.compacted(renumber, n_new),
            vectors=None if self.vectors is None else self.vectors.compacted(keep),
        )


def _codes(chunks: Sequence[Any], table: dict[Any, int]) -> NDArray[np.int64]:
    return np.fromiter(
        (table.setdefault(chunk_doc_id(c), len(table)) for c in chunks),
        dtype=np.int64,
        count=len(chunks),
    )


def _check_rows(rows: Matrix | None, count: int) -> None:
    if rows is not None and (rows.ndim != 2 or rows.shape[0] != count):
        raise ValueError(f"expected {count} embedding rows, got an array of shape {rows.shape}")


def _dtype(rows: Matrix) -> Any:
    return "float32" if rows.dtype == np.float32 else "float64"

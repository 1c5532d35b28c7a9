"""Metadata retrieval: score chunks by the fraction of filter pairs their metadata equals.

Matching is plain ``==`` equality (operator dicts such as ``{"$gte": 3}`` only
match an equal dict).  At index time each metadata key gets a column: an
inverted map from plain scalar values (``str``, ``int``, ``float``, ``bool``,
``None``, ``bytes``) to the documents holding them, plus a short list of
documents whose value needs a real ``==`` call (any other type, or NaN).  Python
scalars that compare equal hash equal, so a dictionary lookup gives exactly the
``==`` answer for them.  Metadata is snapshotted when the chunks are indexed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import ContextEngineConfig, RetrieverConfig
from ..models import RetrievalMethod, ScoredChunk
from ._common import chunk_metadata, stable_top

__all__ = ["MetadataRetriever"]

_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), bytes})


def _is_plain(value: Any) -> bool:
    # NaN is not equal to itself, so it can never be found through a dict lookup.
    return type(value) in _PLAIN_TYPES and value == value


@dataclass(slots=True)
class _Column:
    """Where one metadata key's values live across the corpus."""

    by_value: dict[Any, list[int]] = field(default_factory=dict)
    other_docs: list[int] = field(default_factory=list)
    other_values: list[Any] = field(default_factory=list)
    all_docs: list[int] = field(default_factory=list)
    all_values: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Index:
    """One immutable index generation (swapped in whole)."""

    chunks: tuple[Any, ...]
    columns: dict[Any, _Column]
    # Documents whose metadata is not a Mapping: evaluated the slow way per query.
    opaque: tuple[tuple[int, Any], ...]


def _build_index(chunks: list[Any]) -> _Index:
    columns: dict[Any, _Column] = {}
    opaque: list[tuple[int, Any]] = []
    for doc, chunk in enumerate(chunks):
        meta = chunk_metadata(chunk)
        if not isinstance(meta, Mapping):
            opaque.append((doc, meta))
            continue
        for key, value in meta.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = _Column()
            column.all_docs.append(doc)
            column.all_values.append(value)
            if _is_plain(value):
                column.by_value.setdefault(value, []).append(doc)
            else:
                column.other_docs.append(doc)
                column.other_values.append(value)
    return _Index(chunks=tuple(chunks), columns=columns, opaque=tuple(opaque))


def _matching_docs(column: _Column, wanted: Any) -> list[int]:
    if not _is_plain(wanted):
        return [d for d, v in zip(column.all_docs, column.all_values, strict=True) if v == wanted]
    found = list(column.by_value.get(wanted, ()))
    found.extend(
        d for d, v in zip(column.other_docs, column.other_values, strict=True) if v == wanted
    )
    return found


class MetadataRetriever:
    """Ranks chunks by ``matches / len(filters)`` over their metadata (see module notes).

    ``chunks`` (if truthy) are indexed immediately.
    """

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._index: _Index = _build_index([])
        if chunks:
            self.index_chunks(chunks)

    @property
    def chunks(self) -> list[Any]:
        """The indexed chunks, in index order."""
        return list(self._index.chunks)

    def index_chunks(self, chunks: Iterable[Any]) -> None:
        """Store ``chunks`` and snapshot their metadata, replacing any previous index."""
        self._index = _build_index(list(chunks))

    def retrieve(self, filters: Mapping[str, Any] | None, top_k: int) -> list[ScoredChunk]:
        """Chunks matching at least one filter pair, best first, at most ``top_k``.

        ``metadata_score`` is the fraction of pairs matched; ties keep index
        order.  Falsy ``filters`` return ``[]``.
        """
        if not filters:
            return []
        index = self._index
        n_docs = len(index.chunks)
        matches = np.zeros(n_docs, dtype=np.int64)
        for key, wanted in filters.items():
            column = index.columns.get(key)
            if column is not None:
                # Each document holds one value per key, so these ids are unique.
                matches[_matching_docs(column, wanted)] += 1
        for doc, meta in index.opaque:
            matches[doc] += sum(1 for k, v in filters.items() if k in meta and meta[k] == v)
        hits = np.flatnonzero(matches > 0)
        scores: NDArray[np.float64] = matches[hits] / len(filters)
        order = stable_top(scores, top_k)
        picked = hits[order].tolist()
        values = scores[order].tolist()
        return [
            ScoredChunk(
                chunk=index.chunks[doc],
                metadata_score=score,
                retrieval_method=RetrievalMethod.METADATA,
                retrieval_rank=rank,
            )
            for rank, (doc, score) in enumerate(zip(picked, values, strict=True))
        ]

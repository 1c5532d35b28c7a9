"""Metadata retrieval: score chunks by the fraction of filter pairs their metadata equals.

Matching is plain ``==`` equality over the columns of
:mod:`zerda_async.core.index.metadata_index` (operator dicts such as
``{"$gte": 3}`` only match an equal dict).  Metadata is snapshotted when the
chunks are indexed; the view (chunks + index) is replaced as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import ContextEngineConfig, RetrieverConfig
from ..index.metadata_index import MetadataIndex
from ..models import RetrievalMethod, ScoredChunk
from ._common import HashMemo, chunk_metadata, live_items, stable_top

__all__ = ["MetadataRetriever"]


@dataclass(frozen=True, slots=True)
class _View:
    """The chunks (by position) and the index over them; replaced as a whole."""

    chunks: Sequence[Any]
    index: MetadataIndex
    hashes: HashMemo


class MetadataRetriever:
    """Ranks chunks by ``matches / len(filters)`` over their metadata (see module notes).

    ``chunks`` (if truthy) are indexed immediately.
    """

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._view = _View((), MetadataIndex.build([]), HashMemo(()))
        if chunks:
            self.index_chunks(chunks)

    @classmethod
    def over(
        cls, config: ContextEngineConfig, chunks: Sequence[Any], index: MetadataIndex
    ) -> MetadataRetriever:
        """A retriever serving a prebuilt ``index`` whose positions hold ``chunks``."""
        retriever = cls(config)
        retriever._view = _View(chunks, index, HashMemo(chunks))
        return retriever

    @property
    def chunks(self) -> list[Any]:
        """The indexed chunks, in index order."""
        return live_items(self._view.chunks, self._view.index.live)

    def index_chunks(self, chunks: Iterable[Any]) -> None:
        """Store ``chunks`` and snapshot their metadata, replacing any previous index."""
        items = tuple(chunks)
        self._view = _View(
            items, MetadataIndex.build(chunk_metadata(c) for c in items), HashMemo(items)
        )

    def retrieve(self, filters: Mapping[str, Any] | None, top_k: int) -> list[ScoredChunk]:
        """Chunks matching at least one filter pair, best first, at most ``top_k``.

        ``metadata_score`` is the fraction of pairs matched; ties keep index
        order.  Falsy ``filters`` return ``[]``.
        """
        if not filters:
            return []
        view = self._view
        hits, counts = view.index.matches(filters)
        scores: NDArray[np.float64] = counts / len(filters)
        order = stable_top(scores, top_k)
        picked = hits[order].tolist()
        values = scores[order].tolist()
        return [
            view.hashes.scored(
                doc,
                metadata_score=score,
                retrieval_method=RetrievalMethod.METADATA,
                retrieval_rank=rank,
            )
            for rank, (doc, score) in enumerate(zip(picked, values, strict=True))
        ]

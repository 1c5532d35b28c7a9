"""Metadata retrieval: score chunks by the fraction of filter pairs their metadata equals.

Matching is plain ``==`` equality over the columns of
:mod:`zerda_async.core.index.metadata_index` (operator dicts such as
``{"$gte": 3}`` only match an equal dict).  Metadata is snapshotted when the
chunks are indexed; the view (chunks + index) is replaced as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..index.metadata_index import MetadataIndex
from ..models import RetrievalMethod, ScoredChunk
from ._base import IndexedRetriever
from ._common import chunk_metadata, stable_top

__all__ = ["MetadataRetriever"]


class MetadataRetriever(IndexedRetriever[MetadataIndex]):
    """Ranks chunks by ``matches / len(filters)`` over their metadata (see module notes).

    ``chunks`` (if truthy) are indexed immediately; indexing snapshots their metadata.
    """

    def _build(self, items: Sequence[Any]) -> MetadataIndex:
        return MetadataIndex.build(chunk_metadata(c) for c in items)

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

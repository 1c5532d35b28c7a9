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

from ..filter_language import Condition
from ..index.metadata_index import MetadataIndex
from ..models import RetrievalMethod, ScoredChunk
from ._base import IndexedRetriever, View
from ._common import HashMemo, MetadataMasks, chunk_metadata, stable_top

__all__ = ["MetadataRetriever"]


class MetadataRetriever(IndexedRetriever[MetadataIndex]):
    """Ranks chunks by ``matches / len(filters)`` over their metadata (see module notes).

    ``chunks`` (if truthy) are indexed immediately; indexing snapshots their metadata.
    """

    accepts_where = True
    """``retrieve`` takes ``where=`` (parsed restricting filters)."""

    def _build(self, items: Sequence[Any]) -> MetadataIndex:
        return MetadataIndex.build(chunk_metadata(c) for c in items)

    def _new_view(
        self, chunks: Sequence[Any], index: MetadataIndex, metadata: MetadataIndex | None = None
    ) -> View[MetadataIndex]:
        # The index searched is the metadata index: the masks use it too.
        return View(chunks, index, HashMemo(chunks), MetadataMasks(chunks, index))

    def retrieve(
        self,
        filters: Mapping[str, Any] | None,
        top_k: int,
        *,
        where: tuple[Condition, ...] = (),
    ) -> list[ScoredChunk]:
        """Chunks matching at least one filter pair, best first, at most ``top_k``.

        ``metadata_score`` is the fraction of pairs matched; ties keep index
        order.  Falsy ``filters`` return ``[]``.  ``where`` (parsed restricting
        filters) drops the chunks that do not satisfy it before the cut.
        """
        if not filters:
            return []
        view = self._view
        hits, counts = view.index.matches(filters)
        if where:
            keep = view.index.mask(where)[hits]
            hits, counts = hits[keep], counts[keep]
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

"""The shared shape of the keyword and metadata retrievers: one immutable view, swapped whole.

Both hold the indexed chunks (by position), an index over them and a hash memo,
replace the three together on :meth:`IndexedRetriever.index_chunks`, and can
wrap a prebuilt index (:meth:`IndexedRetriever.over`).  Subclasses say how to
build their index (:meth:`IndexedRetriever._build`) and how to search it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..config import ContextEngineConfig, RetrieverConfig
from ..index.metadata_index import MetadataIndex
from ._common import HashMemo, MetadataMasks, live_items

__all__ = ["IndexedRetriever", "View"]


class _Index(Protocol):
    @property
    def live(self) -> NDArray[np.bool_] | None: ...


IndexT = TypeVar("IndexT", bound=_Index)


@dataclass(frozen=True, slots=True)
class View(Generic[IndexT]):
    """The chunks (by position) and the index over them; replaced as a whole."""

    chunks: Sequence[Any]
    index: IndexT
    hashes: HashMemo
    masks: MetadataMasks


class IndexedRetriever(ABC, Generic[IndexT]):
    """Base of the retrievers that search an index over their own chunks.

    ``chunks`` (if truthy) are indexed immediately.
    """

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._view: View[IndexT] = self._new_view((), self._build(()))
        if chunks:
            self.index_chunks(chunks)

    @classmethod
    def over(
        cls,
        config: ContextEngineConfig,
        chunks: Sequence[Any],
        index: IndexT,
        *,
        metadata: MetadataIndex | None = None,
    ) -> Self:
        """A retriever serving a prebuilt ``index`` whose positions hold ``chunks``.

        ``metadata`` (the metadata index of the same positions, optional)
        serves the restricting filters; without it one is built when first needed.
        """
        retriever = cls(config)
        retriever._view = retriever._new_view(chunks, index, metadata)
        return retriever

    def _new_view(
        self, chunks: Sequence[Any], index: IndexT, metadata: MetadataIndex | None = None
    ) -> View[IndexT]:
        masks = MetadataMasks(chunks, metadata, index.live)
        return View(chunks, index, HashMemo(chunks), masks)

    @property
    def chunks(self) -> list[Any]:
        """The indexed chunks, in index order."""
        return live_items(self._view.chunks, self._view.index.live)

    def index_chunks(self, chunks: Iterable[Any]) -> None:
        """Build a fresh index over ``chunks``, replacing any previous one.

        If building fails (a chunk without usable text or metadata), the old
        index stays in place.
        """
        items = tuple(chunks)
        self._view = self._new_view(items, self._build(items))

    @abstractmethod
    def _build(self, items: Sequence[Any]) -> IndexT:
        """The index over ``items`` (positions ``0 .. len(items) - 1``)."""
